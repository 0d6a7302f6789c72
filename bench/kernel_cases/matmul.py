"""Matmul, float32 and float64: square 64, 256, 1024, 2048 and batched
32 x 128 x 128, against numpy (and torch) on Debian's OpenBLAS.

Where one product is short next to ordo's per-call cost (tracing, the
cache-hit compile, waiting: tens of microseconds), every library chains
`x = x @ w` in one call: w is orthogonal, so x keeps its norm (no inf, no
denormals) however long the chain.

One OpenBLAS in the process: Debian's numpy (and torch, BLAS_INFO=generic)
link libblas.so.3, which on Debian is a wrapper of the same libopenblas.so.0
that ordo links, so the thread count is one for the whole process. ordo
sets it to 1 before its first product (its gemm calls run on the threads
ordo gives them, never OpenBLAS's own), and from then on numpy's products
would run on one thread too (measured: openblas_get_num_threads() goes
from 2 to 1 in the benchmark's child after ordo's first matmul). So that
numpy and torch use the bench's N threads, their calls here set OpenBLAS's
count to N (OPENBLAS_NUM_THREADS, which the harness sets to N) and put it
back afterwards; the libraries run in turn, so ordo's calls see 1.
"""

import contextlib
import ctypes
import os

import numpy as np

from kernel_bench import Case

_openblas = ctypes.CDLL("libopenblas.so.0")  # numpy's, already loaded: the same library


@contextlib.contextmanager
def _openblas_threads():
    """OpenBLAS on the bench's N threads for a reference library's call."""
    previous = _openblas.openblas_get_num_threads()
    _openblas.openblas_set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    try:
        yield
    finally:
        _openblas.openblas_set_num_threads(previous)


def _chain(x, w, steps):
    for _ in range(steps):
        x = x @ w
    return x


def _reference(steps):
    def call(x, w):
        with _openblas_threads():
            return _chain(x, w, steps)

    return call


def _square(n, dtype):
    def inputs(rng):
        x = rng.standard_normal((n, n))
        w, _ = np.linalg.qr(rng.standard_normal((n, n)))  # orthogonal
        return x.astype(dtype), w.astype(dtype)

    return inputs


def _batched(dtype):
    def inputs(rng):
        return tuple(rng.standard_normal((32, 128, 128)).astype(dtype) for _ in range(2))

    return inputs


# How many products one call chains at each size: enough that ordo's
# per-call cost is a few percent of the call.
_STEPS = {64: 50, 256: 10, 1024: 1, 2048: 1}


def _batch_products(n_batch, n_in, n_out):
    """x [batch, in] and w [out, in] of a linear layer, and the gradient
    g [batch, out] of its output."""

    def inputs(rng):
        return tuple(rng.standard_normal(shape).astype(np.float32)
                     for shape in ((n_batch, n_in), (n_out, n_in), (n_batch, n_out)))

    return inputs


def _linear_cases():
    """The float32 products of a training step on one device's batch of 128
    (the wide MLP's first layer, #15): the forward x @ w.T and the weight's
    gradient g.T @ x, which ordo runs in its own tiles (kernels/tile_gemm.h)
    where numpy calls OpenBLAS. Information, at one thread: a product of 128
    rows is one block of ordo's (it does not split across free cores), where
    OpenBLAS splits it at N threads."""

    def forward(library_transpose):
        return lambda x, w, g: x @ library_transpose(w)

    def weight_gradient(library_transpose):
        return lambda x, w, g: library_transpose(g) @ x

    ordo_t = lambda t: t.transpose(0, 1)
    numpy_t = lambda a: a.T
    cases = []
    for name, product in (("x @ w.T 128x784 . 1024x784", forward), ("g.T @ x 128x1024 . 128x784", weight_gradient)):
        def reference(*arrays, product=product):
            with _openblas_threads():
                return product(numpy_t)(*arrays)

        cases.append(Case(f"matmul f32 {name}", _batch_products(128, 784, 1024), product(ordo_t), reference,
                          reference, numpy_threads_follow=True))
    return cases


def _cases():
    cases = []
    for dtype, name in ((np.float32, "f32"), (np.float64, "f64")):
        for n, steps in _STEPS.items():
            chained = f" x{steps}" if steps > 1 else ""
            cases.append(Case(f"matmul {name} {n}^2{chained}", _square(n, dtype),
                              lambda x, w, steps=steps: _chain(x, w, steps), _reference(steps),
                              _reference(steps), target=0.9, numpy_threads_follow=True))
        cases.append(Case(f"matmul {name} 32x128x128", _batched(dtype), lambda a, b: a @ b, _reference(1),
                          _reference(1), target=0.9, numpy_threads_follow=True))
    return cases


CASES = _cases() + _linear_cases()
