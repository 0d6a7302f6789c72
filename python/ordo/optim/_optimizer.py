"""The optimizer base class: parameter groups, state, zero_grad, state_dict.

As torch.optim.Optimizer (1.13). A step builds the update into the lazy
graph of the parameters' device and rebinds every parameter to its new value
(Tensor._assign), so the model's handles see it after the next mark_step.
State tensors are never changed in place: a step stores new tensors in the
state dicts, so a state_dict() taken earlier keeps the values it had."""

from collections.abc import MutableMapping
import numbers

import numpy as np

from .. import _C
from .._autograd import enable_grad, no_grad  # noqa: F401 - the optimizers' modules import no_grad from here
from .._tensor import Tensor, tensor


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class _ByIdentity(MutableMapping):
    """A dict keyed by tensors' identity: a tensor's == is elementwise, so
    tensors cannot be keys of a plain dict. Keeps each key alive."""

    def __init__(self):
        self._items = {}

    def __getitem__(self, key):
        return self._items[id(key)][1]

    def __setitem__(self, key, value):
        self._items[id(key)] = (key, value)

    def __delitem__(self, key):
        del self._items[id(key)]

    def __iter__(self):
        return (key for key, _ in list(self._items.values()))

    def __len__(self):
        return len(self._items)

    def __contains__(self, key):
        return id(key) in self._items


class Scalars:
    """One step's hyperparameters as 0-d device-data tensors, so that a new
    value (a learning rate schedule, Adam's bias corrections) changes the
    graph's inputs, not the graph: a Python number would be a constant in it
    and recompile it. A tensor is made once per step for each key (a name and
    the group or parameter it belongs to), dtype and device; keys name roles,
    never values, so two equal values never share a tensor in one step and
    not in the next."""

    def __init__(self):
        self._made = {}

    def __call__(self, key, value, like):
        made_key = (key, str(like.dtype), like._device)
        made = self._made.get(made_key)
        if made is None:
            made = self._made[made_key] = tensor(float(value), dtype=like.dtype, device=like._device)
        return made


def clone(value):
    """A new handle of value's value (torch.clone): a later in-place rebind
    of value (a gradient accumulated into, or zeroed) leaves it alone."""
    return _C.reshape(value, list(value.shape))


def _to_device_of(param, value):
    """A loaded state value for param: a tensor moves to param's device and
    dtype (a numpy array or a torch tensor too); anything else is kept."""
    if isinstance(value, Tensor):
        if value._device == param._device and value.dtype == param.dtype:
            return value
        return tensor(value.numpy(), dtype=param.dtype, device=param._device)
    if isinstance(value, np.ndarray) or (hasattr(value, "numpy") and hasattr(value, "shape")):
        return tensor(np.asarray(value.numpy() if hasattr(value, "numpy") else value), dtype=param.dtype,
                      device=param._device)
    return value


def _step_count(value):
    """Adam's step as a float, also from torch's 0-d or 1-element tensor."""
    if isinstance(value, numbers.Real):
        return float(value)
    return float(np.asarray(value.numpy() if hasattr(value, "numpy") else value).reshape(()))


class Optimizer:
    """Base of ordo.optim's optimizers; subclasses define step()."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = _ByIdentity()
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors or of dicts, not a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {value}" for key, value in sorted(group.items()) if key != "params"]
        return "\n".join(lines + [")"])

    def add_param_group(self, param_group):
        """Adds a group ({'params': ..., options}); options it lacks come
        from the optimizer's defaults. A parameter may be in one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize ordo.Tensors, got {type(p).__name__}")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter group holds a parameter more than once")
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in taken for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group = {"params": params}
        for name, default in self.defaults.items():
            value = param_group.get(name, default)
            if value is required:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group[name] = value
        group.update((k, v) for k, v in param_group.items() if k not in group)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group):
        """Subclasses refuse invalid options here (ValueError), before the
        group is added."""

    def zero_grad(self, set_to_none=True):
        """Every parameter's gradient becomes None, or zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._assign(_C.full(list(p.shape), 0, p.grad.dtype, p._device))

    def _params(self):
        return [p for group in self.param_groups for p in group["params"]]

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]},
        parameters numbered in group order, as torch's."""
        index = {id(p): i for i, p in enumerate(self._params())}
        groups, start = [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads a state_dict() of an optimizer over parameters of the same
        shapes in the same groups (also one of torch's, its tensors copied to
        the parameters' devices). Checks everything before changing anything."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, loaded in zip(self.param_groups, groups):
            if len(mine["params"]) != len(loaded["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        by_index = {}
        for mine, loaded in zip(self.param_groups, groups):
            by_index.update(zip(loaded["params"], mine["params"]))
        state = _ByIdentity()
        for index, values in state_dict["state"].items():
            if index not in by_index:
                raise ValueError(f"loaded state dict has state for parameter {index}, which no group holds")
            p = by_index[index]
            state[p] = {key: _step_count(v) if key == "step" else _to_device_of(p, v) for key, v in values.items()}
        self.state = state
        for mine, loaded in zip(self.param_groups, groups):
            mine.update((k, v) for k, v in loaded.items() if k != "params")

    def _run_closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()
