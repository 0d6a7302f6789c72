"""torch.manual_seed in a replica seeds that replica's xla device.

Replicas are threads of one process: one torch generator would be raced
by all of them, and replicas that seed alike would not draw alike. So
torch.manual_seed, besides torch's own generators, seeds the calling
thread's ordo device (ordo/random.h), whose draws depend on nothing else.
"""

import functools

import torch

from .. import _C


def _seed_device(seed):
    if not _C.is_initialized():
        return
    _C.manual_seed(int(seed) & ((1 << 64) - 1), -1)


def install_manual_seed_hook():
    original = torch.manual_seed
    if getattr(original, "_ordo_seeds_devices", False):
        return

    @functools.wraps(original)
    def manual_seed(seed):
        generator = original(seed)
        _seed_device(seed)
        return generator

    manual_seed._ordo_seeds_devices = True
    torch.manual_seed = manual_seed
    torch.random.manual_seed = manual_seed
