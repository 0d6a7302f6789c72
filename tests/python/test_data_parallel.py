"""Data-parallel training as torch_xla's: every device takes its part of the
batch, ordo.optimizer_step averages the gradients and steps. After every step
every device holds bitwise the same parameters, equal to one device trained
on the whole batch."""

import numpy as np
import pytest

import ordo
import training

STEPS = 8
OPTIMIZERS = {
    "sgd momentum": lambda p: ordo.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
    "adamw": lambda p: ordo.optim.AdamW(p, lr=0.01),
}


def train_whole_batch(make_optimizer):
    """Parameters after each step, one device, the whole batch."""
    params = training.ordo_params(training.initial_weights(np.float64))
    optimizer, history = make_optimizer(params), []
    for step in range(STEPS):
        training.ordo_backward(params, *training.batch(step, np.float64))
        optimizer.step()
        optimizer.zero_grad()
        ordo.mark_step()
        history.append(training.values(params))
    return history


def part(array, index, world):
    rows = len(array) // world
    return array[index * rows:(index + 1) * rows]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_device_matches_one_device_on_the_whole_batch(world, name):
    expected = train_whole_batch(OPTIMIZERS[name])

    def run(index):
        # Different starting weights everywhere: broadcast_master_param makes them ordinal 0's.
        params = training.ordo_params(training.initial_weights(np.float64, seed=0 if index == 0 else 7 + index))
        ordo.broadcast_master_param(params)
        optimizer, history = OPTIMIZERS[name](params), []
        for step in range(STEPS):
            x, y = training.batch(step, np.float64)
            training.ordo_backward(params, part(x, index, world), part(y, index, world))
            ordo.optimizer_step(optimizer, barrier=True)
            optimizer.zero_grad()
            history.append(training.values(params))
        return history

    histories = ordo.spawn(run)
    for step in range(STEPS):
        for index, history in enumerate(histories):
            for mine, first, single in zip(history[step], histories[0][step], expected[step]):
                np.testing.assert_array_equal(mine, first, err_msg=f"device {index}, step {step}")
                np.testing.assert_allclose(mine, single, rtol=0, atol=1e-10, err_msg=f"step {step}")


def test_reduce_gradients_averages_within_groups_and_skips_missing_grads(world):
    import spmd
    groups = spmd.even_odd_groups(world)

    def run(index):
        used, unused = ordo.tensor([1.0, 2.0], requires_grad=True), ordo.tensor([3.0], requires_grad=True)
        optimizer = ordo.optim.SGD([used, unused], lr=1.0)
        (used * float(index + 1)).sum().backward()
        assert ordo.reduce_gradients(optimizer, groups=groups) is None
        assert unused.grad is None
        return used.grad.numpy()

    for index, grad in enumerate(ordo.spawn(run)):
        group = spmd.group_of(index, groups)
        np.testing.assert_allclose(grad, [np.mean([i + 1 for i in group])] * 2, rtol=1e-15)


def test_the_list_form_of_reduce_gradients_still_returns_the_list(world):
    def run(index):
        grads = [ordo.tensor([float(index)]), ordo.tensor([[1.0, float(index)]])]
        returned = ordo.reduce_gradients(grads)
        assert returned == grads and returned[0] is grads[0]
        return [g.numpy() for g in grads]

    mean = (world - 1) / 2
    for first, second in ordo.spawn(run):
        np.testing.assert_allclose(first, [mean])
        np.testing.assert_allclose(second, [[1.0, mean]])
