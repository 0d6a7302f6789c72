"""The ops of training, with torch 1.13's signatures: softmax, log_softmax,
logsumexp, var, std, clamp, gelu, dropout and rand_like (also Tensor
methods where torch has them). dim counts from the end when negative; a 0-d
tensor takes dim 0 or -1."""

import numbers

import numpy as np

from . import _C
from ._random import next_seed
from ._tensor import Tensor, _axes, _dtype

erf = _C.erf


def _cast_to(input, dtype):
    return input if dtype is None else _C.cast(input, _dtype(dtype))


def _dim(what, dim):
    if dim is None:
        raise TypeError(f"{what}: dim must be given (an int)")
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{what}: dim must be an int, got {type(dim).__name__}")
    return int(dim)


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along dim (after a cast to dtype, if given)."""
    return _C.softmax(_cast_to(input, dtype), _dim("softmax", dim))


def log_softmax(input, dim, dtype=None):
    return _C.log_softmax(_cast_to(input, dtype), _dim("log_softmax", dim))


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over dim (an int or a tuple), stable for large x;
    only -inf (or nothing) gives -inf."""
    return _C.logsumexp(input, _axes(dim), bool(keepdim))


_UNSET = object()


def _correction(what, unbiased, correction):
    if correction is not None:
        if unbiased is not _UNSET:
            raise TypeError(f"{what}: give unbiased or correction, not both")
        return float(correction)
    return 1.0 if unbiased is _UNSET or unbiased else 0.0


def _moment_arguments(what, dim, unbiased, correction):
    if isinstance(dim, (bool, np.bool_)):  # torch.var(x, False): the unbiased overload
        if unbiased is not _UNSET:
            raise TypeError(f"{what}: unbiased given twice")
        dim, unbiased = None, bool(dim)
    return _axes(dim), _correction(what, unbiased, correction)


def var(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    """sum((x - mean)^2) / (N - correction) over dim (None: every dim);
    unbiased=True is correction=1 (the default), False is 0."""
    axes, c = _moment_arguments("var", dim, unbiased, correction)
    return _C.var(input, axes, c, bool(keepdim))


def std(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    axes, c = _moment_arguments("std", dim, unbiased, correction)
    return _C.std(input, axes, c, bool(keepdim))


def clamp(input, min=None, max=None):
    """min(max(x, min), max); each bound None, a number or a tensor
    (broadcast against x). The gradient reaches x where min <= x <= max."""
    return _C.clamp(input, min, max)


clip = clamp


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate)


def dropout(input, p=0.5, training=True):
    """Zeroes each element with probability p and scales the rest by
    1 / (1 - p), with a mask from the next seed of the input's device's
    generator (ordo.manual_seed); the input itself when not training."""
    if not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    return _C.dropout(input, float(p), next_seed(input._device))


def rand_like(input, dtype=None):
    """Uniform in [0, 1) with input's shape (and dtype, unless given) on its
    device, from the next seed of that device's generator."""
    dtype = input.dtype if dtype is None else _dtype(dtype)
    return _C.random_uniform(list(input.shape), next_seed(input._device), 0.0, 1.0, dtype)


def _install_methods():
    methods = {
        "erf": lambda self: _C.erf(self),
        "softmax": lambda self, dim, dtype=None: softmax(self, dim, dtype),
        "log_softmax": lambda self, dim, dtype=None: log_softmax(self, dim, dtype),
        "logsumexp": lambda self, dim, keepdim=False: logsumexp(self, dim, keepdim),
        "var": var,
        "std": std,
        "clamp": clamp,
        "clip": clamp,
    }
    for name, value in methods.items():
        setattr(Tensor, name, value)


_install_methods()
