"""ordo.nn.functional: what the layers compute, as torch.nn.functional's."""

import numpy as np

from .. import _C
from .._nn_ops import dropout as _dropout
from .._nn_ops import gelu, log_softmax, softmax  # noqa: F401 - torch's names live here too

relu = _C.relu
tanh = _C.tanh
sigmoid = _C.sigmoid


def linear(input, weight, bias=None):  # noqa: A002 - torch's names
    """input @ weight.T + bias, weight being (out_features, in_features) as torch's."""
    out = _C.matmul(input, _C.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def dropout(input, p=0.5, training=True):  # noqa: A002
    return _dropout(input, p, training)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction ('mean', 'sum' or 'none')")


def cross_entropy(input, target, reduction="mean"):  # noqa: A002
    """The mean (or sum) over the batch of -log softmax(input)[target]: input (N, C) logits, target (N,)
    class indices (int32 or int64). An index outside [0, C) makes reading the loss raise, as one_hot does."""
    if input.ndim != 2:
        raise ValueError(f"cross_entropy: the logits must be (batch, classes), got shape {input.shape}")
    if target.ndim != 1 or target.shape[0] != input.shape[0]:
        raise ValueError(f"cross_entropy: the targets must be ({input.shape[0]},), got shape {target.shape}")
    if np.dtype(target.dtype).kind != "i":
        raise TypeError(f"cross_entropy: the targets must be class indices (int32 or int64), got {target.dtype}")
    picked = _C.gather(log_softmax(input, 1), 1, _C.reshape(target, [target.shape[0], 1]))
    return _reduce(-_C.reshape(picked, [target.shape[0]]), reduction)


def mse_loss(input, target, reduction="mean"):  # noqa: A002
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
