"""torch_xla.distributed.xla_multiprocessing over ordo: spawn runs a replica
per device, as threads of this process (under mpirun, on this process's
devices), with ordo's spawn: a replica that raises or exits fails the whole
spawn, and its peers fail promptly instead of waiting."""

import ordo

# torch_xla's replicas are processes, so what they leave (a torch.distributed
# world, xla_backend.py) ends when they exit. Here they are threads: a module
# that keeps such state adds a function that, called as a spawn starts,
# returns what to call when it ends.
_replica_scopes = []


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    """Calls fn(ordinal, *args) on a thread per device (nprocs of them, or
    every device of this process) and returns when all have returned.
    join=False, daemon and start_method are accepted for compatibility: the
    replicas are threads, joined before spawn returns.

    nprocs=1 is torch_xla's single-device run: fn(0, *args) on the calling
    thread, in a world of one device (an in-process runtime of more devices
    is restarted with one), and spawn returns what fn returned.

    A torch.distributed world the replicas made ends with the spawn, as it
    ends with torch_xla's replica processes."""
    del join, daemon, start_method
    ends = [scope() for scope in _replica_scopes]
    try:
        if nprocs == 1:
            return _run_on_one_device(fn, args)
        ordo.spawn(fn, args=args, nprocs=nprocs)
        return None
    finally:
        for end in ends:
            end()


def _run_on_one_device(fn, args):
    if ordo.world_size() != 1:
        if ordo.world_size() != ordo._C.num_devices():
            raise ValueError(f"xmp.spawn(nprocs=1) runs a world of one device, but this process is one of "
                             f"{ordo.world_size() // ordo._C.num_devices()} under mpirun: start one process "
                             f"with ORDO_NUM_DEVICES=1 instead")
        ordo.shutdown()
        ordo.init(1)
    ordo.set_device(0)
    return fn(0, *args)


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
