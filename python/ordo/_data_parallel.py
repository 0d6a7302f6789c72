"""Data-parallel training as torch_xla's xla_model: every device computes
gradients on its part of the batch, reduce_gradients averages them over the
devices, and the optimizer then makes the same step everywhere."""

from . import _C
from ._autograd import no_grad
from ._collectives import REDUCE_SUM, _group_size, _groups, all_reduce, collective_broadcast


def _fetch_gradients(optimizer):
    """The gradients of an optimizer's parameters, in group order, skipping
    the parameters that have none."""
    return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    """In place: every gradient becomes its mean over the devices (of the
    calling device's replica group with groups), as one coalesced sum
    all_reduce scaled by 1 / the group size.

    optimizer is an optimizer (its parameters' gradients; returns None, as
    torch_xla) or a list of gradients (returned)."""
    del pin_layout
    by_optimizer = hasattr(optimizer, "param_groups")
    grads = _fetch_gradients(optimizer) if by_optimizer else list(optimizer)
    groups = _groups(groups, "reduce_gradients")
    count = _group_size(groups)
    if grads and count > 1:
        all_reduce(REDUCE_SUM, grads, scale=1.0 / count, groups=groups)
    return None if by_optimizer else grads


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):  # noqa: B006 - torch_xla's signature
    """reduce_gradients(optimizer), then optimizer.step(**optimizer_args),
    whose result it returns; with barrier, mark_step() runs the step."""
    reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
    result = optimizer.step(**optimizer_args)
    if barrier:
        _C.mark_step()
    return result


def broadcast_master_param(model):
    """In place: every device's parameters (and buffers) become ordinal 0's.
    model is a module (its parameters() and buffers()) or a sequence of
    tensors. Runs the broadcast (mark_step), as torch_xla."""
    if hasattr(model, "parameters"):
        tensors = list(model.parameters()) + (list(model.buffers()) if hasattr(model, "buffers") else [])
    else:
        tensors = list(model)
    if tensors:
        with no_grad():  # parameters stay leaves: the broadcast is no part of the model
            collective_broadcast(tensors, root_ordinal=0)
    _C.mark_step()
