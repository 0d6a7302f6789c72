"""ordo.optim against torch.optim (1.13): an MLP trained by both from the
same weights and data, compared after every step; state_dict round trips;
hyperparameters as graph inputs (changing lr compiles nothing)."""

import numpy as np
import pytest
import torch

import ordo
import training

STEPS = 20
TOLERANCE = {np.float64: 1e-10, np.float32: 1e-5}

CASES = [
    ("sgd", ordo.optim.SGD, torch.optim.SGD, dict(lr=0.05)),
    ("sgd momentum", ordo.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.1)),
    ("sgd nesterov weight decay", ordo.optim.SGD, torch.optim.SGD,
     dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", ordo.optim.Adam, torch.optim.Adam, dict(lr=0.01)),
    ("adam weight decay amsgrad", ordo.optim.Adam, torch.optim.Adam,
     dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("adamw", ordo.optim.AdamW, torch.optim.AdamW, dict(lr=0.01)),
    ("adamw amsgrad", ordo.optim.AdamW, torch.optim.AdamW, dict(lr=0.01, weight_decay=0.05, amsgrad=True)),
]


def assert_state_matches_torch(ordo_state, torch_state, tolerance):
    assert sorted(ordo_state["state"]) == sorted(torch_state["state"])
    for index, torch_values in torch_state["state"].items():
        mine = ordo_state["state"][index]
        assert sorted(mine) == sorted(torch_values)
        for key, value in torch_values.items():
            if key == "step":
                assert mine[key] == float(value)
            elif value is None:
                assert mine[key] is None
            else:
                np.testing.assert_allclose(mine[key].numpy(), value.numpy(), rtol=0, atol=tolerance)
    for mine, theirs in zip(ordo_state["param_groups"], torch_state["param_groups"]):
        assert mine["params"] == theirs["params"]
        assert all(mine[k] == theirs[k] for k in mine if k in theirs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, ordo_class, torch_class, options", CASES, ids=[c[0] for c in CASES])
def test_mlp_matches_torch_after_every_step(name, ordo_class, torch_class, options, dtype):
    weights = training.initial_weights(dtype)
    params, reference = training.ordo_params(weights), training.torch_params(weights)
    optimizer, torch_optimizer = ordo_class(params, **options), torch_class(reference, **options)
    for step in range(STEPS):
        if step == STEPS // 2:
            state = optimizer.state_dict()
            assert_state_matches_torch(state, torch_optimizer.state_dict(), TOLERANCE[dtype])
            optimizer = ordo_class(params, lr=123.0)  # other options, no state: all of it comes from the dict
            optimizer.load_state_dict(state)
            assert optimizer.param_groups[0]["lr"] == options["lr"]
        x, y = training.batch(step, dtype)
        training.ordo_backward(params, x, y)
        optimizer.step()
        optimizer.zero_grad()
        ordo.mark_step()
        training.torch_backward(reference, x, y)
        torch_optimizer.step()
        torch_optimizer.zero_grad()
        for mine, theirs in zip(training.values(params), training.values(reference)):
            assert mine.dtype == dtype
            np.testing.assert_allclose(mine, theirs, rtol=0, atol=TOLERANCE[dtype], err_msg=f"step {step}")


def test_param_groups_with_their_own_options_and_add_param_group():
    weights = training.initial_weights(np.float64)
    params, reference = training.ordo_params(weights), training.torch_params(weights)
    optimizer = ordo.optim.SGD([{"params": params[:2], "lr": 0.2}, {"params": params[2:3]}], lr=0.05, momentum=0.5)
    optimizer.add_param_group({"params": [params[3]], "momentum": 0.0})
    torch_optimizer = torch.optim.SGD([{"params": reference[:2], "lr": 0.2}, {"params": reference[2:3]}], lr=0.05,
                                      momentum=0.5)
    torch_optimizer.add_param_group({"params": [reference[3]], "momentum": 0.0})
    assert [g["lr"] for g in optimizer.param_groups] == [0.2, 0.05, 0.05]
    assert [g["momentum"] for g in optimizer.param_groups] == [0.5, 0.5, 0.0]
    for step in range(3):
        x, y = training.batch(step, np.float64)
        training.ordo_backward(params, x, y)
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        ordo.mark_step()
        assert all(np.all(p.grad.numpy() == 0) for p in params)
        training.torch_backward(reference, x, y)
        torch_optimizer.step()
        torch_optimizer.zero_grad()
        for mine, theirs in zip(training.values(params), training.values(reference)):
            np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12)
    assert_state_matches_torch(optimizer.state_dict(), torch_optimizer.state_dict(), 1e-12)


def test_a_torch_state_dict_loads():
    weights = training.initial_weights(np.float64)
    params, reference = training.ordo_params(weights), training.torch_params(weights)
    torch_optimizer = torch.optim.Adam(reference, lr=0.01)
    x, y = training.batch(0, np.float64)
    training.torch_backward(reference, x, y)
    torch_optimizer.step()
    optimizer = ordo.optim.Adam(params, lr=0.01)
    optimizer.load_state_dict(torch_optimizer.state_dict())
    assert_state_matches_torch(optimizer.state_dict(), torch_optimizer.state_dict(), 0.0)


def test_invalid_options_and_groups_are_refused():
    params = training.ordo_params(training.initial_weights(np.float64))
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        ordo.optim.SGD(params)
    with pytest.raises(ValueError, match="Nesterov"):
        ordo.optim.SGD(params, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        ordo.optim.Adam(params, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="more than one parameter group"):
        ordo.optim.SGD([{"params": params[:2]}, {"params": params[1:]}], lr=0.1)
    optimizer = ordo.optim.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match="number of parameter groups"):
        optimizer.load_state_dict({"state": {}, "param_groups": []})
    assert optimizer.param_groups[0]["lr"] == 0.1


@pytest.mark.parametrize("make", [lambda p: ordo.optim.SGD(p, lr=0.05, momentum=0.9),
                                  lambda p: ordo.optim.AdamW(p, lr=0.01)], ids=["sgd", "adamw"])
def test_a_step_compiles_once_and_a_new_learning_rate_compiles_nothing(make):
    params = training.ordo_params(training.initial_weights(np.float64))
    optimizer = make(params)

    def train(step):
        training.ordo_backward(params, *training.batch(step, np.float64))
        optimizer.step()
        optimizer.zero_grad()
        ordo.mark_step(wait=True)
        return ordo.compile_cache_stats()["misses"]

    train(0)  # the first step makes the state (a different graph)
    compiled = train(1)
    assert train(2) == compiled  # the same step traced again
    for step, lr in enumerate([0.3, 0.001, 0.02], start=3):
        optimizer.param_groups[0]["lr"] = lr
        assert train(step) == compiled, f"lr {lr} compiled a new graph"


@pytest.mark.parametrize("make, states", [(lambda p: ordo.optim.SGD(p, lr=0.05, momentum=0.9), 1),
                                          (lambda p: ordo.optim.AdamW(p, lr=0.01), 2)], ids=["sgd", "adamw"])
def test_a_step_writes_parameters_and_state_over_their_old_values_unless_someone_holds_one(make, states):
    rng = np.random.default_rng(5)
    params = [ordo.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
              for shape in [(300, 200), (200,)]]
    optimizer = make(params)
    x = ordo.tensor(rng.standard_normal((64, 300)).astype(np.float32))

    def train():
        optimizer.zero_grad()
        (ordo.relu(x @ params[0] + params[1]) ** 2).mean().backward()
        optimizer.step()
        ordo.mark_step(wait=True)
        return ordo.counter_value("DonatedBuffer", 0)

    train()  # makes the state
    before = train()
    steady = train() - before
    # Every parameter and every state tensor of a steady step, in place (and
    # some of the step's own values).
    assert steady >= len(params) * (1 + states)
    held = params[0].detach()
    held_values = held.numpy().copy()
    before = ordo.counter_value("DonatedBuffer", 0)
    assert train() - before == steady - 1
    np.testing.assert_array_equal(held.numpy(), held_values)
    assert not np.array_equal(params[0].numpy(), held_values)
    del held
    before = ordo.counter_value("DonatedBuffer", 0)
    assert train() - before == steady
