"""ordo.nn.functional: what the layers compute, as torch.nn.functional's."""

import numbers

import numpy as np

from .. import _C
from .._tensor import Tensor, tensor
from .._nn_ops import dropout as _dropout
from .._nn_ops import gelu, log_softmax, softmax  # noqa: F401 - torch's names live here too
from ._conv import conv1d, conv2d  # noqa: F401

relu = _C.relu
tanh = _C.tanh
sigmoid = _C.sigmoid


def linear(input, weight, bias=None):  # noqa: A002 - torch's names
    """input @ weight.T + bias, weight being (out_features, in_features) as torch's."""
    out = _C.matmul(input, _C.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def dropout(input, p=0.5, training=True):  # noqa: A002
    return _dropout(input, p, training)


def _check_reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction ('mean', 'sum' or 'none')")


def _reduce(loss, reduction, weights=None):
    """The loss per sample, summed, or its mean: over the samples, or over
    their weights when given (nll_loss's weighted mean). The loss checked
    reduction before it traced anything."""
    if reduction == "mean":
        return loss.mean() if weights is None else loss.sum() / weights.sum()
    return loss.sum() if reduction == "sum" else loss


def _class_weights(weight, input, what):
    """weight as a tensor of input's dtype and device, one per class (None stays None)."""
    if weight is None:
        return None
    classes = input.shape[1]
    if not isinstance(weight, Tensor):
        weight = tensor(np.asarray(weight.numpy() if hasattr(weight, "numpy") else weight), dtype=input.dtype,
                        device=input._device)
    if tuple(weight.shape) != (classes,):
        raise ValueError(f"{what}: weight must hold one value per class ({classes},), got shape {weight.shape}")
    return weight if weight.dtype == input.dtype else _C.cast(weight, input.dtype)


def _check_batch(what, input, target, indices=True):
    if input.ndim != 2:
        raise ValueError(f"{what}: the input must be (batch, classes), got shape {input.shape}")
    if indices:
        if target.ndim != 1 or target.shape[0] != input.shape[0]:
            raise ValueError(f"{what}: the targets must be ({input.shape[0]},), got shape {target.shape}")
        if np.dtype(target.dtype).kind != "i":
            raise TypeError(f"{what}: the targets must be class indices (int32 or int64) or class "
                            f"probabilities of the input's shape, got {target.dtype} of shape {target.shape}")


def _picked_losses(log_probs, target, weight, ignore_index):
    """Per sample: -weight[t] * log_probs[t] for its target t, 0 where t is
    ignore_index; and each sample's weight (0 where ignored). A target outside
    [0, classes) that is not ignore_index makes reading the loss raise."""
    batch = target.shape[0]
    kept = target != ignore_index
    safe = _C.where(kept, target, 0)  # an ignored sample reads class 0, then counts for nothing
    picked = _C.reshape(_C.gather(log_probs, 1, _C.reshape(safe, [batch, 1])), [batch])
    if weight is None:
        return _C.where(kept, -picked, 0.0), _C.cast(kept, log_probs.dtype)
    of_target = _C.index_select(weight, 0, safe)
    # where, not a product with 0: an ignored sample's -inf stays out.
    return _C.where(kept, -picked * of_target, 0.0), _C.where(kept, of_target, 0.0)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """The negative log likelihood of the targets, as torch's: input (N, C)
    log-probabilities, target (N,) class indices. A sample whose target is
    ignore_index counts for nothing; with weight (C,), sample i counts
    weight[target[i]] times, and the mean divides by the sum of those
    weights (0 / 0, NaN, when every sample is ignored, as torch)."""
    _check_reduction(reduction)
    _check_batch("nll_loss", input, target)
    losses, sample_weight = _picked_losses(input, target, _class_weights(weight, input, "nll_loss"), ignore_index)
    return _reduce(losses, reduction, sample_weight)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    """torch 1.13's cross_entropy over (N, C) logits: nll_loss of
    log_softmax(input) for class indices (with weight and ignore_index as
    nll_loss), or -sum(target * log_softmax(input)) per sample for class
    probabilities of input's shape. label_smoothing = e mixes in the
    uniform distribution: (1 - e) * that loss + e / C * the loss against
    every class alike (weighted by class; the mean divides as nll_loss's)."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    _check_reduction(reduction)
    indices = np.dtype(target.dtype).kind == "i"
    _check_batch("cross_entropy", input, target, indices)
    weight = _class_weights(weight, input, "cross_entropy")
    classes = input.shape[1]
    log_probs = log_softmax(input, 1)
    if not indices:
        return _cross_entropy_with_probabilities(log_probs, target, weight, reduction, label_smoothing)
    losses, sample_weight = _picked_losses(log_probs, target, weight, ignore_index)
    loss = _reduce(losses, reduction, sample_weight)
    if label_smoothing == 0.0:
        return loss
    # Every class alike: -sum_c weight[c] * log_probs[c], 0 for an ignored
    # sample; its mean divides as nll_loss's (by the kept samples' weights).
    everything = log_probs if weight is None else log_probs * weight
    smooth = _C.where(target != ignore_index, -everything.sum(1), 0.0)
    return (1 - label_smoothing) * loss + (label_smoothing / classes) * _reduce(smooth, reduction, sample_weight)


def _cross_entropy_with_probabilities(log_probs, target, weight, reduction, label_smoothing):
    if tuple(target.shape) != tuple(log_probs.shape):
        raise ValueError(f"cross_entropy: class probabilities must have the input's shape {log_probs.shape}, "
                         f"got {target.shape}")
    if target.dtype != log_probs.dtype:
        raise TypeError(f"cross_entropy: class probabilities must have the input's dtype {log_probs.dtype}, "
                        f"got {target.dtype}")
    classes = log_probs.shape[1]
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = log_probs * target if weight is None else log_probs * target * weight
    losses = -terms.sum(1)
    # The mean is over samples, weighted or not (torch).
    return _reduce(losses, reduction)


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    _check_reduction(reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"mse_loss: input shape {input.shape} and target shape {target.shape} differ")
    diff = input - target
    return _reduce(diff * diff, reduction)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalized over the last len(normalized_shape) dims (biased variance, as torch), then scaled and shifted."""
    dims = list(range(input.ndim - len(tuple(normalized_shape)), input.ndim))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)
    out = centered * _C.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def embedding(input, weight):  # noqa: A002
    """The rows of weight that input's indices name, in input's shape plus the embedding dim."""
    flat = _C.reshape(input, [int(np.prod(input.shape, dtype=np.int64))])
    rows = _C.index_select(weight, 0, flat)
    return _C.reshape(rows, list(input.shape) + [weight.shape[1]])


def _pair(what, value, name):
    """An int or a sequence of one or two ints as (height, width), as torch's."""
    values = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if len(values) not in (1, 2) or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                            for v in values):
        raise TypeError(f"{what}: {name} must be an int or a tuple of one or two ints, got {value!r}")
    return [int(values[0]), int(values[-1])]


def _pool_stride(what, kernel, stride):
    """torch's stride=None (or empty): the kernel's. (ordo's C++ API reads a
    stride of 0 as the kernel's, so a 0 given here is refused here.)"""
    if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0):
        return kernel
    pair = _pair(what, stride, "stride")
    if min(pair) <= 0:
        raise ValueError(f"{what}: kernel, stride and dilation must be positive, got stride {stride!r}")
    return pair


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum of each window of an (N, C, H, W) or (C, H, W) input; with
    return_indices also each maximum's index in its flattened (H, W) plane."""
    kernel = _pair("max_pool2d", kernel_size, "kernel_size")
    args = (input, kernel, _pool_stride("max_pool2d", kernel, stride), _pair("max_pool2d", padding, "padding"),
            _pair("max_pool2d", dilation, "dilation"), bool(ceil_mode))
    return _C.max_pool2d_with_indices(*args) if return_indices else _C.max_pool2d(*args)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """The mean of each window: divided by divisor_override, else by the
    window's size with the padding (count_include_pad) or without."""
    kernel = _pair("avg_pool2d", kernel_size, "kernel_size")
    if divisor_override is not None and (not isinstance(divisor_override, numbers.Integral) or divisor_override <= 0):
        raise ValueError(f"avg_pool2d: divisor_override must be a positive int, got {divisor_override!r}")
    return _C.avg_pool2d(input, kernel, _pool_stride("avg_pool2d", kernel, stride),
                         _pair("avg_pool2d", padding, "padding"), bool(ceil_mode), bool(count_include_pad),
                         None if divisor_override is None else int(divisor_override))


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """The mean over output_size windows that split each plane; an entry of
    None keeps the input's size."""
    sizes = (output_size,) if output_size is None or isinstance(output_size, numbers.Integral) else tuple(output_size)
    if len(sizes) not in (1, 2):
        raise TypeError(f"adaptive_avg_pool2d: output_size must be an int or a pair, got {output_size!r}")
    sizes = [sizes[0], sizes[-1]]
    if input.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: the input must be (N, C, H, W) or (C, H, W), got shape {input.shape}")
    spatial = list(input.shape[-2:])
    return _C.adaptive_avg_pool2d(input, [spatial[i] if s is None else int(s) for i, s in enumerate(sizes)])


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """torch's batch_norm: batch statistics when training (the running ones,
    when given, move by momentum towards them, the variance unbiased);
    else the running statistics normalize."""
    return _C.batch_norm(input, running_mean, running_var, weight, bias, bool(training), float(momentum), float(eps))
