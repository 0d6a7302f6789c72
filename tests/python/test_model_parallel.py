"""Model parallel: a linear layer split across devices trains as the unsplit
layer does, its collectives differentiated (all_gather <-> reduce_scatter)."""

import numpy as np
import pytest

import ordo

BATCH, IN, OUT, STEPS, LR = 8, 6, 4, 20, 0.05


def problem():
    rng = np.random.default_rng(5)
    return (rng.standard_normal((BATCH, IN)), rng.standard_normal((IN, OUT)) * 0.3,
            rng.standard_normal((BATCH, OUT)))


def unsplit_training():
    """One device, the whole layer: its weights after each step."""
    x, w0, target = problem()
    w = ordo.tensor(w0, requires_grad=True)
    x, target = ordo.tensor(x), ordo.tensor(target)
    history = []
    for _ in range(STEPS):
        w.grad = None
        ((ordo.tanh(x @ w) - target) ** 2).mean().backward()
        with ordo.no_grad():
            w.copy_(w - LR * w.grad)
        ordo.mark_step()
        history.append(w.numpy())
    return history


def train_shard(w, loss_of, gather_dim):
    """STEPS of SGD on this device's shard w; the whole weights (gathered) after each."""
    history = []
    for _ in range(STEPS):
        loss_of(w).backward()
        with ordo.no_grad():
            w.copy_(w - LR * w.grad)
        w.grad = None
        ordo.mark_step()
        history.append(ordo.all_gather(w, gather_dim))
    ordo.mark_step()
    return [h.numpy() for h in history]


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_column_parallel_layer_with_all_gather(world):
    """Each device holds OUT / world columns; all_gather assembles the output on every
    device, each device's loss is its 1 / world share of the same loss, and the
    gradient of the all_gather (a sum reduce_scatter) adds the shares back."""
    expected = unsplit_training()
    x_host, w_host, target_host = problem()
    if OUT % world:
        pytest.skip("the columns do not split evenly")
    cols = OUT // world

    def train(index):
        w = ordo.tensor(w_host[:, index * cols:(index + 1) * cols], requires_grad=True)
        x, target = ordo.tensor(x_host), ordo.tensor(target_host)
        return train_shard(w, lambda w: ((ordo.tanh(ordo.all_gather(x @ w, 1)) - target) ** 2).mean() / world, 1)

    for device_history in ordo.spawn(train):
        for got, want in zip(device_history, expected):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("world", [2], indirect=True)
def test_row_parallel_layer_with_reduce_scatter(world):
    """Each device holds IN / world rows of the weights and its slice of the input
    features; reduce_scatter sums the partial products and leaves each device
    its share of the batch, whose loss is its share of the whole."""
    x_host, w_host, target_host = problem()
    rows, batch = IN // world, BATCH // world
    expected = unsplit_training()

    def train(index):
        w = ordo.tensor(w_host[index * rows:(index + 1) * rows], requires_grad=True)
        x = ordo.tensor(x_host[:, index * rows:(index + 1) * rows])
        target = ordo.tensor(target_host[index * batch:(index + 1) * batch])

        def loss_of(w):
            y = ordo.reduce_scatter(ordo.REDUCE_SUM, x @ w, 1.0, 0, world)
            return ((ordo.tanh(y) - target) ** 2).sum() / (BATCH * OUT)
        return train_shard(w, loss_of, 0)

    for device_history in ordo.spawn(train):
        for got, want in zip(device_history, expected):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
