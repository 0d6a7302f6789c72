"""Collectives with torch_xla's xla_model signatures (2.1)."""

import numbers

import numpy as np

from . import _C
from ._devices import _ordinal_list, _short_list, world_size
from ._tensor import Tensor

REDUCE_SUM = "sum"
REDUCE_MUL = "mul"
REDUCE_AND = "and"
REDUCE_OR = "or"
REDUCE_MIN = "min"
REDUCE_MAX = "max"


def _scale(scale, what):
    """scale as a float: a real number (Python's or numpy's), not a string,
    and not a bool (True where a scale goes is a misplaced argument)."""
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{what}: scale must be a real number, got {type(scale).__name__} {scale!r}")
    return float(scale)


def _groups(groups, what):
    """groups (None, or a list of replica groups, each a list of device ordinals) as lists of ints; any other
    value is a ValueError naming the groups."""
    if groups is None:
        return None
    if isinstance(groups, (str, bytes, dict)) or not hasattr(groups, "__iter__"):
        raise ValueError(f"{what}: groups must be a list of replica groups (lists of device ordinals), got "
                         f"{type(groups).__name__} {groups!r:.60}")
    groups = list(groups)
    return [_ordinal_list(group, f"{what}: groups {_short_list(groups):.200}: replica group {i}")
            for i, group in enumerate(groups)]


def _group_size(groups):
    """The size of the calling device's replica group (groups as _groups gives them)."""
    return world_size() if not groups else len(groups[0])


def _check_output(output, value, shape, what):
    """Checks output= before anything is recorded: a wrong one must not leave
    a collective on the device's chain."""
    if output is None:
        return
    if not isinstance(output, Tensor):
        raise TypeError(f"{what}: output must be an ordo.Tensor, got {type(output).__name__}")
    if output.dtype != value.dtype:
        raise TypeError(f"{what}: output has dtype {output.dtype}, the result {value.dtype}")
    if tuple(output.shape) != tuple(shape):
        raise ValueError(f"{what}: output has shape {tuple(output.shape)}, the result {tuple(shape)}")


def _result_shape(value, dim, what, multiply=1, divide=1):
    """value's shape with dimension dim multiplied or divided (exactly)."""
    shape = list(value.shape)
    if not -len(shape) <= dim < len(shape):
        raise ValueError(f"{what}: dim {dim} is out of range for a tensor of rank {len(shape)}")
    if divide < 1 or shape[dim] % divide:
        raise ValueError(f"{what}: dimension {dim} of shape {tuple(shape)} does not split into {divide} equal parts")
    shape[dim] = shape[dim] * multiply // divide
    return shape


def _into(output, result):
    if output is None:
        return result
    output.copy_(result)
    return output


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor gives a new tensor; a list is reduced in place, as one
    coalesced collective, and returned. scale is a real number (a bool or
    a string is a TypeError). pin_layout is accepted for compatibility
    (ordo has one dense row-major layout)."""
    del pin_layout
    scale = _scale(scale, "all_reduce")
    groups = _groups(groups, "all_reduce")
    if isinstance(inputs, Tensor):
        return _C.all_reduce(reduce_type, inputs, scale, groups)
    inputs = list(inputs)
    _C.all_reduce_inplace(reduce_type, inputs, scale, groups)
    return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    del pin_layout
    groups = _groups(groups, "all_gather")
    if output is not None:
        _check_output(output, value, _result_shape(value, dim, "all_gather", multiply=_group_size(groups)),
                      "all_gather")
    return _into(output, _C.all_gather(value, dim, groups))


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,
                   pin_layout=True):
    """A tensor, or a list of tensors (one collective each, in order). Every
    argument is checked before the first is recorded."""
    del pin_layout
    scale = _scale(scale, "reduce_scatter")
    groups = _groups(groups, "reduce_scatter")
    single = isinstance(input, Tensor)
    inputs = [input] if single else list(input)
    outputs = [output] if single else (list(output) if output is not None else [None] * len(inputs))
    if len(outputs) != len(inputs):
        raise ValueError(f"reduce_scatter: {len(outputs)} outputs for {len(inputs)} inputs")
    if shard_count != _group_size(groups):
        raise ValueError(f"reduce_scatter: shard_count {shard_count} must equal the group size {_group_size(groups)}")
    for x, out in zip(inputs, outputs):
        shape = _result_shape(x, scatter_dim, "reduce_scatter", divide=shard_count)
        _check_output(out, x, shape, "reduce_scatter")
    results = [_into(out, _C.reduce_scatter(reduce_type, x, scale, scatter_dim, shard_count, groups))
               for x, out in zip(inputs, outputs)]
    if single:
        return results[0]
    return output if output is not None else results


def all_to_all(value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True):
    del pin_layout
    return _C.all_to_all(value, split_dimension, concat_dimension, split_count, _groups(groups, "all_to_all"))


def collective_permute(value, pairs):
    """pairs: [source, target] ordinals; a device that is no target gets zeros."""
    if isinstance(pairs, (str, bytes, dict)) or not hasattr(pairs, "__iter__"):
        raise ValueError(f"collective_permute: pairs must be a list of [source, target] pairs, got "
                         f"{type(pairs).__name__} {pairs!r:.60}")
    pairs = list(pairs)
    checked = [_ordinal_list(pair, f"collective_permute: pairs {_short_list(pairs):.200}: pair {i}")
               for i, pair in enumerate(pairs)]
    if any(len(pair) != 2 for pair in checked):
        raise ValueError(f"collective_permute: pairs {_short_list(pairs):.200}: each pair must be [source, target]")
    return _C.collective_permute(value, [tuple(pair) for pair in checked])


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    """In place: every device gets the root's tensors (a group without the
    root gets zeros, as in torch_xla)."""
    del pin_layout
    tensors = list(tensors)
    _C.collective_broadcast(tensors, int(root_ordinal), _groups(groups, "collective_broadcast"))
    return tensors

