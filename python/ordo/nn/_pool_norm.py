"""Pooling and batch norm layers, as PyTorch 1.13's (signatures, state dict
keys, buffers). SyncBatchNorm all_reduces each batch's per-channel sum, sum
of squares and count over the devices, in the cc-token chain like any
collective (torch_xla's xf.SyncBatchNorm)."""

import numpy as np

from .. import _C
from .._autograd import no_grad
from .._collectives import all_reduce
from .._devices import _ordinal
from . import functional as F
from ._layers import _dtype
from ._module import Module, Parameter


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, (kernel_size if stride is None else stride)
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, (kernel_size if stride is None else stride)
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


def _values_per_channel(input):  # noqa: A002
    return int(np.prod(input.shape, dtype=np.int64)) // max(input.shape[1], 1)


class _NormBase(Module):
    """weight (1s) and bias (0s) when affine; buffers running_mean (0s),
    running_var (1s) and num_batches_tracked (0-d int64) when tracking."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype, device = _dtype(dtype), _ordinal(device)
        ones = lambda: _C.full([num_features], 1, dtype, device)  # noqa: E731
        zeros = lambda: _C.full([num_features], 0, dtype, device)  # noqa: E731
        if affine:
            self.weight, self.bias = Parameter(ones()), Parameter(zeros())
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros())
            self.register_buffer("running_var", ones())
            self.register_buffer("num_batches_tracked", _C.full([], 0, np.int64, device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def _check_input_dim(self, input):  # noqa: A002
        raise NotImplementedError

    def _momentum_of_step(self):
        """torch's factor: momentum, or 1 / num_batches_tracked (a cumulative
        average) when momentum is None, as a device value so that no step
        reads it back or compiles anew."""
        with no_grad():
            self.num_batches_tracked._assign(self.num_batches_tracked + 1)
            if self.momentum is None:
                return 1.0 / _C.cast(self.num_batches_tracked, self.running_mean.dtype)
        return self.momentum

    def _batch_statistics(self, input):  # noqa: A002
        """The normalized input, the batch's mean and biased variance, and its
        count of values per channel."""
        output, mean, var = _C.batch_norm_training(input, self.weight, self.bias, float(self.eps))
        return output, mean, var, _values_per_channel(input)

    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        if not self.training and self.running_mean is not None:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0,
                                self.eps)
        output, mean, var, count = self._batch_statistics(input)
        if self.training and self.track_running_stats:
            self._update_running(mean, var, self._momentum_of_step(), count)
        return output

    def _update_running(self, mean, var, momentum, count):
        """Moves the running statistics towards the batch's (the variance
        unbiased: count / (count - 1))."""
        with no_grad():
            unbiased = var * (count / (count - 1))
            for running, batch in ((self.running_mean, mean), (self.running_var, unbiased)):
                running._assign(running * (1 - momentum) + batch.detach() * momentum)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_NormBase):
    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_NormBase):
    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class SyncBatchNorm(_NormBase):
    """Batch norm over the batch of every device of process_group (replica
    groups, as ordo.all_reduce's; None: every device)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _batch_statistics(self, input):  # noqa: A002
        axes = [0] + list(range(2, input.ndim))
        channels = input.shape[1]
        local_count = _C.full([1], _values_per_channel(input), input.dtype, input._device)
        stats = _C.concat([input.sum(axes), (input * input).sum(axes), local_count], 0)
        stats = all_reduce("sum", stats, groups=self.process_group)
        count = _C.slice(stats, 0, 2 * channels, 2 * channels + 1, 1)
        mean = _C.slice(stats, 0, 0, channels, 1) / count
        var = _C.slice(stats, 0, channels, 2 * channels, 1) / count - mean * mean
        shape = [channels] + [1] * (input.ndim - 2)
        scale = _C.rsqrt(var + self.eps)
        if self.weight is not None:
            scale = scale * self.weight
        output = (input - _C.reshape(mean, shape)) * _C.reshape(scale, shape)
        if self.bias is not None:
            output = output + _C.reshape(self.bias, shape)
        return output, mean, var, count
