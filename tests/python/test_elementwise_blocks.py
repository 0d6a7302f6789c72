"""Large elementwise ops and fused chains run in blocks fixed by the shape
(kernels/elementwise_rows.h), on the free cores when there are some: the
results have the same bits whatever ORDO_KERNEL_THREADS is. Each thread
count runs in a subprocess of its own (the count is fixed when the library
loads), with a timeout. And the vector math and fused chains against numpy
over odd, empty, 1-wide and blocked shapes, with broadcast operands."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ordo
from package_dir import PYTHON_DIR


PROGRAM = r"""
import hashlib, numpy as np, ordo
rng = np.random.default_rng(7)
x = ordo.tensor(rng.standard_normal(3 * 65536 + 5).astype(np.float32))
rows = ordo.tensor(rng.standard_normal((3, 70001)).astype(np.float32))
bias = ordo.tensor(rng.standard_normal(70001).astype(np.float32))
x64 = ordo.tensor(rng.standard_normal(200001))
results = [
    x.exp(), x.tanh(), x.sigmoid(), x.abs().log(), x + x, x * 2.0,
    ((x * 2.0 + 1.0).tanh() * 3.0 - 0.5).sigmoid() * x + x,
    (rows + bias).tanh() * bias,
    x64.exp() + x64.sigmoid() * x64.tanh(),
]
ordo.mark_step(wait=True)
digest = hashlib.sha256()
for r in results:
    digest.update(r.numpy().tobytes())
print(digest.hexdigest())
"""


def digest_with(threads):
    env = dict(os.environ, ORDO_NUM_DEVICES="1", ORDO_KERNEL_THREADS=str(threads),
               PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_large_elementwise_results_do_not_depend_on_the_thread_count():
    digests = {threads: digest_with(threads) for threads in (1, 2, 3)}
    assert all(len(d) == 64 for d in digests.values()), digests  # each run printed its digest
    assert len(set(digests.values())) == 1, digests


SHAPES = [(0,), (1,), (7,), (33,), (1, 9), (17, 1), (3, 0, 2), (5, 70001)]


def numpy_sigmoid(a):
    return 1 / (1 + np.exp(-a))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_math_over_odd_empty_and_blocked_shapes(shape, dtype):
    a = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    x = ordo.tensor(a)
    cases = {
        "exp": (x.exp(), np.exp(a)), "tanh": (x.tanh(), np.tanh(a)), "sigmoid": (x.sigmoid(), numpy_sigmoid(a)),
        "log": (x.abs().log(), np.log(np.abs(a))), "sqrt": (x.abs().sqrt(), np.sqrt(np.abs(a))),
        "rsqrt": (x.abs().rsqrt(), 1 / np.sqrt(np.abs(a))), "pow": (x.abs() ** 1.5, np.abs(a) ** dtype(1.5)),
    }
    for name, (got, want) in cases.items():
        assert got.shape == want.shape and got.dtype == want.dtype, name
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(got.numpy(), want, rtol=4 * np.finfo(dtype).eps, err_msg=name)


@pytest.mark.parametrize("shape, operand", [((7,), ()), ((1, 9), (9,)), ((17, 1), (1, 5)), ((4, 33), (4, 1)),
                                            ((2, 70001), (70001,)), ((0, 3), (3,))])
def test_fused_chains_with_broadcast_operands_match_numpy(shape, operand):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(operand).astype(np.float32)
    x, y = ordo.tensor(a), ordo.tensor(b)
    got = (((x * 2.0 + y).tanh() * 3.0 - y).sigmoid() * x + y).exp()
    a32 = np.float32
    want = np.exp(numpy_sigmoid(np.tanh(a * a32(2) + b) * a32(3) - b) * a + b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
