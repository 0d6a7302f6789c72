"""torch_xla.core.xla_model over ordo: devices, steps, collectives on torch
tensors, data parallel, saving. Each function converts torch tensors at its
boundary and calls ordo's own implementation (ordo._collectives, ordo's
steps and exchange), so that both front ends share one cc token per device
and one set of errors."""

import sys
import threading
import time

import torch

import ordo
from ... import _C, _torch
from .._tensors import from_ordo, is_xla_tensor, set_value, to_cpu, to_device, to_ordo  # noqa: F401 - is_xla_tensor: torch_xla's

REDUCE_SUM = ordo.REDUCE_SUM
REDUCE_MUL = ordo.REDUCE_MUL
REDUCE_AND = ordo.REDUCE_AND
REDUCE_OR = ordo.REDUCE_OR
REDUCE_MIN = ordo.REDUCE_MIN
REDUCE_MAX = ordo.REDUCE_MAX

# ---- Devices ----


def _index(device):
    """A device argument (None: the calling thread's; torch.device('xla:N'),
    'xla:N', or N) as ordo's index in this process."""
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return ordo._devices._ordinal(device)
    device = torch.device(device)
    if device.type != "xla":
        raise ValueError(f"not an xla device: {device}")
    return _C.current_device() if device.index is None else ordo._devices._ordinal(device.index)


def xla_device(n=None, devkind=None):
    """torch.device('xla:N'): the calling thread's device, or device n of
    this process, which then becomes the thread's device (as torch_xla's)."""
    if devkind not in (None, "CPU"):
        raise ValueError(f"xla_device: this runtime's devices are CPUs, not {devkind!r}")
    if n is None:
        return torch.device("xla", _C.current_device())
    index = ordo._devices._ordinal(n)
    _C.set_current_device(index)
    return torch.device("xla", index)


def get_xla_supported_devices(devkind=None, max_devices=None):
    if devkind not in (None, "CPU"):
        return None
    count = _C.num_devices()
    if max_devices is not None:
        count = min(count, max_devices)
    return [f"xla:{i}" for i in range(count)]


def xla_device_hw(device):
    _index(device)
    return "CPU"


# ---- Replicas ----
# torch_xla's replicas are xmp.spawn's; a program that never spawns is
# torch_xla's single-device program: one replica, ordinal 0, whose
# collectives involve no other. In one process of several devices that is
# not ordo's world (every device), so there, outside a spawn, this module
# sees a world of one: each device is a group of its own. A process of one
# device (xmp.spawn(nprocs=1), or one per process under mpirun) is both.


def _alone():
    """Whether the caller is a single-device program's one replica in a
    process of several devices."""
    return not _C.spawn_running() and 1 < _C.num_devices() == _C.world_size()


def _groups(groups, what):
    """groups as ordo takes them: when the caller is alone, each device in
    a group of its own (torch_xla's groups can then only be [[0]])."""
    if not _alone():
        return groups
    if groups and [list(g) for g in groups] != [[0]]:
        raise ValueError(f"{what}: groups {groups} name replicas, but outside xmp.spawn this program is one "
                         f"replica (0)")
    return [[d] for d in range(_C.num_devices())]


def xrt_world_size(defval=1):
    del defval
    return 1 if _alone() else _C.world_size()


def get_ordinal(defval=0):
    del defval
    return 0 if _alone() else _C.get_ordinal()


def get_local_ordinal(defval=0):
    del defval
    return 0 if _alone() else _C.get_local_ordinal()


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=sys.stdout, local=False, flush=False):
    if is_master_ordinal(local=local):
        print(*args, file=fd, flush=flush)


def xla_replication_devices(local_devices):
    return [f"xla:{_index(d)}" for d in local_devices]


def set_replication(device, devices):
    """Accepted for compatibility: ordo's replicas are its devices."""
    del device, devices


def parse_xla_device(device):
    device = torch.device(device)
    if device.type == "xla":
        return ("CPU", device.index or 0)
    return None


# ---- Steps ----

_closures = threading.local()


class _AsyncClosures:
    """Runs asynchronous step closures in order on one thread; the first
    error one raised is raised by the next mark_step of any replica."""

    def __init__(self):
        import queue
        self._queue = queue.Queue()
        self._error = None
        self._lock = threading.Lock()
        self._thread = None

    def submit(self, closure, args):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="xm async step closures", daemon=True)
                self._thread.start()
        self._queue.put((closure, args))

    def _run(self):
        while True:
            closure, args = self._queue.get()
            try:
                closure(*args)
            except BaseException as error:  # noqa: B902 - reported at the next mark_step
                with self._lock:
                    self._error = self._error or error

    def raise_error(self):
        with self._lock:
            error, self._error = self._error, None
        if error is not None:
            raise error


_async_closures = _AsyncClosures()


def add_step_closure(closure, args=(), run_async=False):
    """Runs closure(*args) after the calling thread's next mark_step (with
    run_async, after it on one thread of the process, in order)."""
    if not hasattr(_closures, "pending"):
        _closures.pending = []
    _closures.pending.append((closure, args, run_async))


def _run_step_closures():
    _async_closures.raise_error()
    pending = getattr(_closures, "pending", [])
    _closures.pending = []
    for closure, args, run_async in pending:
        if run_async:
            _async_closures.submit(closure, args)
        else:
            closure(*args)


def mark_step(wait=False):
    """Cuts the calling thread's device's graph: compiles it (or reuses the
    compiled one) and runs it asynchronously; then the step closures."""
    ordo.mark_step(wait=wait)
    # The Python objects of the tensors that died without the GIL since the
    # last step (saved activations, on autograd's thread), released holding it.
    _torch.release_parked_python_objects()
    _run_step_closures()


def wait_device_ops(devices=[]):  # noqa: B006 - torch_xla's signature
    ordo.wait_device_ops([_index(d) for d in devices])


def unlazy(tensors):
    """Computes tensors now (torch_xla's _xla_sync_multi with wait)."""
    devices = sorted({to_ordo(t, "unlazy").device for t in tensors})
    for device in devices:
        _C.mark_step_and_wait(device)


# ---- Collectives on torch tensors ----


def _values(inputs, what):
    return [to_ordo(t, what) for t in inputs]


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, cctx=None, pin_layout=True):
    """A tensor gives a new tensor; a list is reduced in place, as one
    coalesced collective, and returned."""
    del cctx
    if isinstance(inputs, torch.Tensor):
        value = to_ordo(inputs, "all_reduce")
        return from_ordo(ordo.all_reduce(reduce_type, value, scale, _groups(groups, "all_reduce"), pin_layout))
    inputs = list(inputs)
    results = ordo.all_reduce(reduce_type, _values(inputs, "all_reduce"), scale, _groups(groups, "all_reduce"),
                              pin_layout)
    for tensor, value in zip(inputs, results):
        set_value(tensor, value)
    return inputs


def _into(output, result, what):
    """The result, or written into output (torch's copy_: its dtype kept)."""
    if output is None:
        return from_ordo(result)
    to_ordo(output, what)  # an xla tensor, or a clear error
    if tuple(output.shape) != tuple(result.shape):
        raise ValueError(f"{what}: output has shape {tuple(output.shape)}, the result {tuple(result.shape)}")
    output.copy_(from_ordo(result))
    return output


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    result = ordo.all_gather(to_ordo(value, "all_gather"), dim, _groups(groups, "all_gather"), None, pin_layout)
    return _into(output, result, "all_gather")


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,
                   pin_layout=True):
    single = isinstance(input, torch.Tensor)
    values = [to_ordo(input, "reduce_scatter")] if single else _values(input, "reduce_scatter")
    results = ordo.reduce_scatter(reduce_type, values, scale, scatter_dim, shard_count,
                                  _groups(groups, "reduce_scatter"), None, pin_layout)
    if single:
        return _into(output, results[0], "reduce_scatter")
    outputs = list(output) if output is not None else [None] * len(results)
    return [_into(out, r, "reduce_scatter") for out, r in zip(outputs, results)]


def all_to_all(value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True):
    return from_ordo(ordo.all_to_all(to_ordo(value, "all_to_all"), split_dimension, concat_dimension, split_count,
                                     _groups(groups, "all_to_all"), pin_layout))


def collective_permute(value, pairs):
    value = to_ordo(value, "collective_permute")
    if _alone():
        if [list(p) for p in pairs] != [[0, 0]]:
            raise ValueError(f"collective_permute: pairs {pairs} name replicas, but outside xmp.spawn this program "
                             f"is one replica (0)")
        return from_ordo(value)  # ordo's permute spans the world: a replica alone keeps its value
    return from_ordo(ordo.collective_permute(value, pairs))


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    tensors = list(tensors)
    values = _values(tensors, "collective_broadcast")
    if _alone():
        if root_ordinal != 0:
            raise ValueError(f"collective_broadcast: root_ordinal {root_ordinal}, but outside xmp.spawn this program "
                             f"is one replica (0)")
        root_ordinal = values[0].device.index if values else 0
    results = ordo.collective_broadcast(values, root_ordinal, _groups(groups, "collective_broadcast"), pin_layout)
    for tensor, value in zip(tensors, results):
        set_value(tensor, value)
    return tensors


# ---- Data parallel ----


def _fetch_gradients(optimizer):
    return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    """Sums the gradients of optimizer's parameters over the replicas (of
    the calling device's group) in one coalesced all_reduce, scaled by 1 /
    the world size: with groups too, as torch_xla scales them (ordo's own
    reduce_gradients divides by the group's size instead)."""
    count = xrt_world_size()
    if count > 1:
        gradients = _fetch_gradients(optimizer)
        if gradients:
            all_reduce(REDUCE_SUM, gradients, scale=1.0 / count, groups=groups, pin_layout=pin_layout)


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):  # noqa: B006
    """reduce_gradients, then optimizer.step(**optimizer_args); with barrier,
    mark_step. Returns what step returned."""
    reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        mark_step()
    return loss


# ---- Host-side exchange, saving ----


def rendezvous(tag, payload=b"", replicas=[]):  # noqa: B006 - torch_xla's signature
    if _alone():
        if list(replicas) not in ([], [0]):
            raise ValueError(f"rendezvous: replicas {replicas}, but outside xmp.spawn this program is one replica (0)")
        return [bytes(payload)]
    return ordo.rendezvous(tag, payload, replicas)


def mesh_reduce(tag, data, reduce_fn):
    if _alone():
        return reduce_fn([to_cpu(data)])
    return ordo.mesh_reduce(tag, to_cpu(data), reduce_fn)


def do_on_ordinals(target, data=(), ordinals=(0,)):
    if get_ordinal() in ordinals:
        return target(*data)
    return None


def save(data, file_or_path, master_only=True, global_master=False):
    """torch.save of data with its xla tensors on the CPU, by the master
    ordinal only (every ordinal with master_only=False); then, in replicas
    (xmp.spawn's threads), the replicas meet, so that none reads the file
    before it is whole. Called from the main thread, no replica waits."""
    cpu_data = to_cpu(data)
    if not master_only or is_master_ordinal(local=not global_master):
        torch.save(cpu_data, file_or_path)
    if threading.current_thread() is not threading.main_thread():
        rendezvous("torch_xla.core.xla_model.save")


def send_cpu_data_to_device(data, device):
    return to_device(data, device)


def set_rng_state(seed, device=None):
    _C.manual_seed(int(seed) & ((1 << 64) - 1), _index(device), shared=True)


def get_rng_state(device=None):
    return _C.manual_seed_of(_index(device))


class RateTracker:
    """Samples per second: the rate since the last call, smoothed, and the
    rate since the start (torch_xla's)."""

    def __init__(self, smooth_factor=None):
        self._smooth_factor = 0.4 if smooth_factor is None else smooth_factor
        self._start_time = time.time()
        self._partial_time = self._start_time
        self._partial_count = 0.0
        self._partial_rate = None
        self._count = 0.0

    def _update(self, now, rate):
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time = now
        self._partial_rate = rate

    def add(self, count):
        self._count += count

    def _smooth(self, current_rate):
        if self._partial_rate is None:
            return current_rate
        return (1 - self._smooth_factor) * current_rate + self._smooth_factor * self._partial_rate

    def rate(self):
        now = time.time()
        delta = now - self._partial_time
        report_rate = 0.0
        if delta > 0:
            report_rate = self._smooth(self._count / delta)
            self._update(now, report_rate)
        return report_rate

    def global_rate(self):
        delta = time.time() - self._start_time
        count = self._partial_count + self._count
        return count / delta if delta > 0 else 0.0
