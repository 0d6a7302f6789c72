"""Devices, the calling thread's device, and spawn."""

import numbers

import numpy as np

from . import _C


class Device:
    """A local device, as torch_xla's xla_device() gives (printed 'ordo:N')."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = int(index)

    def __repr__(self):
        return f"ordo:{self.index}"

    def __eq__(self, other):
        return isinstance(other, Device) and other.index == self.index

    def __hash__(self):
        return hash(("ordo", self.index))

    def __int__(self):
        return self.index

    __index__ = __int__


def _short_list(values, keep=4):
    """A list as an error message shows it: a long one as its first and last few, and how many in all."""
    if len(values) <= 2 * keep + 1:
        return repr(values)
    return f"[{', '.join(map(repr, values[:keep]))}, ..., {', '.join(map(repr, values[-keep:]))}] ({len(values)} in all)"


def _ordinal_list(values, what):
    """values (a replica group, rendezvous' replicas) as a list of ints; what is not a list of integers that
    fit an ordinal is a ValueError that starts with `what` (a negative or absent device is the runtime's
    error: it knows the world)."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{what} must be a list of device ordinals, got {type(values).__name__} {values!r:.60}")
    values = list(values)
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{what} must be a list of device ordinals; it holds {type(value).__name__} "
                             f"{value!r:.40}")
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"{what} names device {value}, which does not exist")
    return [int(value) for value in values]


def _ordinal(device):
    """A device argument as an ordinal: None is the calling thread's device
    (-1 to ordo._C); an ordinal, an ordo.Device or 'ordo:N' must name an
    existing device (a negative ordinal is an error, not the current device)."""
    if device is None:
        return -1
    if isinstance(device, Device):
        index = device.index
    elif isinstance(device, numbers.Integral) and not isinstance(device, (bool, np.bool_)):
        index = int(device)
    elif isinstance(device, str) and device.startswith("ordo:"):
        if not device[5:].isdecimal():
            raise ValueError(f"'{device}' is not a device such as 'ordo:0'")
        index = int(device[5:])
    else:
        raise TypeError(f"expected an ordo.Device, an ordinal or None, got {device!r}")
    if index < 0:
        count = _C.num_devices()
        raise ValueError(f"device {index} does not exist: this runtime has {count} devices, 0 to {count - 1} "
                         "(None is the calling thread's device)")
    return index


def init(num_devices=None):
    """Starts the runtime with num_devices local devices (default:
    ORDO_NUM_DEVICES, else 4). Optional: the first use starts it."""
    if num_devices is None:
        _C.num_devices()
    else:
        _C.init(int(num_devices))


def shutdown():
    """Waits for every device, then stops the runtime (init may follow).
    A spawned function may not call it (ValueError)."""
    _C.shutdown()


def xla_device():
    """The calling thread's device; its index counts this process's devices
    ('ordo:0', 'ordo:1' in every process, as torch_xla's 'xla:0')."""
    return Device(_C.current_device())


device = xla_device


def devices():
    return [Device(i) for i in range(_C.num_devices())]


def set_device(dev):
    _C.set_current_device(_ordinal(dev))


def bind_thread_to_device(dev):
    """Pins the calling thread as the driver of a device, as MPI binds a rank
    to a core: on the device's worker's CPU when devices share the CPUs, on
    a CPU of its own when there are two per device. spawn does this. Threads
    started by a bound thread inherit its CPU; ORDO_CPU_BIND=none turns all
    binding off, as does ordo.torch_xla in a process of several devices
    unless ORDO_CPU_BIND=cores."""
    _C.bind_thread_to_device(_ordinal(dev))


def get_ordinal():
    """The calling thread's device, as a global ordinal: its position in
    the world of every process's devices."""
    return _C.get_ordinal()


def get_local_ordinal():
    """The calling thread's device among the devices of its host, as
    torch_xla counts it: the process's rank among the host's processes
    times the devices of a process, plus the device's index (with one
    process, its index)."""
    return _C.get_local_ordinal()


def world_size():
    """Every device of the job, of every process."""
    return _C.world_size()


xrt_world_size = world_size


def is_master_ordinal(local=True):
    """Whether the calling thread's device is the first of its host (local)
    or of the whole job (local=False)."""
    return (get_local_ordinal() if local else get_ordinal()) == 0


def spawn(fn, args=(), nprocs=None):
    """Calls fn(ordinal, *args) on a thread per device of this process, with
    that device as the thread's device and the thread bound to it
    (ordo.bind_thread_to_device), and returns the results by ordinal; the
    ordinal is the device's global one (get_ordinal(): with one process,
    its index; under mpirun, the process's rank times its devices plus the
    index), as torch_xla's spawn gives it. If a call raises, its device is
    marked failed (its peers' collectives fail promptly instead of waiting)
    and spawn raises the first error, saying which ordinal raised it; the
    next spawn in this process starts clean (see ordo::spawn in
    include/ordo/runtime.h), while until then the caller's collectives that
    need the device fail at once. A
    device whose call returned is absent until spawn returns: a peer waiting
    for a collective or rendezvous it never joined fails promptly too. A
    spawn of every device returns once the devices ran what their calls
    queued. With nprocs below the number of devices, collectives over every
    device wait for the missing ones: give them replica groups.

    Ctrl-C while spawn waits declares every spawned device failed (until
    the next spawn, or shutdown) and interrupts what it queued: the threads' collectives and
    rendezvous fail at once with CollectiveError naming the interrupt.
    spawn gives the threads 0.3 s to end (a second Ctrl-C cuts it short),
    then raises the KeyboardInterrupt, with a note of what their calls
    raised and which still run: those are left behind, and the exit does
    not wait for them. Calling shutdown in fn is refused (ValueError). The
    threads run in C++: ordo/_C's _spawn, where the GIL is taken for each
    call."""
    return _C._spawn(fn, args, nprocs)
