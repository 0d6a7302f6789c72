"""What the training tests share: an MLP (x @ W1 + b1, relu, @ W2 + b2,
mean squared error) written in ordo's ops and in torch's, its initial
weights and data, and running it for a step."""

import numpy as np
import torch

import ordo

SHAPES = ((5, 6), (6,), (6, 3), (3,))  # W1, b1, W2, b2: dim 0 of 5 and 3 pads on 2, 4 and 8 devices
BATCH = 16
TORCH_DTYPES = {np.float32: torch.float32, np.float64: torch.float64}


def initial_weights(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 0.5).astype(dtype) for shape in SHAPES]


def batch(step, dtype, rows=BATCH):
    """The step's (x, y), the same for every run."""
    rng = np.random.default_rng(1000 + step)
    return rng.standard_normal((rows, SHAPES[0][0])).astype(dtype), rng.standard_normal((rows, 3)).astype(dtype)


def ordo_params(weights):
    return [ordo.tensor(w, requires_grad=True) for w in weights]


def torch_params(weights):
    return [torch.tensor(w, requires_grad=True) for w in weights]


def loss_of(params, x, y, relu):
    w1, b1, w2, b2 = params
    out = relu(x @ w1 + b1) @ w2 + b2
    d = out - y
    return (d * d).mean()


def ordo_backward(params, x, y):
    """The loss of the batch (x, y), numpy arrays, backpropagated into params' grads."""
    loss_of(params, ordo.tensor(x), ordo.tensor(y), ordo.relu).backward()


def torch_backward(params, x, y):
    loss_of(params, torch.tensor(x), torch.tensor(y), torch.relu).backward()


def values(params):
    return [p.numpy() if isinstance(p, ordo.Tensor) else p.detach().numpy() for p in params]
