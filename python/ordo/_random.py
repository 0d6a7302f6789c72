"""Random state per device: the seeds of the random ops made on the device.

Every draw (ordo.dropout, ordo.rand_like) takes the next seed of its
device's generator and passes it to the graph as a fresh 0-d int64 tensor,
so a new mask each step compiles nothing new. A seed derives from (the
device's manual seed, its global ordinal, the draws it took since), so
devices seeded alike still draw different numbers, and a device's numbers
do not depend on what other devices or threads draw.

    ordo.manual_seed(0)                 # the calling thread's device
    y = ordo.dropout(x, 0.1)            # the same mask after each manual_seed(0)
"""

import numbers
import threading

import numpy as np

from . import _C
from ._devices import _ordinal

_MASK = (1 << 64) - 1
_DEFAULT_SEED = 0

# Locking: _lock guards _states (global ordinal -> [seed, draws taken, initializations taken]).
_lock = threading.Lock()
_states = {}


def _mix(z):
    """splitmix64's finalizer: every bit of z moves every bit of the result."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
    return z ^ (z >> 31)


def _checked_seed(seed):
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"manual_seed: the seed must be an int, got {type(seed).__name__}")
    seed = int(seed)
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"manual_seed: the seed must fit 64 bits, got {seed}")
    return seed & _MASK


def manual_seed(seed, device=None):
    """Seeds the generator of `device` (default: the calling thread's, as
    torch_xla's set_rng_state): its draws start over. In SPMD code each
    device's function seeds its own device."""
    seed = _checked_seed(seed)
    ordinal = _C.get_ordinal(_ordinal(device))
    with _lock:
        _states[ordinal] = [seed, 0, 0]


def manual_seed_all(seed):
    """Seeds the generator of every device of this process."""
    seed = _checked_seed(seed)
    ordinals = [_C.get_ordinal(d) for d in range(_C.num_devices())]
    with _lock:
        for ordinal in ordinals:
            _states[ordinal] = [seed, 0, 0]


def next_init_seed(device=None):
    """The next seed for initializing parameters on `device` (ordo.nn's
    layers), as a Python int: it derives from the device's manual seed and
    the initializations since, not from its ordinal, so that every device
    seeded alike builds a model with the same weights, as torch does."""
    ordinal = _C.get_ordinal(_ordinal(device))
    with _lock:
        state = _states.setdefault(ordinal, [_DEFAULT_SEED, 0, 0])
        seed, _, draw = state
        state[2] += 1
    return _mix((_mix(seed) + (draw + 1) * 0xD1B54A32D192ED03) & _MASK)


def next_seed(device=None):
    """The next seed of `device`'s generator (default: the calling thread's
    device), as a 0-d int64 tensor on that device."""
    index = _ordinal(device)
    ordinal = _C.get_ordinal(index)
    with _lock:
        state = _states.setdefault(ordinal, [_DEFAULT_SEED, 0, 0])
        seed, draw, _ = state
        state[1] += 1
    value = _mix((_mix((_mix(seed) + ordinal * 0x9E3779B97F4A7C15) & _MASK) + draw * 0xD1B54A32D192ED03) & _MASK)
    signed = value - (1 << 64) if value >= 1 << 63 else value
    return _C.from_numpy(np.array(signed, dtype=np.int64), index)
