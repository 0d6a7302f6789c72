"""Between torch tensors on the xla device and ordo tensors: the one place
the torch_xla front end converts, so that it can call ordo's own
implementation of each collective, step and exchange."""

import torch

from .. import _torch


def is_xla_tensor(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "xla"


def to_ordo(tensor, what):
    """The ordo value behind an xla tensor (no copy). A CPU tensor or any
    other value is a clear error naming the call."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: expected a torch tensor on the xla device, got {type(tensor).__name__}")
    if tensor.device.type != "xla":
        raise ValueError(f"{what}: expected a tensor on the xla device, got one on {tensor.device} "
                         "(move it with .to(xm.xla_device()) first)")
    return _torch.to_ordo(tensor)


def from_ordo(value):
    return _torch.from_ordo(value)


def set_value(tensor, value):
    """Rebinds an xla tensor to value, in place (an in-place collective)."""
    _torch.set_value(tensor, value)


def to_cpu(data):
    """data with every xla tensor in it copied to the CPU (lists, tuples,
    dicts nested; other values as they are)."""
    if is_xla_tensor(data):
        return data.cpu()
    if isinstance(data, (list, tuple)):
        return type(data)(to_cpu(x) for x in data)
    if isinstance(data, dict):
        return {k: to_cpu(v) for k, v in data.items()}
    return data


def to_device(data, device):
    """data with every CPU tensor in it moved to device."""
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, (list, tuple)):
        return type(data)(to_device(x, device) for x in data)
    if isinstance(data, dict):
        return {k: to_device(v, device) for k, v in data.items()}
    return data
