"""torch.manual_seed in a replica seeds that replica, not the process.

Replicas are threads of one process, and torch has one CPU generator: four
replicas that each call torch.manual_seed(1) and build their model would
draw its initial weights from that one generator in turns, each getting
different weights (and different ones from run to run). So torch.manual_seed
called in a thread other than the main one also gives the thread a
generator of its own, from which that thread's in-place draws on CPU
tensors without a generator (Tensor.uniform_, normal_: every module's
reset_parameters through torch.nn.init) are taken, and it seeds the thread's ordo
device (ordo/random.h), whose random ops depend on nothing else. The main
thread keeps torch's behaviour.
"""

import functools
import threading

import torch

from .. import _C

_replica = threading.local()


def _seed_device(seed):
    if _C.is_initialized():
        _C.manual_seed(int(seed) & ((1 << 64) - 1), -1)


def _generator():
    """The calling replica's CPU generator, or None (torch's own)."""
    return getattr(_replica, "generator", None)


def _with_replica_generator(draw):
    """Tensor.<draw>, taking the replica's generator for a CPU tensor when
    the caller gives none."""

    @functools.wraps(draw)
    def method(tensor, *args, generator=None, **kwargs):
        if generator is None and tensor.device.type == "cpu":
            generator = _generator()
        return draw(tensor, *args, generator=generator, **kwargs)

    return method


def install_manual_seed_hook():
    original = torch.manual_seed
    if getattr(original, "_ordo_seeds_replicas", False):
        return

    @functools.wraps(original)
    def manual_seed(seed):
        result = original(seed)
        if threading.current_thread() is not threading.main_thread():
            _replica.generator = torch.Generator().manual_seed(int(seed))
        _seed_device(seed)
        return result

    manual_seed._ordo_seeds_replicas = True
    torch.manual_seed = manual_seed
    torch.random.manual_seed = manual_seed
    for name in ("uniform_", "normal_"):
        setattr(torch.Tensor, name, _with_replica_generator(getattr(torch.Tensor, name)))
