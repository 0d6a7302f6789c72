"""nn.Module and nn.Parameter, as PyTorch 1.13's for what training needs."""

from collections import OrderedDict

import numpy as np

from .. import _C
from .._autograd import no_grad
from .._tensor import _dtype


class Parameter(_C.Tensor):
    """A tensor that a Module registers as its parameter: a second handle to
    data's value, requiring a gradient (a leaf). Ops on it give plain tensors."""

    def __init__(self, data, requires_grad=True):
        super().__init__(data.detach())  # its own autograd identity, the same value
        if requires_grad:
            self.requires_grad_()

    def __repr__(self):
        return f"Parameter(shape={self.shape}, dtype={self.dtype}, device={self.device})"


class Module:
    """Parameters and submodules are registered by assigning them as attributes, in order."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign to a Module before Module.__init__() ran")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table, {})
            if name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor):
        self._buffers[name] = tensor

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign a {type(param).__name__} as parameter '{name}' (ordo.nn.Parameter or None)")
        self._parameters[name] = param

    def add_module(self, name, module):
        self._modules[name] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- Walking the tree. ----
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self):
        return (m for _, m in self.named_children())

    def _named(self, table, prefix, recurse):
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True):
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    # ---- Modes and conversions. ----
    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def apply(self, fn):
        """fn(module) for every submodule, children before their parent, then self (torch's order)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad=True):
        """Every parameter starts (True) or stops (False) requiring a gradient: a frozen layer's
        parameters get no .grad from backward()."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else _C.full(list(p.shape), 0, p.dtype, p._device)

    def to(self, dtype):
        """Every floating parameter and buffer cast to dtype, keeping the parameters' identity (optimizers made
        afterwards see them)."""
        dtype = _dtype(dtype)
        with no_grad():
            for module in self.modules():
                for table in (module._parameters, module._buffers):
                    for name, value in table.items():
                        # Only floating values, as torch's (num_batches_tracked stays int64).
                        if value is not None and value.dtype.kind == "f" and value.dtype != dtype:
                            requires_grad = value.requires_grad
                            value._rebind(_C.cast(value, dtype))
                            if requires_grad:
                                value.requires_grad_()
        return self

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    # ---- State. ----
    def state_dict(self):
        """An OrderedDict of every parameter and buffer by PyTorch's key ('0.weight'), detached."""
        return OrderedDict((name, value.detach()) for name, value in self._named_state())

    def _named_state(self):
        """Each module's parameters, then its buffers, module by module (torch's order)."""
        for prefix, module in self.named_modules():
            for name, value in list(module._parameters.items()) + list(module._buffers.items()):
                if value is not None:
                    yield (f"{prefix}.{name}" if prefix else name), value

    def load_state_dict(self, state_dict, strict=True):
        """Copies the values into this module's parameters and buffers (which stay what they are:
        leaves that require a gradient). strict: every key must match, as PyTorch's."""
        own = OrderedDict(self._named_state())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict and (missing or unexpected):
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        for key, value in state_dict.items():
            if key in own and tuple(value.shape) != tuple(own[key].shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                              f"checkpoint, the shape in current model is {tuple(own[key].shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for key, value in state_dict.items():
                if key in own:
                    own[key].copy_(value)
        return {"missing_keys": missing, "unexpected_keys": unexpected}

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(module).replace("\n", "\n  ") for name, module in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n  " + "\n  ".join(lines) + "\n)" if lines else ")")
