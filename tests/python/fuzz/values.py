"""Dtypes, the random data of a program's inputs, and the comparisons the
fuzzer makes: bitwise (NaN payloads included), value-exact, in ulps, and
within an error bound."""

import numpy as np

# ordo's dtypes in promotion order (README "Semantics in brief": bool <
# int32 < int64 < float32 < float64; the higher category wins, then the
# wider type, as in torch: int64 with float32 is float32).
DTYPES = ("bool", "int32", "int64", "float32", "float64")
FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
NUMERIC = INTS + FLOATS
UINT_OF = {"bool": np.uint8, "int32": np.uint32, "int64": np.uint64, "float32": np.uint32, "float64": np.uint64}
_NAMES = {np.dtype(n): n for n in DTYPES}
_UINT_OF_DTYPE = {np.dtype(n): u for n, u in UINT_OF.items()}


def name(dtype):
    """The name of a numpy dtype of ordo's (str(dtype) is slow)."""
    return _NAMES[dtype]


def promote(a, b):
    return a if DTYPES.index(a) >= DTYPES.index(b) else b


def scalar_dtype(value, tensor_dtype):
    """The dtype of a Python number next to a tensor (ordo::scalar_like): a
    bool takes the tensor's dtype, an int a non-bool tensor's, a float a
    floating tensor's; otherwise the number's own (bool, int64, float32)."""
    if isinstance(value, bool):
        return tensor_dtype
    if isinstance(value, int):
        return tensor_dtype if tensor_dtype != "bool" else "int64"
    return tensor_dtype if tensor_dtype in FLOATS else "float32"


def nan_of(dtype, bits):
    return np.array([bits], UINT_OF[dtype]).view(dtype)[0]


# NaNs of both signs, with and without a payload, and a signalling one:
# every op must treat them alike with fusion on and off.
NAN_BITS = {
    "float32": (0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFFD0BEEF, 0x7F800001),
    "float64": (0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000123, 0xFFFA00000000BEEF, 0x7FF0000000000001),
}
# The largest finite magnitudes the inputs take: float32's own range, and
# for float64 a range whose sums of a few terms cannot overflow.
HUGE = {"float32": 3.0e38, "float64": 1.0e300}
TINY = {"float32": 1.0e-40, "float64": 1.0e-310}  # subnormal


def special_floats(dtype):
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, np.inf, -np.inf, HUGE[dtype], -HUGE[dtype], TINY[dtype],
              -TINY[dtype], 88.8, -88.8, 1e-7]
    out = np.array(values, dtype)
    nans = np.array(NAN_BITS[dtype], UINT_OF[dtype]).view(dtype)
    return np.concatenate([out, nans])


def int_extremes(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, info.min + 1, info.max - 1, 0, -1, 1, 2, 31, 63], dtype)


def random_data(rng, dtype, shape, profile):
    """Random values of a dtype and shape. profile: 'plain' (moderate
    numbers, small integers for ties and exact powers), 'special' (about a
    third special values: zeros of both signs, infinities, NaNs of every
    kind, huge and subnormal numbers, integer extremes) or 'small' (small
    integers only, as collectives with a scale need)."""
    n = int(np.prod(shape, dtype=np.int64))
    nprng = np.random.default_rng(rng.getrandbits(63))
    if dtype == "bool":
        return (nprng.random(n) < 0.5).reshape(shape)
    if dtype in INTS:
        bound = 4 if profile == "small" else rng.choice((3, 10, 1000, 100000))
        out = nprng.integers(-bound, bound + 1, size=n, dtype=np.int64).astype(dtype)
        specials = int_extremes(dtype)
    else:
        if profile == "small":
            out = nprng.integers(-6, 7, size=n).astype(dtype) * np.array(0.5, dtype)
            return out.reshape(shape)
        kind = rng.random()
        if kind < 0.3:
            out = nprng.integers(-4, 5, size=n).astype(dtype)  # ties and exact arithmetic
        else:
            out = (nprng.standard_normal(n) * rng.choice((0.5, 3.0, 100.0))).astype(dtype)
        specials = special_floats(dtype)
    if profile in ("special", "nans") and n:
        mask = nprng.random(n) < 0.35
        if profile == "nans":  # NaN meets NaN, in every kind
            specials = np.array(NAN_BITS[dtype], UINT_OF[dtype]).view(dtype) if dtype in FLOATS else specials
            mask = nprng.random(n) < 0.5
        out[mask] = specials[nprng.integers(0, len(specials), size=int(mask.sum()))]
    return out.reshape(shape)


def random_float_scalar(rng, dtype):
    """A Python float for a tensor of dtype: within float32's range for a
    float32 tensor (a larger one would overflow the conversion, which is
    the scalar binding's business, not the fuzzer's)."""
    pick = rng.random()
    if pick < 0.1:
        # NaNs of both signs and with a payload: the conversion to the
        # tensor's dtype keeps the sign and the payload's high bits.
        return rng.choice((float("nan"), -float("nan"), nan_of("float64", 0xFFF8000000BEEF00).item()))
    if pick < 0.2:
        return rng.choice((float("inf"), float("-inf"), -0.0))
    if pick < 0.5:
        return float(rng.randint(-4, 4))
    if pick < 0.6:
        return rng.choice((0.5, -0.25, 1e-3))
    return round(rng.gauss(0, 3), 3)


# ---- Comparisons. ----


def contiguous(a):
    """a as a C-contiguous array of its own rank (np.ascontiguousarray
    makes a 0-d array 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy()


def bits(a):
    a = contiguous(a)
    unsigned = _UINT_OF_DTYPE.get(a.dtype)
    return a if unsigned is None else a.view(unsigned)


def bits_equal(a, b):
    """Bitwise equality, NaN payloads included; the first differing index."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, None
    diff = bits(a) != bits(b)
    if not diff.any():
        return True, None
    return False, tuple(int(i) for i in np.argwhere(diff)[0])


def exact_mismatch(actual, expected):
    """Where actual and expected differ as values: a NaN matches any NaN,
    but -0.0 does not match 0.0."""
    if expected.dtype.kind == "f":
        same = ((actual == expected) & (np.signbit(actual) == np.signbit(expected))) | (
            np.isnan(actual) & np.isnan(expected))
    else:
        same = actual == expected
    return ~same


def _ordered(a):
    """Floats as integers in their order: adjacent floats differ by one,
    -0.0 and 0.0 are both 0, and inf is one past the largest finite."""
    signed = contiguous(a).view(np.int32 if a.dtype == np.float32 else np.int64).astype(np.int64)
    magnitude = signed & np.int64(0x7FFFFFFF if a.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.signbit(a), magnitude.astype(np.uint64)


def ulp_distance(a, b):
    sa, ma = _ordered(a)
    sb, mb = _ordered(b)
    same_sign = np.where(ma > mb, ma - mb, mb - ma)
    return np.where((sa == sb) | (ma == 0) | (mb == 0), same_sign, ma + mb)


def ulps_mismatch(actual, expected, ulps):
    """More than `ulps` apart, where a result below the smallest normal
    number may also be off by `ulps` times it (a subnormal result's
    relative error is not bounded: ordo's sigmoid flushes to 0 where
    1 + exp(-x) overflows), and NaN must be NaN."""
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    with np.errstate(all="ignore"):
        far = ulp_distance(actual, expected) > ulps
        tiny = np.finfo(expected.dtype).tiny
        near_zero = np.abs(actual.astype(np.float64) - expected.astype(np.float64)) <= ulps * tiny
    return (nan_a != nan_e) | (~nan_e & far & ~near_zero)


def bound_mismatch(actual, expected, center, tolerance):
    """|actual - center| > tolerance, where expected is center rounded to
    the result's dtype: an infinite or NaN expected value must be matched
    exactly, and a NaN tolerance checks nothing (the reference cannot say)."""
    with np.errstate(all="ignore"):
        finite = np.isfinite(expected)
        checked = ~np.isnan(tolerance)
        error = np.abs(actual.astype(np.float64) - center)
        off = finite & checked & ~(error <= tolerance)
        nonfinite_off = ~finite & checked & exact_mismatch(actual, expected)
    return off | nonfinite_off


def describe(value):
    """A number with its bits, for a failure message."""
    value = np.asarray(value)
    if value.dtype.kind == "f":
        return f"{value!r} (bits {int(bits(value.reshape(1))[0]):#x})"
    return repr(value)
