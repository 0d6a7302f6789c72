"""ordo: a lazy tensor runtime whose collectives run in order on every device.

The API follows torch_xla's xla_model:

    import ordo

    def step(index):
        x = ordo.tensor([float(index)] * 4)
        total = ordo.all_reduce(ordo.REDUCE_SUM, x)
        ordo.mark_step()
        return total.numpy()

    print(ordo.spawn(step))   # every device: [0+1+2+3] * 4
"""

import numpy as _np

from . import _C
from ._C import (CcToken, CollectiveError, CollectiveMismatchError, CollectiveTimeoutError, ExecutionError,
                 OutOfMemoryError, Tensor)
from ._collectives import (REDUCE_AND, REDUCE_MAX, REDUCE_MIN, REDUCE_MUL, REDUCE_OR, REDUCE_SUM, all_gather,
                           all_reduce, all_to_all, collective_broadcast, collective_permute, reduce_scatter)
from ._data_parallel import broadcast_master_param, optimizer_step, reduce_gradients
from ._devices import (Device, bind_thread_to_device, device, devices, get_local_ordinal, get_ordinal, init,
                       is_master_ordinal, set_device, spawn, world_size, xla_device, xrt_world_size)
from ._devices import _ordinal
from . import nn
from ._checkpoint import CheckpointError, load, save
from ._autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled
from ._exchange import mesh_reduce, rendezvous
from ._metrics import (clear_all, clear_counters, clear_metrics, counter_names, counter_value, metric_data,
                       metric_names, metrics_report)
from ._nn_ops import (clamp, clip, dropout, erf, gelu, log_softmax, logsumexp, rand_like, softmax, std,
                      var)
from ._random import manual_seed, manual_seed_all
from ._timeline import plot_timeline
from ._trace import is_tracing, start_trace, stop_trace
from ._tensor import arange, bfloat16, full, ones, rand, randn, tensor, zeros
from . import optim
from .optim import ZeroRedundancyOptimizer

float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
int32 = _np.int32
int64 = _np.int64
bool_ = _np.bool_

exp = _C.exp
log = _C.log
sqrt = _C.sqrt
rsqrt = _C.rsqrt
tanh = _C.tanh
sigmoid = _C.sigmoid
relu = _C.relu
abs = _C.abs  # noqa: A001 - the tensor op, as torch.abs
matmul = _C.matmul
where = _C.where
maximum = _C.maximum
minimum = _C.minimum
one_hot = lambda indices, depth, dtype=_np.int64: _C.one_hot(indices, depth, _np.dtype(dtype))  # noqa: E731


def scatter_add(input, dim, index, src):  # noqa: A002 - torch's names
    """torch.scatter_add: input, then src's elements added where index (src's shape) points along dim."""
    return _C.scatter_add(input, dim, index, src)


def index_add(input, dim, index, source):  # noqa: A002 - torch's names
    """torch.index_add: input, then source's slices along dim added at the slices index (1-D) names."""
    return _C.index_add(input, dim, index, source)


def cat(tensors, dim=0):
    return _C.concat(list(tensors), dim)


concat = cat


def mark_step(wait=False):
    """Cuts the calling thread's device's graph and submits it; with wait,
    also waits until it ran. Without, it returns once the device is at most
    max_steps_ahead() steps behind."""
    if wait:
        _C.mark_step_and_wait()
    else:
        _C.mark_step()


def set_max_steps_ahead(steps):
    """How many submitted steps a device may still have to run when
    mark_step returns (default 2, or ORDO_MAX_STEPS_AHEAD; 0: mark_step
    waits for its step). Bounds memory and how late a failure surfaces."""
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise TypeError(f"set_max_steps_ahead: expected an int, got {type(steps).__name__}")
    _C.set_max_steps_ahead(steps)


def max_steps_ahead():
    return _C.max_steps_ahead()


def drop_pending_graph(device=None):
    """Drops a device's pending graph (default: the calling thread's) instead
    of running it: its pending tensors lose their values (reading them, or
    using them in an op, raises ExecutionError), its cc token is reset, and
    peers waiting in its collectives fail at once instead of timing out.
    torch_xla's name for it is ordo._C._clear_pending_irs(str(device))."""
    _C.drop_pending_graph(_ordinal(device))


def wait_device_ops(devices=()):
    """Waits until the given devices (default: all) ran everything submitted.
    Ctrl-C meanwhile (as while reading a value) raises KeyboardInterrupt
    within a second, and the collectives those devices had queued fail for
    them and their peers instead of waiting (ordo._C.interrupt_device)."""
    if not devices:
        _C.wait_all_device_ops()
        return
    for d in devices:
        _C.wait_device_ops(_ordinal(d))


def shutdown():
    """Waits for every device and stops the runtime; init() may follow.
    A spawned function may not call it (ValueError)."""
    _C.shutdown()


def set_collective_timeout(timeout_seconds, warn_seconds=None):
    """A collective that waits longer than warn_seconds logs which devices
    are missing; past timeout_seconds it raises CollectiveTimeoutError.
    Defaults: ORDO_COLLECTIVE_WARN_SECONDS / ORDO_COLLECTIVE_TIMEOUT_SECONDS."""
    if warn_seconds is None:
        warn_seconds = min(_C.collective_timeouts()[0], timeout_seconds)
    _C.set_collective_timeouts(float(warn_seconds), float(timeout_seconds))


def set_log_level(level):
    """Which of ordo's messages (on stderr) are shown: 'error', 'warning' (the
    default, or ORDO_LOG_LEVEL's), 'info' or 'debug', or 0-3."""
    if isinstance(level, bool) or not isinstance(level, (str, int)):
        raise TypeError(f"set_log_level: level must be a name or 0-3, not {type(level).__name__}")
    _C._set_log_level(str(level))


def log_level():
    """The log level's name: 'error', 'warning', 'info' or 'debug'."""
    return _C._log_level()


def compile_cache_stats():
    return _C.compile_cache_stats()


def _say_last_words_on_uncaught_exceptions():
    """Under mpirun, an uncaught exception first tells the other processes why this one ends
    ("raised RuntimeError: boom"), so that their errors name the cause rather than only the death.
    Started without mpirun, sys.excepthook stays as it is."""
    import os
    import sys
    if "OMPI_COMM_WORLD_SIZE" not in os.environ:
        return
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        try:
            _C._say_last_words(f"raised {kind.__name__}: {value}")
        except Exception:  # noqa: BLE001 - the exception being reported matters more
            pass
        previous(kind, value, traceback)

    sys.excepthook = excepthook


_say_last_words_on_uncaught_exceptions()
