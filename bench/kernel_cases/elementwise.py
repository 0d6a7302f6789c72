"""Elementwise ops over 4M float32 elements."""

import numpy as np

from kernel_bench import Case

N = 4 * 1024 * 1024


def vector(rng):
    return (rng.standard_normal(N).astype(np.float32),)


CASES = [
    Case("exp f32 4M", vector, lambda x: x.exp(), np.exp, lambda x: x.exp(), target=1.0),
]
