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


def metrics_report(device=None, all_processes=False):
    """Every metric with samples and every non-zero counter of the devices, as torch_xla prints them.

    all_processes=True: every process's report (each under a line "Process 1 (devices 2..3, pid 4242):"),
    gathered from every process of an MPI job; every process calls it (say, once training is done), and
    device must be None."""
    if all_processes:
        if device is not None:
            raise ValueError("metrics_report(all_processes=True) reports every device: pass no device")
        return _C.metrics_report_of_every_process()
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
