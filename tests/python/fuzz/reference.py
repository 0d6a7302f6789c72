"""What each op must compute, in numpy, from the values ordo gave its
operands (so that errors do not build up along a program), and how closely.

Checks, from strictest: "bits" (copies: every bit, NaN payloads too),
"exact" (correctly rounded or integer ops: equal values, -0.0 is not 0.0,
any NaN matches any NaN, since IEEE leaves which NaN a computation returns
open), ("ulps", n) (libm functions, against a long double reference) and
("bound", center, tolerance) (sums and products of many terms, whose
rounding depends on the order of additions: Higham's bounds).

Where ordo's documented semantics differ from numpy's, the reference is
ordo's (README "Semantics in brief" and the kernels' comments):
- promotion is torch's (int64 with float32 is float32); a Python number
  takes the tensor's dtype when its kind fits (values.scalar_dtype);
- integer overflow wraps (so does numpy's, silently);
- integer pow with a negative exponent has no value: a Python int
  exponent raises ValueError when traced, one inside an integer tensor
  fails the graph (README; the generators know which, and make only
  non-negative exponents for the values they check);
- integer division promotes to float32 (0/0 is NaN, 1/0 inf);
- float to integer casts truncate, saturate at the integer range and map
  NaN to 0 (numpy's result is undefined there); to bool is != 0;
- maximum/minimum and max/min reductions return a NaN operand if there is
  one, and keep the first of equal values (so max(-0.0, 0.0) is -0.0);
- float sums and means add 32 lanes over chunks of 4096 elements, in
  float32 for float32 (as torch and numpy do) and in double for float64,
  then the chunks in double, and round once; the mean of nothing is NaN;
- sigmoid is 1 / (1 + exp(-x)): it is 0 where exp(-x) overflows, so
  results below the smallest normal number are checked absolutely;
- collectives fold the group's inputs in rank order, then scale in double;
- pow(1, y) and pow(x, 0) are NaN when the other operand is a signalling
  NaN (IEEE 754 and glibc; long double, the reference, quiets it).
"""

import math

import numpy as np

from . import values as V

LONG = np.longdouble
# Error of each libm-based function in ulps of its result: glibc's figures
# (its libm-test-ulps lists up to 2 for tanh), plus rounding of the
# composite ones.
ULPS = {"exp": 2, "log": 2, "tanh": 3, "rsqrt": 2, "sigmoid": 4, "erf": 3, "pow": 2, "randn": 2}


def cast(x, dtype):
    """ordo's cast (kernels/elementwise.cc: convert)."""
    x = np.asarray(x)
    source = V.name(x.dtype)
    if source == dtype:
        return x
    if dtype == "bool":
        return x != 0
    if dtype in V.INTS and source in V.FLOATS:
        info = np.iinfo(dtype)
        limit = -float(info.min)
        out = np.zeros(x.shape, dtype)
        with np.errstate(invalid="ignore"):
            v = x.astype(np.float64)
            inside = (v > -limit) & (v < limit)
            out[inside] = np.trunc(v[inside]).astype(dtype)
            out[v <= -limit] = info.min
            out[v >= limit] = info.max
        return out
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def isnan(x):
    return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def is_signalling(x):
    quiet_bit = {np.float32: np.uint32(1 << 22), np.float64: np.uint64(1 << 51)}[x.dtype.type]
    return np.isnan(x) & ((V.bits(x) & quiet_bit) == 0)


def long_double(fn, x, dtype):
    with np.errstate(all="ignore"):
        return fn(x.astype(LONG)).astype(dtype)


def unary(fn, x, out):
    if fn == "logical_not":
        return ~cast(x, "bool"), "exact"
    x = cast(x, out)
    with np.errstate(all="ignore"):
        if fn == "neg":
            return np.negative(x), "exact"
        if fn == "abs":
            return np.abs(x), "exact"
        if fn == "relu":
            return np.where(x < 0, np.zeros((), out), x), "exact"
        if fn == "sqrt":
            return np.sqrt(x), "exact"
    formula = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "rsqrt": lambda v: 1 / np.sqrt(v),
               "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
               # C's double erf (numpy has none): within 1 ulp of float64, and rounded once to float32
               "erf": np.vectorize(math.erf, otypes=[np.float64])}[fn]
    return long_double(formula, x, out), ("ulps", ULPS[fn])


def integer_pow(base, exponent):
    """Repeated squaring in the unsigned type (wrapping like numpy). A
    negative exponent fails the graph, so no checked value has one."""
    base, exponent = np.broadcast_arrays(base, exponent)
    assert not (exponent < 0).any(), "a negative integer exponent has no value: its graph fails"
    unsigned = np.uint32 if base.dtype == np.int32 else np.uint64
    result = np.ones(base.shape, unsigned)
    factor = base.astype(unsigned)
    e = np.maximum(exponent.astype(np.int64), 0)
    with np.errstate(over="ignore"):
        while (e > 0).any():
            result = np.where((e & 1) == 1, result * factor, result)
            factor = factor * factor
            e = e >> 1
    return result.astype(base.dtype)


def extreme(a, b, better):
    """maximum (better = np.greater) or minimum: a NaN operand wins, ties
    keep a (core/arithmetic.h: Extreme)."""
    return np.where(isnan(a), a, np.where(isnan(b), b, np.where(better(b, a), b, a)))


def binary(fn, a, b, operand, out):
    if fn in ("logical_and", "logical_or"):
        return getattr(np, fn)(cast(a, "bool"), cast(b, "bool")), "exact"
    a, b = cast(a, operand), cast(b, operand)
    with np.errstate(all="ignore"):
        if fn in ("add", "sub", "mul"):
            return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[fn](a, b), "exact"
        if fn == "div":
            return np.true_divide(cast(a, out), cast(b, out)), "exact"
        if fn == "pow":
            if operand in V.INTS:
                return integer_pow(a, b), "exact"
            # pow(1, y) and pow(x, 0) are 1 even for a quiet NaN, not for a
            # signalling one (IEEE 754, glibc); long double has only quiet ones.
            signalling = is_signalling(a) | is_signalling(b)
            result = np.power(a.astype(LONG), b.astype(LONG)).astype(out)
            # Zeros, infinities and exponents past 2^62 (whose parity the
            # x87 powl gets wrong: powl(-inf, -2^63) is inf) give exact
            # results, which pow in double has right.
            plain = np.isfinite(a) & np.isfinite(b) & (a != 0) & (np.abs(b) < 2.0**62)
            result = np.where(plain, result, np.power(a.astype(np.float64), b.astype(np.float64)).astype(out))
            return np.where(signalling, np.array(np.nan, out), result), ("ulps", ULPS["pow"])
        if fn in ("maximum", "minimum"):
            return extreme(a, b, np.greater if fn == "maximum" else np.less), "exact"
        return getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                            "ge": "greater_equal"}[fn])(a, b), "exact"


def normalized_axes(dims, rank):
    if dims is None or dims == []:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else dims
    return sorted(d % rank for d in dims)


def reduced_last(x, axes):
    """x with the reduced axes moved last and merged into one."""
    kept = [d for d in range(x.ndim) if d not in axes]
    count = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    return np.transpose(x, kept + axes).reshape(tuple(x.shape[d] for d in kept) + (count,)), count


def reduction(fn, x, dims, keepdim, out, shape):
    axes = normalized_axes(dims, x.ndim)
    if fn == "mean":
        x = cast(x, out)
    flat, count = reduced_last(x, axes)
    if fn in ("max", "min", "argmax"):
        # The first NaN, else the first of the greatest (least) values.
        position = (np.argmin if fn == "min" else np.argmax)(flat, axis=-1)
        if fn == "argmax":
            return position.astype(np.int64).reshape(shape), "exact"
        return np.take_along_axis(flat, position[..., None], -1)[..., 0].reshape(shape), "bits"
    if out in V.INTS:
        with np.errstate(over="ignore"):
            return np.sum(flat.astype(np.int64), axis=-1).reshape(shape), "exact"
    # Accumulated in double in some order: each of the count - 1 additions
    # errs by at most half an ulp of double of the running sum. A float32
    # input's lanes add in float32 first: a lane's result has passed through
    # at most 4096 / 32 additions and the 5 levels of the lanes' tree.
    flat64 = flat.astype(np.float64)
    with np.errstate(all="ignore"):
        center = np.sum(flat64, axis=-1)
        magnitude = np.sum(np.abs(flat64), axis=-1)
        tolerance = count * np.finfo(np.float64).eps * magnitude
        if flat.dtype != np.float64 and count >= 32:
            tolerance += (min(count, 4096) // 32 + 5) * np.finfo(np.float32).eps * magnitude
        if fn == "mean":
            center, tolerance = center / count, tolerance / max(count, 1)
        expected = center.astype(out)
        tolerance = tolerance + np.abs(np.spacing(expected)).astype(np.float64)
    return expected.reshape(shape), ("bound", center.reshape(shape), tolerance.reshape(shape))


def matmul(a, b, out):
    a2 = a if a.ndim >= 2 else a[None, :]
    b2 = b if b.ndim >= 2 else b[:, None]
    a2, b2 = cast(a2, out), cast(b2, out)
    k = a2.shape[-1]
    squeeze = tuple(axis for axis, flag in ((-2, a.ndim == 1), (-1, b.ndim == 1)) if flag)
    if out in V.INTS:
        with np.errstate(over="ignore"):
            product = a2[..., :, :, None].astype(np.int64) * b2[..., None, :, :].astype(np.int64)
            return np.squeeze(product.sum(axis=-2), squeeze).astype(out), "exact"
    with np.errstate(all="ignore"):
        terms = a2[..., :, :, None].astype(np.float64) * b2[..., None, :, :].astype(np.float64)
        center = terms.sum(axis=-2)
        magnitude = np.where(np.isfinite(terms), np.abs(terms), 0).sum(axis=-2)
        unit = np.finfo(out).eps / 2
        gamma = k * unit / (1 - k * unit)
        expected = center.astype(out)
        tolerance = gamma * magnitude + np.abs(np.spacing(expected)) + k * np.finfo(out).smallest_subnormal
        # Partial sums in the output dtype may overflow where the double
        # reference does not: then only the modes' agreement is checked.
        tolerance = np.where(magnitude > np.finfo(out).max / 2, np.nan, tolerance)
    return (np.squeeze(expected, squeeze),
            ("bound", np.squeeze(center, squeeze), np.squeeze(tolerance, squeeze)))


def full_value(value, dtype):
    """kernels/creation.cc: a float dtype takes the double value, bool is
    value != 0, an integer dtype the integer value."""
    if dtype in V.FLOATS:
        return np.array(float(value), np.float64).astype(dtype)
    if dtype == "bool":
        return np.array(float(value) != 0)
    return np.array(int(value), np.int64).astype(dtype)


def arange(start, step, n, dtype):
    i = np.arange(n, dtype=np.int64)
    if dtype in V.FLOATS:
        return (float(start) + i.astype(np.float64) * float(step)).astype(dtype)
    return (int(start) + i * int(step)).astype(dtype)


def random_bits(seed, counter):
    """lazy/creation.cc: splitmix64 of (seed, counter)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed * 0x9E3779B97F4A7C15 % 2**64) + counter * np.uint64(0xD1B54A32D192ED03)
             + np.uint64(0x632BE59BD9B4E019))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def unit_uniform(seed, counter):
    return (random_bits(seed, counter) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def rand(fn, seed, shape, dtype):
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64)
    if fn == "rand":
        v = unit_uniform(seed, i)
        if dtype == "float32":
            v = v.astype(np.float32)
            v[v >= 1] = np.nextafter(np.float32(1), np.float32(0))
        return v.astype(dtype).reshape(shape), "exact"
    radius = np.sqrt(-2.0 * np.log(1.0 - unit_uniform(seed, 2 * i)))
    center = radius * np.cos(2 * np.pi * unit_uniform(seed, 2 * i + np.uint64(1)))
    expected = center.astype(dtype)
    # log and cos of libm and numpy differ by an ulp or two; near a zero of
    # the cosine that is an absolute error, of the order of the radius.
    tolerance = 16 * np.finfo(np.float64).eps * (radius + 1) + np.abs(np.spacing(expected))
    return expected.reshape(shape), ("bound", center.reshape(shape), tolerance.reshape(shape))
