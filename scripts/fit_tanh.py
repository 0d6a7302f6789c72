#!/usr/bin/python3
"""Prints kTanhTable of src/kernels/vector_math_rows.inc: float32 tanh on
32 intervals of |x| (interval 0: [0, 1/8); 1-28: the quarter binades from 1/8
to 16; 29-31: 1), a polynomial of degree at most 6 in d = |x| - c on each.

Each polynomial is fitted by least squares weighted by 1 / ulp(tanh), on
Chebyshev nodes, in u = d / (half the interval) so that the fit is well
conditioned, at the lowest degree that is within 0.02 ulp. Its coefficients
are then rounded to float32 one at a time, lowest first, each rounding
folded into a refit of the ones above it. tanh(c) is kept as two floats,
high and low; interval 0 has 0 and 1 as its first coefficients.

    /usr/bin/python3 scripts/fit_tanh.py   # the rows, and each interval's error on stderr
"""
import sys

import numpy as np

MAX_DEGREE = 6
NODES = 3000


def intervals():
    yield 0.0, 0.125
    for exponent in range(-3, 4):
        for quarter in range(4):
            base = 2.0**exponent
            yield base * (1 + quarter / 4), base * (1 + (quarter + 1) / 4)


def horner(coefficients, d):
    p = np.zeros_like(d)
    for c in coefficients[::-1]:
        p = p * d + c
    return p


def ulps(p, a):
    exact = np.tanh(a)
    return np.abs(p - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)


def fit_interval(index, lo, hi):
    center = 0.0 if index == 0 else (lo + hi) / 2
    half = hi if index == 0 else (hi - lo) / 2
    a = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    a = a[a > 1e-7]
    d = a - center
    weight = 1 / np.spacing(np.tanh(a).astype(np.float32)).astype(np.float64)

    def fit_above(fixed, degree):
        rest = np.tanh(a) - (horner(np.array(fixed), d) if fixed else 0)
        powers = np.vander(d / half, degree + 1, increasing=True)[:, len(fixed):]
        b, *_ = np.linalg.lstsq(powers * weight[:, None], rest * weight, rcond=None)
        return [bk / half ** (len(fixed) + k) for k, bk in enumerate(b)]

    if index == 0:
        first = [0.0, 1.0]
    else:
        high = float(np.float32(np.tanh(center)))
        first = [high + float(np.float32(np.tanh(center) - high))]
    degree = next(n for n in range(len(first), MAX_DEGREE + 1)
                  if n == MAX_DEGREE or ulps(horner(np.array(first + fit_above(first, n)), d), a).max() < 0.02)
    fixed = list(first)
    while len(fixed) < degree + 1:
        fixed.append(float(np.float32(fit_above(fixed, degree)[0])))
    fixed += [0.0] * (MAX_DEGREE - degree)
    grid = np.linspace(lo, hi, 40001)[:-1]
    grid = grid[grid > 0]
    error = ulps(horner(np.array(fixed), grid - center), grid).max()
    print(f"interval {index} [{lo}, {hi}): degree {degree}, within {error:.3f} ulp", file=sys.stderr)
    high = float(np.float32(fixed[0]))
    return [center, high, fixed[0] - high] + fixed[1:]


def literal(v):
    assert float(np.float32(v)) == v, v
    text = "%.9g" % np.float32(v)
    return text + (".0f" if "." not in text and "e" not in text else "f")


def main():
    rows = [fit_interval(i, lo, hi) for i, (lo, hi) in enumerate(intervals())]
    rows += [[0.0, 1.0, 0.0] + [0.0] * MAX_DEGREE] * (32 - len(rows))
    names = ["center", "x^0 high part", "x^0 low part"] + [f"x^{k}" for k in range(1, MAX_DEGREE + 1)]
    for name, column in zip(names, zip(*rows)):
        print("    {" + ", ".join(literal(v) for v in column) + "},  // " + name)


if __name__ == "__main__":
    main()
