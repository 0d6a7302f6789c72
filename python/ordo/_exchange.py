"""Host-side exchange between devices: rendezvous and mesh_reduce.

Both are the communicator's exchange (ordo::rendezvous in C++), which
meets the participants outside any graph with a collective's rules: a
participant that waits past the collective timeout, whose peer is failed
or absent (its spawn function raised or returned), whose peers wait
elsewhere (another tag or replicas), or whose wait is interrupted (Ctrl-C)
gets a CollectiveError instead of waiting forever. Python only pickles."""

import pickle

from . import _C
from ._devices import _ordinal_list


def rendezvous(tag, payload=b"", replicas=()):
    """Every participant (replicas, or every device when empty) calls this
    with the same tag; returns each participant's payload (bytes) in ordinal
    order."""
    if not isinstance(tag, str):
        raise TypeError(f"rendezvous: the tag must be a str, got {type(tag).__name__}")
    return _C.rendezvous(tag, bytes(payload), _ordinal_list(replicas, "rendezvous: replicas"))


def _to_host(value):
    if isinstance(value, _C.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v) for v in value)
    return value


def mesh_reduce(tag, data, reduce_fn):
    """Applies reduce_fn to the list of every device's data (tensors are
    read to numpy first; anything picklable works) and returns the result."""
    payloads = rendezvous(tag, pickle.dumps(_to_host(data)))
    return reduce_fn([pickle.loads(p) for p in payloads])
