"""Collectives are differentiable, as in JAX: each device's backward pass
issues the transposed collective, so every device gets the gradient of the
sum of every device's loss. Checked against that gradient worked out with
numpy."""

import numpy as np
import pytest

import ordo

N = 3  # elements per device and chunk


def data(device, size, salt):
    return np.random.default_rng(100 * salt + device).standard_normal(size)


def run(world, forward):
    """Each device: x (requires grad), y = forward(x), loss = sum(y * w_device); returns every device's x.grad."""
    def step(index):
        x = ordo.tensor(data(index, N * world, 1), requires_grad=True)
        y = forward(x, index)
        weights = ordo.tensor(data(index, y.shape, 2))
        (y * weights).sum().backward()
        ordo.mark_step()
        return x.grad.numpy()
    return ordo.spawn(step)


def w(device, shape):
    return data(device, shape, 2)


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_all_reduce_sum_with_scale(world):
    got = run(world, lambda x, _: ordo.all_reduce(ordo.REDUCE_SUM, x, scale=0.5))
    expected = 0.5 * sum(w(d, N * world) for d in range(world))
    for g in got:
        np.testing.assert_allclose(g, expected, rtol=1e-12)


@pytest.mark.parametrize("world", [4], indirect=True)
def test_all_reduce_in_groups_and_coalesced(world):
    groups = [[0, 2], [1, 3]]

    def forward(x, _):
        a, b = x * 1.0, x * 2.0
        ordo.all_reduce(ordo.REDUCE_SUM, [a, b], groups=groups)  # in place: a and b get the sums' history
        return a + b
    got = run(world, forward)
    for group in groups:
        expected = 3 * sum(w(d, N * world) for d in group)
        for d in group:
            np.testing.assert_allclose(got[d], expected, rtol=1e-12)


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_all_gather_transposes_to_reduce_scatter(world):
    got = run(world, lambda x, _: ordo.all_gather(x, 0))
    total = sum(w(d, N * world * world) for d in range(world))
    for j, g in enumerate(got):
        np.testing.assert_allclose(g, total[j * N * world:(j + 1) * N * world], rtol=1e-12)


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_reduce_scatter_transposes_to_all_gather(world):
    got = run(world, lambda x, _: ordo.reduce_scatter(ordo.REDUCE_SUM, x, 0.25, 0, world))
    expected = 0.25 * np.concatenate([w(d, N) for d in range(world)])
    for g in got:
        np.testing.assert_allclose(g, expected, rtol=1e-12)


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_all_to_all_transposes_to_itself(world):
    got = run(world, lambda x, _: ordo.all_to_all(x.reshape(world, N), 0, 1, world))
    for j, g in enumerate(got):
        # device d received x_j's chunk d as columns j*N:(j+1)*N of its (1, world*N) result.
        expected = np.concatenate([w(d, (1, world * N))[0, j * N:(j + 1) * N] for d in range(world)])
        np.testing.assert_allclose(g, expected, rtol=1e-12)


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_collective_permute_transposes_to_the_inverse(world):
    pairs = [(i, (i + 1) % world) for i in range(world - 1)]  # the last device sends nothing
    got = run(world, lambda x, _: ordo.collective_permute(x, pairs))
    for source, target in pairs:
        np.testing.assert_allclose(got[source], w(target, N * world), rtol=1e-12)
    np.testing.assert_array_equal(got[world - 1], np.zeros(N * world))


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_collective_broadcast_sums_to_the_root(world):
    def forward(x, _):
        y = x * 1.0
        ordo.collective_broadcast([y], root_ordinal=1)
        return y
    got = run(world, forward)
    np.testing.assert_allclose(got[1], sum(w(d, N * world) for d in range(world)), rtol=1e-12)
    for d in (0, *range(2, world)):
        np.testing.assert_array_equal(got[d], np.zeros(N * world))


@pytest.mark.parametrize("world", [2], indirect=True)
def test_a_device_whose_collective_got_no_gradient_still_runs_it(world):
    def step(index):
        x = ordo.tensor([1.0, 2.0], requires_grad=True)
        y = ordo.all_reduce(ordo.REDUCE_SUM, x)
        # Device 1's loss does not use y: its backward pass still sums with device 0's.
        loss = (y * 3.0).sum() + (x * 0.0).sum() if index == 0 else (x * 0.0).sum() + (y * 0.0).sum()
        loss.backward()
        ordo.mark_step()
        return x.grad.numpy()
    got = ordo.spawn(step)
    for g in got:
        np.testing.assert_array_equal(g, [3, 3])


@pytest.mark.parametrize("world", [2], indirect=True)
def test_a_max_all_reduce_cannot_be_differentiated(world):
    def step(index):
        x = ordo.tensor([1.0], requires_grad=True)
        y = ordo.all_reduce(ordo.REDUCE_MAX, x)
        with pytest.raises(ValueError, match=r"all_reduce\(max\) has no gradient"):
            y.sum().backward()
        ordo.mark_step()
        return True
    assert all(ordo.spawn(step))
