"""Elementwise ops over 4M float32 elements, one op per call, and a fused
chain of 8 elementwise ops against numpy running the same ops one by one.

numpy has no sigmoid: its users write 1 / (1 + np.exp(-x)), and so does the
numpy column here (torch has torch.sigmoid)."""

import numpy as np

from kernel_bench import Case

N = 4 * 1024 * 1024


def vector(rng):
    return (rng.standard_normal(N).astype(np.float32),)


def positive_vector(rng):
    return (rng.random(N, dtype=np.float32) * 100 + 1e-3,)


def two_vectors(rng):
    return vector(rng) + vector(rng)


def numpy_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# The chain: x*2, +1, tanh, *3, -0.5, sigmoid, *x, +x (8 ops).
def ordo_chain(x):
    return ((x * 2.0 + 1.0).tanh() * 3.0 - 0.5).sigmoid() * x + x


def numpy_chain(x):
    return numpy_sigmoid(np.tanh(x * np.float32(2) + np.float32(1)) * np.float32(3) - np.float32(0.5)) * x + x


def torch_chain(x):
    return ((x * 2.0 + 1.0).tanh() * 3.0 - 0.5).sigmoid() * x + x


CASES = [
    Case("exp f32 4M", vector, lambda x: x.exp(), np.exp, lambda x: x.exp(), target=1.0),
    Case("tanh f32 4M", vector, lambda x: x.tanh(), np.tanh, lambda x: x.tanh(), target=1.0),
    Case("sigmoid f32 4M", vector, lambda x: x.sigmoid(), numpy_sigmoid, lambda x: x.sigmoid(), target=1.0),
    Case("log f32 4M", positive_vector, lambda x: x.log(), np.log, lambda x: x.log(), target=1.0),
    Case("add f32 4M", two_vectors, lambda x, y: x + y, np.add, lambda x, y: x + y, target=1.0),
    Case("mul scalar f32 4M", vector, lambda x: x * 2.0, lambda x: x * np.float32(2), lambda x: x * 2.0,
         target=1.0),
    Case("fused chain 8 ops f32 4M", vector, ordo_chain, numpy_chain, torch_chain, target=2.0),
]
