"""Every gradient rule against PyTorch 1.13's autograd, and the autograd API's rules."""

import numpy as np
import pytest
import torch

import ordo

RNG = np.random.default_rng(7)


def positive(shape):
    return RNG.uniform(0.5, 2.0, shape)


def normal(shape):
    return RNG.standard_normal(shape)


def distinct(shape):
    """No ties: max/min and maximum get one winner, as with random data."""
    size = int(np.prod(shape))
    return RNG.permutation(size).reshape(shape).astype(np.float64) / max(size, 1) - 0.5


# name: (function of the inputs for both libraries, inputs)
CASES = {
    "neg": (lambda m, a: -a, [normal((3, 4))]),
    "abs": (lambda m, a: m.abs(a), [normal((5,))]),
    "exp": (lambda m, a: m.exp(a), [normal((2, 3))]),
    "log": (lambda m, a: m.log(a), [positive((4,))]),
    "sqrt": (lambda m, a: m.sqrt(a), [positive((2, 2))]),
    "rsqrt": (lambda m, a: m.rsqrt(a), [positive((3,))]),
    "tanh": (lambda m, a: m.tanh(a), [normal((3, 2))]),
    "sigmoid": (lambda m, a: m.sigmoid(a), [normal((4,))]),
    "relu": (lambda m, a: m.relu(a), [normal((6,))]),
    "add broadcast": (lambda m, a, b: a + b, [normal((2, 3)), normal((3,))]),
    "sub broadcast": (lambda m, a, b: a - b, [normal((2, 1)), normal((1, 4))]),
    "mul broadcast": (lambda m, a, b: a * b, [normal((2, 3, 1)), normal((3, 4))]),
    "div": (lambda m, a, b: a / b, [normal((3,)), positive((2, 3))]),
    "pow": (lambda m, a, b: a ** b, [positive((3,)), normal((3,))]),
    "scalar ops": (lambda m, a: (a * 2.5 - 1.0) / 3.0 + 2.0 * a, [normal((4,))]),
    "0-d": (lambda m, a, b: a * b + a, [normal(()), normal((3,))]),
    "size 0": (lambda m, a, b: (a * b).sum(), [normal((0, 3)), normal((3,))]),
    "maximum": (lambda m, a, b: m.maximum(a, b), [distinct((2, 3)), normal((3,))]),
    "minimum": (lambda m, a, b: m.minimum(a, b), [distinct((4,)), normal((4,))]),
    "where": (lambda m, a, b: m.where(a > 0, a, b), [normal((3, 3)), normal((3,))]),
    "sum dims": (lambda m, a: a.sum(1), [normal((2, 3, 4))]),
    "sum keepdim": (lambda m, a: a.sum((0, 2), keepdim=True), [normal((2, 3, 4))]),
    "mean": (lambda m, a: a.mean(-1), [normal((3, 5))]),
    "mean all": (lambda m, a: a.mean(), [normal((3, 5))]),
    "amax": (lambda m, a: a.amax(1) if m is torch else a.max(1), [distinct((3, 4))]),
    "amin keepdim": (lambda m, a: a.amin(0, keepdim=True) if m is torch else a.min(0, keepdim=True),
                     [distinct((3, 4))]),
    "max ties": (lambda m, a: a.amax(1) if m is torch else a.max(1), [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])]),
    "matmul 2-D": (lambda m, a, b: a @ b, [normal((3, 4)), normal((4, 2))]),
    "matmul 1-D": (lambda m, a, b: a @ b, [normal((4,)), normal((4, 2))]),
    "matmul vector": (lambda m, a, b: a @ b, [normal((3, 4)), normal((4,))]),
    "matmul dot": (lambda m, a, b: a @ b, [normal((4,)), normal((4,))]),
    "matmul batched broadcast": (lambda m, a, b: a @ b, [normal((2, 3, 4)), normal((4, 5))]),
    "matmul batch broadcast both": (lambda m, a, b: a @ b, [normal((2, 1, 3, 4)), normal((3, 4, 2))]),
    "reshape": (lambda m, a: a.reshape(6, 2) * 1.5, [normal((3, 4))]),
    "permute": (lambda m, a: a.permute(2, 0, 1) * 1.5, [normal((2, 3, 4))]),
    "transpose matmul": (lambda m, a, b: a.transpose(0, 1) @ b, [normal((4, 3)), normal((4, 2))]),
    "slice step": (lambda m, a: a[1:7:3] * 2.0, [normal((9, 2))]),
    "slice inner": (lambda m, a: a[:, 1:3], [normal((2, 5))]),
    "concat": (lambda m, a, b: m.cat([a, b, a], 1), [normal((2, 3)), normal((2, 1))]),
    "broadcast_to": (lambda m, a: a.broadcast_to((4, 2, 3)) if m is ordo else a.expand(4, 2, 3), [normal((2, 1))]),
    "cast float32": (lambda m, a: (a.astype(np.float32) if m is ordo else a.float()) * 2.0, [normal((3,))]),
    "erf": (lambda m, a: m.erf(a) if m is ordo else torch.special.erf(a), [normal((3, 2))]),
    "softmax": (lambda m, a: m.softmax(a, 1), [normal((3, 4))]),
    "log_softmax": (lambda m, a: m.log_softmax(a, -1), [normal((2, 5))]),
    "logsumexp": (lambda m, a: m.logsumexp(a, 0, keepdim=True), [normal((3, 4))]),
    "var": (lambda m, a: m.var(a, 1), [normal((3, 4))]),
    "std unbiased=False": (lambda m, a: m.std(a, 0, unbiased=False), [normal((5, 2))]),
    "clamp at the bounds": (lambda m, a: m.clamp(a, -0.5, 0.5), [np.array([-1.0, -0.5, 0.0, 0.5, 2.0])]),
    "clamp tensor bound": (lambda m, a, b: m.clamp(a, min=b), [normal((2, 3)), normal((3,))]),
    "gelu": (lambda m, a: m.nn.functional.gelu(a) if m is torch else m.gelu(a), [normal((4,))]),
    "gelu tanh": (lambda m, a: m.nn.functional.gelu(a, approximate="tanh") if m is torch else
                  m.gelu(a, approximate="tanh"), [normal((4,))]),
}


def as_ordo(values):
    return [ordo.tensor(v, requires_grad=True) for v in values]


def as_torch(values):
    return [torch.tensor(v, requires_grad=True) for v in values]


def weights(shape):
    return np.random.default_rng(3).standard_normal(shape)


@pytest.mark.parametrize("name", list(CASES))
def test_rule_matches_torch(name):
    fn, values = CASES[name]
    ours, theirs = as_ordo(values), as_torch(values)
    out, ref = fn(ordo, *ours), fn(torch, *theirs)
    # A weighted sum makes every output element's gradient distinct.
    w = weights(tuple(ref.shape))
    loss = (out * ordo.tensor(w, dtype=out.dtype)).sum()
    (ref * torch.tensor(w, dtype=ref.dtype)).sum().backward()
    loss.backward()
    ordo.mark_step()
    for mine, theirs_ in zip(ours, theirs):
        expected = theirs_.grad.numpy() if theirs_.grad is not None else np.zeros(theirs_.shape)
        tolerance = 1e-6 if out.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(mine.grad.numpy(), expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype,tolerance", [(np.float32, 1e-5), (np.float64, 1e-10)])
def test_indexing_rules_match_torch(dtype, tolerance):
    x = normal((4, 3)).astype(dtype)
    index = np.array([3, 0, 3, -1])
    gather_index = np.array([[0, 1, 2], [2, 2, 0]])
    a = ordo.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    src = normal((2, 3)).astype(dtype)
    s, ts = ordo.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = (a.index_select(0, index) ** 2).sum() + (a.gather(0, gather_index) * 3).sum() + \
        (a.scatter_add(0, gather_index, s) ** 2).sum()
    ref = (t.index_select(0, torch.tensor(index % 4)) ** 2).sum() + (t.gather(0, torch.tensor(gather_index)) * 3).sum() \
        + (t.scatter_add(0, torch.tensor(gather_index), ts) ** 2).sum()
    out.backward()
    ref.backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=tolerance, atol=tolerance)


def test_float32_mlp_matches_torch():
    x, w1, w2 = normal((8, 5)), normal((5, 6)), normal((6, 3))
    ours = [ordo.tensor(v, dtype=np.float32, requires_grad=True) for v in (w1, w2)]
    theirs = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in (w1, w2)]
    loss = ordo.tanh(ordo.relu(ordo.tensor(x, dtype=np.float32) @ ours[0]) @ ours[1]).sum()
    ref = torch.tanh(torch.relu(torch.tensor(x, dtype=torch.float32) @ theirs[0]) @ theirs[1]).sum()
    loss.backward()
    ref.backward()
    for mine, theirs_ in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), theirs_.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_backward_accumulates_and_grad_does_not():
    w = ordo.tensor([1.0, 2.0], dtype=np.float64, requires_grad=True)
    (w * w).sum().backward()
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2 + 3, 4 + 3])
    (g,) = ordo.grad((w * w * w).sum(), w)
    np.testing.assert_array_equal(g.numpy(), [3, 12])
    np.testing.assert_array_equal(w.grad.numpy(), [5, 7])  # unchanged
    w.grad = None
    assert w.grad is None


def test_grad_of_an_unused_input_is_zeros_and_of_intermediates_works():
    a = ordo.tensor([1.0, 2.0], requires_grad=True)
    b = ordo.tensor([5.0], requires_grad=True)
    h = a * 2.0
    ga, gb, gh = ordo.grad((h * h).sum(), [a, b, h])
    np.testing.assert_array_equal(ga.numpy(), [8, 16])
    np.testing.assert_array_equal(gb.numpy(), [0])
    np.testing.assert_array_equal(gh.numpy(), [4, 8])


def test_no_grad_detach_and_leaves():
    w = ordo.tensor([1.0], requires_grad=True)
    with ordo.no_grad():
        assert not ordo.is_grad_enabled()
        y = w * 2
        with ordo.enable_grad():
            z = w * 2
    assert ordo.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad and not z.is_leaf and w.is_leaf
    d = z.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), [2])

    @ordo.no_grad()
    def evaluate():
        return w * 3

    assert not evaluate().requires_grad


def test_an_update_under_no_grad_keeps_the_parameter_a_leaf():
    w = ordo.tensor([1.0, -1.0], requires_grad=True)
    (w * w).sum().backward()
    with ordo.no_grad():
        w.copy_(w - 0.5 * w.grad)
    assert w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(w.numpy(), [0, 0])


def test_gradients_work_across_mark_step():
    w = ordo.tensor([3.0], requires_grad=True)
    y = ordo.exp(w)
    ordo.mark_step()
    y.numpy()  # the forward pass ran; its records keep what backward needs
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.exp([3.0]), rtol=1e-6)


def test_a_training_step_traced_twice_compiles_once():
    w = ordo.tensor(normal((4, 3)), requires_grad=True)
    x = ordo.tensor(normal((5, 4)))

    def step(lr):
        w.grad = None
        loss = (ordo.relu(x @ w) ** 2).mean()
        loss.backward()
        with ordo.no_grad():
            w.copy_(w - ordo.tensor(lr, dtype=w.dtype) * w.grad)
        ordo.mark_step()

    step(0.1)
    before = ordo.compile_cache_stats()
    step(0.2)
    step(0.3)
    after = ordo.compile_cache_stats()
    assert after["misses"] == before["misses"]
    assert after["hits"] == before["hits"] + 2


def test_errors_are_clear():
    w = ordo.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="one element"):
        (w * 2).backward()
    with pytest.raises(ValueError, match="shape"):
        (w * 2).backward(ordo.tensor([1.0]))
    with pytest.raises(ValueError, match="does not require a gradient"):
        ordo.tensor([1.0]).sum().backward()
    with pytest.raises(ValueError, match="does not require a gradient"):
        ordo.grad((w * 2).sum(), [ordo.tensor([1.0])])
    with pytest.raises(TypeError, match="floating"):
        ordo.tensor([1, 2]).requires_grad_()
    with pytest.raises(ValueError, match="only a leaf"):
        (w * 2).requires_grad_(False)
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(ValueError, match="freed"):
        loss.backward()
    with pytest.raises(ValueError, match="shape"):
        w.grad = ordo.tensor([1.0])


def test_comparisons_and_argmax_stop_the_gradient():
    w = ordo.tensor([1.0, 3.0, 2.0], requires_grad=True)
    assert not (w > 1).requires_grad
    assert not w.argmax().requires_grad
    assert not w.astype(np.int64).requires_grad
    (w * (w > 1.5).astype(np.float32)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0, 1, 1])


def test_dropout_passes_the_gradient_through_the_kept_elements_scaled():
    ordo.manual_seed(3)
    x = ordo.tensor(np.ones(1000), requires_grad=True)
    y = ordo.dropout(x, 0.25)
    y.sum().backward()
    kept = y.numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.75, 0.0), rtol=1e-12)
    assert 0.6 < kept.mean() < 0.9
