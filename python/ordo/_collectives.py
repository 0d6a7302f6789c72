"""Collectives with torch_xla's xla_model signatures (2.1)."""

from . import _C
from ._devices import world_size
from ._tensor import Tensor

REDUCE_SUM = "sum"
REDUCE_MUL = "mul"
REDUCE_AND = "and"
REDUCE_OR = "or"
REDUCE_MIN = "min"
REDUCE_MAX = "max"


def _groups(groups):
    if groups is None:
        return None
    return [[int(d) for d in group] for group in groups]


def _into(output, result):
    if output is None:
        return result
    output.copy_(result)
    return output


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor gives a new tensor; a list is reduced in place, as one
    coalesced collective, and returned. pin_layout is accepted for
    compatibility (ordo has one dense row-major layout)."""
    del pin_layout
    if isinstance(inputs, Tensor):
        return _C.all_reduce(reduce_type, inputs, float(scale), _groups(groups))
    inputs = list(inputs)
    _C.all_reduce_inplace(reduce_type, inputs, float(scale), _groups(groups))
    return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    del pin_layout
    return _into(output, _C.all_gather(value, dim, _groups(groups)))


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,
                   pin_layout=True):
    del pin_layout
    if isinstance(input, Tensor):
        return _into(output, _C.reduce_scatter(reduce_type, input, float(scale), scatter_dim, shard_count,
                                               _groups(groups)))
    results = [_C.reduce_scatter(reduce_type, x, float(scale), scatter_dim, shard_count, _groups(groups))
               for x in input]
    if output is None:
        return results
    for out, result in zip(output, results):
        out.copy_(result)
    return output


def all_to_all(value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True):
    del pin_layout
    return _C.all_to_all(value, split_dimension, concat_dimension, split_count, _groups(groups))


def collective_permute(value, pairs):
    """pairs: [source, target] ordinals; a device that is no target gets zeros."""
    return _C.collective_permute(value, [(int(s), int(t)) for s, t in pairs])


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    """In place: every device gets the root's tensors (a group without the
    root gets zeros, as in torch_xla)."""
    del pin_layout
    tensors = list(tensors)
    _C.collective_broadcast(tensors, int(root_ordinal), _groups(groups))
    return tensors


def reduce_gradients(grads, groups=None):
    """In-place mean of the gradients over the devices: one coalesced sum
    all_reduce scaled by 1 / world size."""
    grads = list(grads)
    if grads:
        count = world_size() if groups is None else len(groups[0])
        all_reduce(REDUCE_SUM, grads, scale=1.0 / count, groups=groups)
    return grads
