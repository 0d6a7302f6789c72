"""ordo.nn against torch.nn 1.13 (same weights); ordo.save / ordo.load are in test_checkpoint.py."""

import numpy as np
import pytest
import torch

import ordo

TOLERANCE = {np.float32: 1e-5, np.float64: 1e-10}


def copy_into_torch(ours, theirs):
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})


def models(dtype):
    torch_dtype = torch.float64 if dtype == np.float64 else torch.float32
    ordo.manual_seed(1)
    ours = ordo.nn.Sequential(ordo.nn.Linear(6, 8, dtype=dtype), ordo.nn.GELU(), ordo.nn.LayerNorm(8, dtype=dtype),
                              ordo.nn.Tanh(), ordo.nn.Linear(8, 5, dtype=dtype), ordo.nn.ReLU(),
                              ordo.nn.Linear(5, 3, bias=False, dtype=dtype),
                              ordo.nn.GELU(approximate="tanh"))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Tanh(),
                                 torch.nn.Linear(8, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3, bias=False),
                                 torch.nn.GELU(approximate="tanh")).to(torch_dtype)
    copy_into_torch(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_loss_and_every_parameters_gradient_match_torch(dtype):
    ours, theirs = models(dtype)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((7, 6)).astype(dtype), rng.integers(0, 3, 7)
    out = ours(ordo.tensor(x))
    ref = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    for reduction in ("mean", "sum"):
        ours.zero_grad()
        theirs.zero_grad()
        loss = ordo.nn.functional.cross_entropy(ours(ordo.tensor(x)), ordo.tensor(y), reduction=reduction)
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y), reduction=reduction).backward()
        loss.backward()
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=TOLERANCE[dtype],
                                       atol=TOLERANCE[dtype], err_msg=name)


def test_mse_loss_embedding_and_functional_match_torch():
    ordo.manual_seed(2)
    table = ordo.nn.Embedding(10, 4, dtype=np.float64)
    ref = torch.nn.Embedding(10, 4).double()
    copy_into_torch(table, ref)
    index = np.array([[1, 3, 3], [9, 0, 1]])
    target = np.random.default_rng(1).standard_normal((2, 3, 4))
    loss = ordo.nn.functional.mse_loss(table(ordo.tensor(index)), ordo.tensor(target))
    expected = torch.nn.functional.mse_loss(ref(torch.tensor(index)), torch.tensor(target))
    loss.backward()
    expected.backward()
    np.testing.assert_allclose(float(loss), float(expected), rtol=1e-12)
    np.testing.assert_allclose(table.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_state_dict_keys_are_torchs_and_load_state_dict_checks_them():
    ours, theirs = models(np.float32)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    state = ours.state_dict()
    del state["0.bias"]
    state["extra"] = ordo.tensor([1.0])
    with pytest.raises(RuntimeError, match=r'(?s)Unexpected key\(s\) in state_dict: "extra".*Missing key\(s\) in '
                                           r'state_dict: "0.bias"'):
        ours.load_state_dict(state)
    bad = ours.state_dict()
    bad["0.weight"] = ordo.tensor(np.zeros((2, 2), np.float32))
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        ours.load_state_dict(bad)
    result = ours.load_state_dict({"0.weight": ordo.tensor(np.ones((8, 6), np.float32))}, strict=False)
    assert "0.bias" in result["missing_keys"]
    assert ours[0].weight.is_leaf and ours[0].weight.requires_grad
    np.testing.assert_array_equal(ours[0].weight.numpy(), np.ones((8, 6)))


def test_layers_initialize_as_torchs_distribution_and_seed():
    ordo.manual_seed(5)
    a = ordo.nn.Linear(100, 50)
    ordo.manual_seed(5)
    b = ordo.nn.Linear(100, 50)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    w = a.weight.numpy()
    assert w.shape == (50, 100) and np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.09
    assert not np.array_equal(w, ordo.nn.Linear(100, 50).weight.numpy())


def test_dropout_is_the_identity_in_eval_and_modules_switch_modes():
    model = ordo.nn.Sequential(ordo.nn.Linear(4, 4), ordo.nn.Dropout(0.5))
    x = ordo.tensor(np.ones((64, 4), np.float32))
    assert model.training and model[1].training
    assert (model(x).numpy() == 0).any()
    model.eval()
    assert not model[1].training
    np.testing.assert_array_equal(model(x).numpy(), model[0](x).numpy())


def test_to_casts_parameters_and_keeps_them_leaves():
    model = ordo.nn.Sequential(ordo.nn.Linear(3, 2))
    weight = model[0].weight
    model.to(np.float64)
    assert model[0].weight is weight and weight.dtype == np.float64 and weight.requires_grad and weight.is_leaf
