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

import numpy as np

from . import _C
from ._devices import _ordinal

_MASK = (1 << 64) - 1


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
    _C.manual_seed(_checked_seed(seed), _ordinal(device))


def manual_seed_all(seed):
    """Seeds the generator of every device of this process."""
    _C.manual_seed_all(_checked_seed(seed))


def initial_seed(device=None):
    """The seed `device`'s generator was last given (torch_xla's get_rng_state)."""
    return _C.manual_seed_of(_ordinal(device))


def next_init_seed(device=None):
    """The next seed for initializing parameters on `device` (ordo.nn's
    layers), as a Python int: it derives from the device's manual seed and
    the initializations since, not from its ordinal, so that every device
    seeded alike builds a model with the same weights, as torch does."""
    return _C.next_init_seed(_ordinal(device))


def next_seed(device=None):
    """The next seed of `device`'s generator (default: the calling thread's
    device), as a 0-d int64 tensor on that device."""
    return _C.next_seed(_ordinal(device))
