"""What a PyTorch training loop reaches for beyond the layers: nll_loss and
cross_entropy's options, the loss and activation modules, Module.apply and
requires_grad_, and nn.utils' gradient clipping, each against torch 1.13."""

import math

import numpy as np
import pytest
import torch

import ordo

TOLERANCE = {np.float32: 1e-5, np.float64: 1e-10}
TORCH_DTYPES = {np.float32: torch.float32, np.float64: torch.float64}

# Class indices with an ignored sample (-100, the default ignore_index) and every class used.
TARGETS = np.array([0, 3, -100, 2, 1, 3, 0])

LOSS_CASES = [
    ("nll_loss", {}),
    ("nll_loss", {"weight": True}),
    ("nll_loss", {"ignore_index": 3}),
    ("cross_entropy", {}),
    ("cross_entropy", {"weight": True}),
    ("cross_entropy", {"label_smoothing": 0.2}),
    ("cross_entropy", {"weight": True, "label_smoothing": 0.3, "ignore_index": 0}),
]


def both(values, dtype, requires_grad=False):
    return (ordo.tensor(values.astype(dtype), requires_grad=requires_grad),
            torch.tensor(values.astype(dtype), requires_grad=requires_grad))


def torch_options(options, weight):
    return {k: (weight if k == "weight" else v) for k, v in options.items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name, options", LOSS_CASES, ids=[f"{n} {sorted(o)}" for n, o in LOSS_CASES])
def test_loss_and_its_gradient_match_torch(name, options, reduction, dtype):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((7, 4))
    if name == "nll_loss":
        logits = np.log(np.exp(logits) / np.exp(logits).sum(1, keepdims=True))  # log-probabilities
    targets = np.where(TARGETS == -100, options.get("ignore_index", -100), TARGETS)
    ours_x, theirs_x = both(logits, dtype, requires_grad=True)
    ours_w, theirs_w = both(rng.uniform(0.5, 2.0, 4), dtype)
    ours_options = {k: (ours_w if k == "weight" else v) for k, v in options.items()}
    ours = getattr(ordo.nn.functional, name)(ours_x, ordo.tensor(targets), reduction=reduction, **ours_options)
    theirs = getattr(torch.nn.functional, name)(theirs_x, torch.tensor(targets), reduction=reduction,
                                                **torch_options(options, theirs_w))
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tolerance, atol=tolerance)
    seed = rng.standard_normal(theirs.shape).astype(dtype)
    ours.backward(ordo.tensor(seed))
    theirs.backward(torch.tensor(seed))
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("options", [{}, {"weight": True, "label_smoothing": 0.1}])
def test_cross_entropy_takes_class_probabilities(options):
    rng = np.random.default_rng(1)
    probabilities = rng.uniform(0, 1, (5, 3))
    probabilities /= probabilities.sum(1, keepdims=True)
    ours_x, theirs_x = both(rng.standard_normal((5, 3)), np.float64, requires_grad=True)
    ours_p, theirs_p = both(probabilities, np.float64)
    ours_w, theirs_w = both(rng.uniform(0.5, 2.0, 3), np.float64)
    ours = ordo.nn.functional.cross_entropy(ours_x, ours_p, **{k: (ours_w if k == "weight" else v)
                                                               for k, v in options.items()})
    theirs = torch.nn.functional.cross_entropy(theirs_x, theirs_p, **torch_options(options, theirs_w))
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_an_ignored_sample_whose_class_zero_is_impossible_stays_out():
    # log-probability -inf for class 0: an ignored sample reading it must not make NaN.
    logits = ordo.tensor([[-math.inf, 0.0], [0.0, 1.0]])
    loss = ordo.nn.functional.cross_entropy(logits, ordo.tensor(np.array([-100, 1])))
    expected = torch.nn.functional.cross_entropy(torch.tensor([[-math.inf, 0.0], [0.0, 1.0]]),
                                                 torch.tensor([-100, 1]))
    assert loss.item() == pytest.approx(expected.item())
    assert math.isnan(ordo.nn.functional.nll_loss(logits, ordo.tensor(np.array([-100, -100]))).item())


def test_loss_arguments_are_checked():
    logits, targets = ordo.tensor(np.zeros((3, 4))), ordo.tensor(np.array([0, 1, 2]))
    F = ordo.nn.functional
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(logits, targets, label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"weight must hold one value per class \(4,\)"):
        F.nll_loss(logits, targets, weight=ordo.tensor(np.ones(3)))
    with pytest.raises(ValueError, match="targets must be \\(3,\\)"):
        F.nll_loss(logits, ordo.tensor(np.array([0, 1])))
    with pytest.raises(ValueError, match="class probabilities must have the input's shape"):
        F.cross_entropy(logits, ordo.tensor(np.ones((3, 2))))
    with pytest.raises(ValueError, match="'mean', 'sum' or 'none'"):
        ordo.nn.CrossEntropyLoss(reduction="average")
    with pytest.raises(ordo.ExecutionError, match="index 7 is out of range"):
        F.cross_entropy(logits, ordo.tensor(np.array([0, 7, 2]))).item()


def test_loss_modules_are_the_functions_with_their_options():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 4))
    weight = rng.uniform(0.5, 2.0, 4)
    pairs = [
        (ordo.nn.CrossEntropyLoss(weight=ordo.tensor(weight), label_smoothing=0.1, reduction="sum"),
         torch.nn.CrossEntropyLoss(weight=torch.tensor(weight), label_smoothing=0.1, reduction="sum"), TARGETS),
        (ordo.nn.NLLLoss(ignore_index=2), torch.nn.NLLLoss(ignore_index=2), np.where(TARGETS < 0, 2, TARGETS)),
        (ordo.nn.MSELoss(reduction="none"), torch.nn.MSELoss(reduction="none"), rng.standard_normal((7, 4))),
    ]
    for ours, theirs, target in pairs:
        np.testing.assert_allclose(ours(ordo.tensor(x), ordo.tensor(target)).numpy(),
                                   theirs(torch.tensor(x), torch.tensor(target)).numpy(), rtol=1e-12)
    assert list(pairs[0][0].state_dict()) == list(pairs[0][1].state_dict()) == ["weight"]


def test_activation_modules_match_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    cases = [(ordo.nn.Sigmoid(), torch.nn.Sigmoid()), (ordo.nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
             (ordo.nn.LogSoftmax(dim=-1), torch.nn.LogSoftmax(dim=-1)), (ordo.nn.Identity(7), torch.nn.Identity(7)),
             (ordo.nn.Flatten(), torch.nn.Flatten()), (ordo.nn.Flatten(0, 1), torch.nn.Flatten(0, 1))]
    for ours, theirs in cases:
        np.testing.assert_allclose(ours(ordo.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-12)
        assert repr(ours) == repr(theirs)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        implicit = ordo.nn.Softmax()(ordo.tensor(x))  # dim 0 for a 3-d input, as torch's legacy rule
    np.testing.assert_allclose(implicit.numpy(), torch.softmax(torch.tensor(x), 0).numpy(), rtol=1e-12)
    with pytest.raises(IndexError, match="out of range"):
        ordo.nn.Flatten(2, 5)(ordo.tensor(x))


def test_apply_visits_children_first_and_requires_grad_freezes_a_layer():
    model = ordo.nn.Sequential(ordo.nn.Linear(3, 4), ordo.nn.ReLU(), ordo.nn.Sequential(ordo.nn.Linear(4, 2)))
    visited = []
    assert model.apply(lambda m: visited.append(type(m).__name__)) is model
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(4, 2)))
    torch_visited = []
    reference.apply(lambda m: torch_visited.append(type(m).__name__))
    assert visited == torch_visited

    def zero_biases(module):
        if isinstance(module, ordo.nn.Linear):
            with ordo.no_grad():
                module.bias.copy_(ordo.zeros(module.bias.shape))

    model.apply(zero_biases)
    assert not model[0].bias.numpy().any() and not model[2][0].bias.numpy().any()
    assert model[0].requires_grad_(False) is model[0]
    model(ordo.tensor(np.ones((5, 3), np.float32))).sum().backward()
    assert model[0].weight.grad is None and model[0].bias.grad is None
    assert model[2][0].weight.grad is not None
    model.requires_grad_()
    assert all(p.requires_grad for p in model.parameters())


def grads_of(module, values, dtype):
    params = [module.tensor(v.astype(dtype), requires_grad=True) for v in values]
    loss = sum((p * p * p).sum() for p in params)
    loss.backward()
    return params


CLIP_VALUES = [np.random.default_rng(4).standard_normal(shape) for shape in [(3, 4), (5,), (2, 2)]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, dtype):
    ours, theirs = grads_of(ordo, CLIP_VALUES, dtype), grads_of(torch, CLIP_VALUES, dtype)
    total = ordo.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(total.numpy(), expected.numpy(), rtol=tolerance)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=tolerance, atol=tolerance)


def test_a_non_finite_norm_raises_only_when_asked_and_then_changes_nothing():
    params = grads_of(ordo, CLIP_VALUES, np.float64)
    with ordo.no_grad():
        params[1].grad._assign(params[1].grad * math.inf)
    before = [p.grad.numpy() for p in params]
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        ordo.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    for p, value in zip(params, before):
        np.testing.assert_array_equal(p.grad.numpy(), value)
    assert math.isinf(ordo.nn.utils.clip_grad_norm_(params, 1.0).item())  # scaled by it anyway, as torch
    with pytest.raises(ValueError, match="norm_type must be a positive number or inf"):
        ordo.nn.utils.clip_grad_norm_(params, 1.0, norm_type=0)
    assert ordo.nn.utils.clip_grad_norm_([ordo.tensor([1.0], requires_grad=True)], 1.0).item() == 0.0


def test_clip_grad_value_matches_torch_and_a_new_bound_compiles_nothing():
    def clipped_step(bound):
        params = grads_of(ordo, CLIP_VALUES, np.float32)
        ordo.nn.utils.clip_grad_value_(params, bound)
        ordo.mark_step(wait=True)
        return params

    clipped_step(0.7)
    compiled = ordo.compile_cache_stats()["misses"]
    for bound in (0.3, 2.0):
        ours, theirs = clipped_step(bound), grads_of(torch, CLIP_VALUES, np.float32)
        torch.nn.utils.clip_grad_value_(theirs, bound)
        for p, q in zip(ours, theirs):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert ordo.compile_cache_stats()["misses"] == compiled


def test_a_new_max_norm_compiles_nothing():
    def clipped_step(max_norm):
        params = grads_of(ordo, CLIP_VALUES, np.float32)
        ordo.nn.utils.clip_grad_norm_(params, max_norm)
        ordo.mark_step(wait=True)

    clipped_step(1.0)
    compiled = ordo.compile_cache_stats()["misses"]
    clipped_step(0.25)
    clipped_step(8.0)
    assert ordo.compile_cache_stats()["misses"] == compiled
