"""torch.nn.utils' gradient clipping, lazily: the norm and the scaling join
the step's graph (no value is read back unless error_if_nonfinite asks), and
max_norm and clip_value enter it as inputs, so changing them compiles
nothing new.

    loss.backward()
    ordo.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()"""

import math

import numpy as np

from .. import _C
from .._autograd import no_grad
from .._tensor import Tensor, tensor


def _gradients(parameters, what):
    """The gradients of the parameters that have one, all on one device."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    devices = {g._device for g in grads}
    if len(devices) > 1:
        raise ValueError(f"{what}: the gradients are on several devices {sorted(devices)}; clip each device's "
                         "parameters on that device")
    return grads


def _norm(x, norm_type):
    """The norm_type-norm of all of x's elements (a 0-d tensor)."""
    if norm_type == math.inf:
        return _C.abs(x).max()
    if norm_type == 2.0:
        return _C.sqrt((x * x).sum())
    if norm_type == 1.0:
        return _C.abs(x).sum()
    return _C.pow(_C.pow(_C.abs(x), norm_type).sum(), 1.0 / norm_type)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the parameters' gradients in place by min(1, max_norm / (total + 1e-6)), total the
    norm_type-norm of every gradient's norm (so of all of them together), and returns total, as
    torch 1.13. norm_type is a positive number or inf. With error_if_nonfinite, a NaN or infinite
    total raises RuntimeError (reading it runs the graph) and the gradients stay as they were."""
    del foreach  # one graph either way
    norm_type = float(norm_type)
    if math.isnan(norm_type) or norm_type <= 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be a positive number or inf, got {norm_type}")
    grads = _gradients(parameters, "clip_grad_norm_")
    if not grads:
        return tensor(0.0)
    dtype = np.float64 if any(g.dtype == np.float64 for g in grads) else grads[0].dtype
    with no_grad():
        norms = [_C.cast(_norm(g, norm_type), dtype) for g in grads]
        total = norms[0] if len(norms) == 1 else _norm(_C.concat([_C.reshape(n, [1]) for n in norms], 0), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
        limit = tensor(float(max_norm), dtype=dtype, device=grads[0]._device)
        # clamp, not where: a NaN total makes NaN gradients, as torch's.
        scale = _C.clamp(limit / (total + 1e-6), None, 1.0)
        for g in grads:
            g._assign(g * (scale if g.dtype == dtype else _C.cast(scale, g.dtype)))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient in place to [-clip_value, clip_value], as torch's."""
    del foreach
    grads = _gradients(parameters, "clip_grad_value_")
    with no_grad():
        for g in grads:
            bound = tensor(float(clip_value), dtype=g.dtype, device=g._device)
            g._assign(_C.clamp(g, -bound, bound))
