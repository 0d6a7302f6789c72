"""torch.manual_seed in a replica seeds that replica, not the process.

Replicas are threads of one process, and torch has one CPU generator: four
replicas that each call torch.manual_seed(1) and build their model would
draw its initial weights from that one generator in turns, each getting
different weights (and different ones from run to run). So torch.manual_seed
called in a thread other than the main one also gives the thread a
generator of its own, from which that thread's draws on the CPU without a
generator are taken: the in-place ones (Tensor.uniform_, normal_: every
module's reset_parameters through torch.nn.init; random_: a DataLoader's
shuffling) and the factories (torch.rand, randn, randint, randperm, normal,
bernoulli, multinomial: a program's data, as torch_xla's tests make it).
It also seeds the thread's ordo device (ordo/random.h), whose random ops
depend on nothing else. The main thread keeps torch's behaviour.
Draws that take no generator (torch.rand_like, dropout on the CPU) still
share torch's one generator.
"""

import functools
import threading

import torch

from .. import _C

_replica = threading.local()


def _seed_device(seed):
    if _C.is_initialized():
        _C.manual_seed(int(seed) & ((1 << 64) - 1), -1, shared=True)


def _generator():
    """The calling replica's CPU generator, or None (torch's own)."""
    return getattr(_replica, "generator", None)


# The draws that take a generator= argument, on tensors and in torch.
_TENSOR_DRAWS = ("uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
                 "cauchy_", "bernoulli", "multinomial")
_TORCH_DRAWS = ("rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson")


def _draws_on_cpu(args, kwargs):
    """Whether a draw lands on the CPU: its device= or out=, else its first
    tensor argument, else torch's default (the CPU)."""
    if kwargs.get("device") is not None:
        return torch.device(kwargs["device"]).type == "cpu"
    for value in (kwargs.get("out"), *args):
        if isinstance(value, torch.Tensor):
            return value.device.type == "cpu"
    return True


def _with_replica_generator(draw):
    """draw, taking the replica's generator for a draw on the CPU when the
    caller gives none."""

    @functools.wraps(draw)
    def with_generator(*args, generator=None, **kwargs):
        if generator is None and _draws_on_cpu(args, kwargs):
            generator = _generator()
        return draw(*args, generator=generator, **kwargs)

    return with_generator


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
    for name in _TENSOR_DRAWS:
        setattr(torch.Tensor, name, _with_replica_generator(getattr(torch.Tensor, name)))
    for name in _TORCH_DRAWS:
        setattr(torch, name, _with_replica_generator(getattr(torch, name)))
