"""conv1d and conv2d as torch 1.13's functional forms: stride, padding and
dilation as an int or one int per spatial dim, padding also 'same' (stride
1 only) or 'valid'. The op and its checks are C++'s (lazy/conv_ops.cc):
channels, groups, sizes and ranks that do not fit raise ValueError before
anything is traced."""

import numbers

from .. import _C

_PADDING_STRINGS = ("same", "valid")


def _ints(what, name, value, spatial):
    """value as a list of ints: one int for every dim, or one per dim."""
    values = [value] if isinstance(value, numbers.Integral) else list(value)
    if len(values) not in (1, spatial) or not all(isinstance(v, numbers.Integral) for v in values):
        raise ValueError(f"{what}: {name} must be an int or {spatial} ints, got {value!r}")
    return [int(v) for v in values]


def _convolve(what, conv, spatial, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    if isinstance(padding, str):
        if padding not in _PADDING_STRINGS:
            raise ValueError(f"{what}: invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
        numbers_, mode = [0], padding
    else:
        numbers_, mode = _ints(what, "padding", padding, spatial), ""
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise ValueError(f"{what}: groups must be an int, got {groups!r}")
    return conv(input, weight, bias, _ints(what, "stride", stride, spatial), numbers_, mode,
                _ints(what, "dilation", dilation, spatial), int(groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002 - torch's names
    """input (N, C, L) or (C, L) with weight (O, C / groups, K) and bias (O,) or None."""
    return _convolve("conv1d", _C.conv1d, 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """input (N, C, H, W) or (C, H, W) with weight (O, C / groups, KH, KW) and bias (O,) or None."""
    return _convolve("conv2d", _C.conv2d, 2, input, weight, bias, stride, padding, dilation, groups)
