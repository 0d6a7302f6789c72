"""Reductions over 4M float32 elements and over the rows of (4096, 1024),
and a softmax over those rows composed from the ops (x - max, exp, / sum). Sum and max,
which batch norm is made of, have torch 1.13 as a second reference."""

import numpy as np

from kernel_bench import Case

N = 4 * 1024 * 1024
ROWS, COLUMNS = 4096, 1024


def vector(rng):
    return (rng.standard_normal(N).astype(np.float32),)


def matrix(rng):
    return (rng.standard_normal((ROWS, COLUMNS)).astype(np.float32),)


def ordo_softmax(x):
    e = (x - x.max(1, keepdim=True)).exp()
    return e / e.sum(1, keepdim=True)


def numpy_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def torch_softmax(x):
    e = (x - x.amax(1, keepdim=True)).exp()
    return e / e.sum(1, keepdim=True)


CASES = [
    Case("sum f32 4M", vector, lambda x: x.sum(), np.sum, lambda x: x.sum(), target=1.0, torch_target=1.0),
    Case("max f32 4M", vector, lambda x: x.max(), np.max, lambda x: x.amax(), target=1.0, torch_target=1.0),
    Case("argmax f32 4M", vector, lambda x: x.argmax(), np.argmax, lambda x: x.argmax(), target=1.0),
    Case("sum rows f32 4096x1024", matrix, lambda x: x.sum(1), lambda x: x.sum(1), lambda x: x.sum(1), target=1.0,
         torch_target=1.0),
    Case("max rows f32 4096x1024", matrix, lambda x: x.max(1), lambda x: x.max(1), lambda x: x.amax(1),
         target=1.0, torch_target=1.0),
    Case("argmax rows f32 4096x1024", matrix, lambda x: x.argmax(1), lambda x: x.argmax(1),
         lambda x: x.argmax(1), target=1.0),
    Case("softmax rows f32 4096x1024", matrix, ordo_softmax, numpy_softmax, torch_softmax, target=1.0),
]
