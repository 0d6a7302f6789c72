"""torch_xla.distributed.xla_multiprocessing over ordo: spawn runs a replica
per device, as threads of this process (under mpirun, on this process's
devices), with ordo's spawn: a replica that raises or exits fails the whole
spawn, and its peers fail promptly instead of waiting."""

import ordo


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    """Calls fn(ordinal, *args) on a thread per device (nprocs of them, or
    every device of this process) and returns when all have returned.
    join=False, daemon and start_method are accepted for compatibility: the
    replicas are threads, joined before spawn returns."""
    del join, daemon, start_method
    ordo.spawn(fn, args=args, nprocs=nprocs)


class MpModelWrapper:
    """Shares one model among the replicas: with threads, every replica sees
    the same module, so to(device) gives each its own copy."""

    def __init__(self, model):
        self._model = model

    def to(self, device):
        import copy
        return copy.deepcopy(self._model).to(device)


class MpSerialExecutor:
    """Runs a function on one replica at a time (torch_xla's, for loading
    data sets without racing)."""

    def __init__(self):
        import threading
        self._lock = threading.Lock()

    def run(self, fn):
        with self._lock:
            return fn()
