"""The training ops against torch 1.13 (float32 and float64; 0-d and size-0
shapes; negative dims; infinities), erf's accuracy, the seeded random op
and dropout: the same seed gives the same bits whatever the thread count,
a new seed each step recompiles nothing."""

import math
import warnings

import numpy as np
import pytest
import torch

import ordo
from kernel_threads import digests_with_kernel_threads

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}


def data(shape, dtype, seed=0, scale=3.0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, dtype=dtype)


def expect_torch(got, want, dtype):
    want = want.numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, equal_nan=True, **TOLERANCE[dtype])


SHAPES_AND_DIMS = [((), 0), ((), -1), ((5,), 0), ((4, 7), -1), ((4, 7), 0), ((2, 3, 4), 1), ((2, 3, 4), -3),
                   ((3, 0), 0), ((0, 3), 1), ((3, 0), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SHAPES_AND_DIMS)
def test_softmax_family_matches_torch(shape, dim, dtype):
    x = data(shape, dtype)
    t = torch.from_numpy(x)
    o = ordo.tensor(x)
    expect_torch(ordo.softmax(o, dim).numpy(), torch.softmax(t, dim), dtype)
    expect_torch(o.log_softmax(dim).numpy(), torch.log_softmax(t, dim), dtype)
    for keepdim in (False, True):
        expect_torch(ordo.logsumexp(o, dim, keepdim=keepdim).numpy(), torch.logsumexp(t, dim, keepdim=keepdim), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_family_is_stable_at_the_extremes_as_torch(dtype):
    inf = np.inf
    big = 3e38 if dtype == np.float32 else 1e308
    x = np.array([[1000, 1001, 999, -5], [-inf, -inf, -inf, -inf], [-inf, 0, 2, -inf], [big, big, -big, 0],
                  [inf, 1, 2, 3], [inf, -inf, 0, 1]], dtype=dtype)
    t, o = torch.from_numpy(x), ordo.tensor(x)
    expect_torch(o.softmax(-1).numpy(), torch.softmax(t, -1), dtype)
    expect_torch(o.log_softmax(1).numpy(), torch.log_softmax(t, 1), dtype)
    expect_torch(o.logsumexp(-1).numpy(), torch.logsumexp(t, -1), dtype)
    assert np.isnan(o.softmax(-1).numpy()[1]).all()  # all -inf: nan, as torch
    assert o.logsumexp(-1).numpy()[1] == -inf
    expect_torch(ordo.logsumexp(o, (0, 1)).numpy(), torch.logsumexp(t, (0, 1)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((), None), ((6,), None), ((6,), 0), ((4, 5), 1), ((4, 5), -2),
                                       ((2, 3, 4), (0, 2)), ((2, 3, 4), None), ((3, 0), 1), ((3, 0), 0),
                                       ((1, 4), 0)])
def test_var_and_std_match_torch(shape, dim, dtype):
    x = data(shape, dtype, seed=1)
    t, o = torch.from_numpy(x), ordo.tensor(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of degrees of freedom <= 0
        for keepdim in (False, True):
            for unbiased in (True, False):
                if dim is None and not keepdim:
                    expect_torch(o.var(unbiased=unbiased).numpy(), torch.var(t, unbiased=unbiased), dtype)
                    expect_torch(ordo.std(o, unbiased).numpy(), torch.std(t, unbiased), dtype)
                if dim is not None:
                    expect_torch(ordo.var(o, dim, unbiased, keepdim).numpy(), torch.var(t, dim, unbiased, keepdim), dtype)
                    expect_torch(o.std(dim, unbiased, keepdim).numpy(), torch.std(t, dim, unbiased, keepdim), dtype)
            for correction in (0, 1, 2):
                expect_torch(ordo.var(o, dim, correction=correction, keepdim=keepdim).numpy(),
                             torch.var(t, dim, correction=correction, keepdim=keepdim), dtype)
                expect_torch(o.std(dim=dim, correction=correction, keepdim=keepdim).numpy(),
                             torch.std(t, dim=dim, correction=correction, keepdim=keepdim), dtype)
    with pytest.raises(TypeError):
        ordo.var(o, unbiased=True, correction=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_matches_torch_with_scalar_tensor_and_broadcast_bounds(dtype):
    x = np.array([[-2, 0, 1, 3, 5, np.nan], [1, 1, 2, 2, -np.inf, np.inf]], dtype=dtype)
    t, o = torch.from_numpy(x), ordo.tensor(x)
    for low, high in [(0.0, 3.0), (1, None), (None, 2.0), (2.0, 1.0)]:
        expect_torch(ordo.clamp(o, low, high).numpy(), torch.clamp(t, low, high), dtype)
        expect_torch(o.clamp(min=low, max=high).numpy(), t.clamp(min=low, max=high), dtype)
    row = np.array([0, 1, 2, 2, 3, 1], dtype=dtype)
    column = np.array([[1], [4]], dtype=dtype)
    for low, high in [(row, None), (None, column), (row, column + 1), (row, row), (np.array(1, dtype), column)]:
        tl = None if low is None else torch.from_numpy(low)
        th = None if high is None else torch.from_numpy(high)
        ol = None if low is None else ordo.tensor(low)
        oh = None if high is None else ordo.tensor(high)
        expect_torch(ordo.clamp(o, ol, oh).numpy(), torch.clamp(t, tl, th), dtype)
    expect_torch(ordo.clamp(ordo.tensor(np.array(x[0, 0])), 0.0, 1.0).numpy(), torch.clamp(t[0, 0], 0.0, 1.0), dtype)
    empty = np.zeros((0, 3), dtype)
    expect_torch(ordo.clamp(ordo.tensor(empty), ordo.tensor(row[:3])).numpy(),
                 torch.clamp(torch.from_numpy(empty), torch.from_numpy(row[:3])), dtype)
    with pytest.raises(ValueError):
        ordo.clamp(o)
    assert ordo.clip is ordo.clamp


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate, dtype):
    x = np.concatenate([data((1000,), dtype, seed=2), np.array([0, -0.0, 8, -8, 30, -30], dtype)]).astype(dtype)
    got = ordo.gelu(ordo.tensor(x), approximate=approximate).numpy()
    expect_torch(got, torch.nn.functional.gelu(torch.from_numpy(x), approximate=approximate), dtype)
    assert ordo.gelu(ordo.tensor(np.zeros((2, 0), dtype))).shape == (2, 0)
    with pytest.raises(ValueError):
        ordo.gelu(ordo.tensor(x), approximate="fast")


def ulps(got, want):
    """Distance in ulps of each element, by the ordered integer of its bits."""
    bits = {np.float32: np.int32, np.float64: np.int64}[got.dtype.type]

    def ordered(a):
        i = a.view(bits).astype(np.int64)
        return np.where(i < 0, np.iinfo(bits).min - i, i)
    return np.abs(ordered(got) - ordered(want))


@pytest.mark.parametrize("dtype", DTYPES)
def test_erf_is_within_two_ulp_of_the_c_library_and_exact_at_special_values(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-7, 7, 200001), rng.standard_normal(50000) * 2,
                        np.geomspace(1e-30, 1, 10000), -np.geomspace(1e-30, 1, 10000)]).astype(dtype)
    want = np.array([math.erf(float(v)) for v in x]).astype(dtype)  # float64 C erf, rounded once for float32
    got = ordo.erf(ordo.tensor(x)).numpy()
    assert ulps(got, want).max() <= 2
    got = ordo.tensor(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)).erf().numpy()
    assert np.array_equal(got[:4], [0, 0, 1, -1]) and np.isnan(got[4])
    assert not np.signbit(got[0]) and np.signbit(got[1])
    np.testing.assert_array_equal(ordo.erf(ordo.tensor(np.arange(3))).numpy(), torch.erf(torch.arange(3.0)).numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_erf_fuses_with_other_elementwise_ops_to_the_same_bits(dtype):
    x = data((64, 300), dtype, seed=4)
    results = []
    for fuse in (True, False):
        ordo._C.set_schedule(0, "default", 0, fuse)
        o = ordo.tensor(x)
        y = ordo.exp(-(ordo.erf(o * 0.5) + 1.0) * o)
        ordo.mark_step()
        results.append(y.numpy())
    ordo._C.set_schedule(0, "default", 0, True)
    assert np.array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], torch.exp(-(torch.erf(torch.from_numpy(x) * 0.5) + 1.0) *
                                                     torch.from_numpy(x)).numpy(), **TOLERANCE[dtype])


def seed(value, device=None):
    return ordo.tensor(np.int64(value), device=device)


def test_random_uniform_same_seed_same_bits_different_seed_different():
    a = ordo._C.random_uniform([1000], seed(5), 0.0, 1.0, np.float32).numpy()
    b = ordo._C.random_uniform([1000], seed(5), 0.0, 1.0, np.float32).numpy()
    c = ordo._C.random_uniform([1000], seed(6), 0.0, 1.0, np.float32).numpy()
    assert np.array_equal(a, b) and (a != c).mean() > 0.99
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    assert np.array_equal(a, ordo.rand([1000], seed=5).numpy())  # the host generator's numbers


THREADS_SCRIPT = """
import sys, hashlib, numpy as np, ordo
ordo.init(1)
ordo.manual_seed(11)
u = ordo.rand_like(ordo.zeros([3, 200000], dtype=np.float64)).numpy()
d = ordo.dropout(ordo.ones([700000]), 0.3).numpy()
print(hashlib.sha256(u.tobytes() + d.tobytes()).hexdigest())
"""


def test_random_bits_do_not_depend_on_the_kernel_thread_count():
    first, second = digests_with_kernel_threads(THREADS_SCRIPT)
    assert first == second


def test_a_new_seed_each_step_recompiles_nothing():
    ordo.manual_seed(0)
    x = ordo.ones([4096])
    ordo.mark_step()
    ordo._C.reset_compile_cache()
    masks = []
    for _ in range(5):
        y = ordo.dropout(x, 0.5)
        ordo.mark_step()
        masks.append(y.numpy())
    stats = ordo.compile_cache_stats()
    assert stats["misses"] == 1 and stats["hits"] == 4
    assert all(not np.array_equal(masks[0], m) for m in masks[1:])


def test_manual_seed_repeats_draws_and_devices_draw_differently():
    def draws(device):
        ordo.manual_seed(123, device=device)
        x = ordo.ones([5000], device=device)
        return ordo.dropout(x, 0.5).numpy(), ordo.dropout(x, 0.5).numpy()
    first, second = draws(0), draws(0)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])
    other = draws(1)
    assert not np.array_equal(first[0], other[0])
    ordo.manual_seed_all(123)
    assert np.array_equal(ordo.dropout(ordo.ones([5000]), 0.5).numpy(), first[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_keeps_the_mean_and_zeroes_exactly(dtype):
    ordo.manual_seed(7)
    x = data((200000,), dtype, seed=5) + 4
    p = 0.3
    y = ordo.dropout(ordo.tensor(x), p).numpy()
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.005
    scale = (np.ones(1, dtype) / dtype(1 - p))[0]  # torch's rounding: the mask over (1 - p), then the product
    np.testing.assert_array_equal(y[kept], x[kept] * scale)
    assert abs(y.mean() - x.mean()) < 0.05
    o = ordo.tensor(x)
    assert ordo.dropout(o, 0.0) is o and ordo.dropout(o, 0.9, training=False) is o
    assert not ordo.dropout(o, 1.0).numpy().any()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            ordo.dropout(o, bad)
    assert ordo.dropout(ordo.tensor(np.zeros((0, 2), dtype)), 0.5).shape == (0, 2)
    assert ordo.dropout(ordo.tensor(dtype(2.0)), 0.5).shape == ()


def test_rand_like_draws_on_the_inputs_device_in_its_dtype():
    x = ordo.zeros([3, 4], dtype=np.float64, device=2)
    u = ordo.rand_like(x)
    assert u.shape == (3, 4) and u.dtype == np.float64 and u.device == x.device
    assert ordo.rand_like(x, dtype=np.float32).dtype == np.float32
