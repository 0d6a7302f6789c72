"""Counters and metrics, as torch_xla.debug.metrics: always on, kept per device.

    import ordo
    ...
    print(ordo.metrics_report())        # torch_xla's text format
    ordo.counter_value("CachedCompile") # None for a name ordo does not have

Time metrics are in nanoseconds, as torch_xla's. `device` is one of this
process's devices (an ordo.Device or its index); None: all of them."""

from . import _C
from ._devices import _ordinal


def _device(device):
    return -1 if device is None else _ordinal(device)


def metrics_report(device=None):
    """Every metric with samples and every non-zero counter of the devices, as torch_xla prints them."""
    return _C.metrics_report(_device(device))


def counter_names():
    return _C.counter_names()


def counter_value(name, device=None):
    return _C.counter_value(name, _device(device))


def metric_names():
    return _C.metric_names()


def metric_data(name, device=None):
    """(total_samples, accumulator, samples), samples being (ns since the epoch, value) pairs; None for an
    unknown name."""
    return _C.metric_data(name, _device(device))


def clear_counters():
    _C.clear_counters()


def clear_metrics():
    _C.clear_metrics()


def clear_all():
    _C.clear_all()
