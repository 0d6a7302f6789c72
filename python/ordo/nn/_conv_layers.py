"""Conv1d and Conv2d as torch 1.13's modules, initialized as torch's
(kaiming_uniform(a=sqrt(5)) for the weight, which is U(-1/sqrt(fan_in),
1/sqrt(fan_in)), and the bias from the same bound), drawn from ordo's
seeded generator."""

import math
import numbers

from . import _conv
from ._layers import _uniform
from ._module import Module


def _tuple(value, spatial):
    return (int(value),) * spatial if isinstance(value, numbers.Integral) else tuple(int(v) for v in value)


class _ConvNd(Module):
    _spatial = 0
    _name = ""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f"{self._name}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        self.stride = _tuple(stride, self._spatial)
        if isinstance(padding, str):
            if padding not in _conv._PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_conv._PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tuple(padding, self._spatial)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, self._spatial)
        self.dilation, self.groups, self.padding_mode = _tuple(dilation, self._spatial), groups, padding_mode
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        self.weight = _uniform((out_channels, in_channels // groups) + self.kernel_size, bound, dtype, device)
        if bias:
            self.bias = _uniform((out_channels,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002 - torch's name
        return self._function(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._spatial:
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * self._spatial:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        return text + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: (N, C_in, L) -> (N, C_out, L_out)."""
    _spatial, _name, _function = 1, "Conv1d", staticmethod(_conv.conv1d)


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: (N, C_in, H, W) -> (N, C_out, H_out, W_out)."""
    _spatial, _name, _function = 2, "Conv2d", staticmethod(_conv.conv2d)
