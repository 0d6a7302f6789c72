"""Tensors: creation from Python data, and the methods of ordo.Tensor."""

import numbers

import numpy as np

from . import _C
from ._devices import Device, _ordinal

Tensor = _C.Tensor

_SUPPORTED = (np.float32, np.float64, np.int32, np.int64, np.bool_)


def _as_array(data, dtype):
    if isinstance(data, Tensor):
        data = data.numpy()
    if dtype is not None:
        return np.asarray(data, dtype=np.dtype(dtype))
    if isinstance(data, np.ndarray):
        return data
    array = np.asarray(data)
    # Python floats make float32 tensors, as in torch.
    if array.dtype == np.float64:
        return array.astype(np.float32)
    return array


def tensor(data, dtype=None, device=None):
    """A tensor on `device` (default: the calling thread's) holding a copy of
    `data`: nested lists, a scalar, a numpy array or another tensor."""
    array = _as_array(data, dtype)
    if array.dtype.type not in _SUPPORTED:
        raise TypeError(f"ordo has no dtype for {array.dtype}; use float32, float64, int32, int64 or bool")
    return _C.from_numpy(array, _ordinal(device))


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return [int(d) for d in shape]


def full(shape, value, dtype=np.float32, device=None):
    return _C.full(_shape(shape), value, np.dtype(dtype), _ordinal(device))


def zeros(shape, dtype=np.float32, device=None):
    return full(shape, 0, dtype, device)


def ones(shape, dtype=np.float32, device=None):
    return full(shape, 1, dtype, device)


_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def arange(start, stop=None, step=1, dtype=None, device=None):
    """[start, stop) by step, like numpy.arange. The bounds and step must be
    finite and the step nonzero; integers must fit int64, and so must the
    number of elements (ValueError otherwise)."""
    if stop is None:
        start, stop = 0, start
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(value, numbers.Integral) and not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"arange: {name} {value} does not fit int64")
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        dtype = np.int64 if integral else np.float32
    return _C.arange(start, stop, step, np.dtype(dtype), _ordinal(device))


def rand(shape, seed=0, dtype=np.float32, device=None):
    """Uniform in [0, 1); the same seed gives the same numbers on every run."""
    return _C.rand_uniform(_shape(shape), seed, 0.0, 1.0, np.dtype(dtype), _ordinal(device))


def randn(shape, seed=0, dtype=np.float32, device=None):
    """Standard normal; the same seed gives the same numbers on every run."""
    return _C.rand_normal(_shape(shape), seed, 0.0, 1.0, np.dtype(dtype), _ordinal(device))


def _operand(value, like):
    return value if isinstance(value, Tensor) else _C.scalar_like(value, like)


def _axes(dim):
    if dim is None:
        return []
    if isinstance(dim, numbers.Integral):
        return [int(dim)]
    return [int(d) for d in dim]


def _varargs_shape(args):
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return _shape(args[0])
    return _shape(args)


def _getitem(self, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        at = index.index(Ellipsis)
        fill = self.ndim - (len(index) - 1)
        index = index[:at] + (slice(None),) * fill + index[at + 1:]
    if len(index) > self.ndim:
        raise IndexError(f"too many indices ({len(index)}) for a tensor of rank {self.ndim}")
    result, axis, dropped = self, 0, []
    for i in index:
        size = result.shape[axis]
        if isinstance(i, slice):
            start, stop, step = i.indices(size) if (i.step or 1) > 0 else (None, None, i.step)
            if step is None or step <= 0:
                raise ValueError("slices with a negative step are not supported")
            result = _C.slice(result, axis, start, stop, step)
        elif isinstance(i, numbers.Integral):
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of range for axis {axis} of size {size}")
            i = int(i) % size
            result = _C.slice(result, axis, i, i + 1, 1)
            dropped.append(axis)
        else:
            raise TypeError(f"tensors are indexed by integers and slices, not {type(i).__name__}")
        axis += 1
    if dropped:
        result = _C.reshape(result, [d for a, d in enumerate(result.shape) if a not in dropped])
    return result


def _copy_(self, other):
    """In place: this tensor now holds other's value (broadcast and cast)."""
    if not isinstance(other, Tensor):
        other = tensor(other, dtype=self.dtype, device=self._device)
    value = _C.broadcast_to(_C.cast(other, self.dtype), list(self.shape))
    self._assign(value)
    return self


def _repr(self):
    return f"ordo.Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def _install_methods():
    methods = {
        "device": property(lambda self: Device(self._device)),
        "sum": lambda self, dim=None, keepdim=False: _C.sum(self, _axes(dim), keepdim),
        "mean": lambda self, dim=None, keepdim=False: _C.mean(self, _axes(dim), keepdim),
        "max": lambda self, dim=None, keepdim=False: _C.max(self, _axes(dim), keepdim),
        "min": lambda self, dim=None, keepdim=False: _C.min(self, _axes(dim), keepdim),
        "argmax": lambda self, dim=None, keepdim=False: _C.argmax(self, _axes(dim), keepdim),
        "reshape": lambda self, *shape: _C.reshape(self, _varargs_shape(shape)),
        "view": lambda self, *shape: _C.reshape(self, _varargs_shape(shape)),
        "transpose": lambda self, dim0, dim1: _C.transpose(self, dim0, dim1),
        "permute": lambda self, *dims: _C.permute(self, _varargs_shape(dims)),
        "broadcast_to": lambda self, shape: _C.broadcast_to(self, _shape(shape)),
        "astype": lambda self, dtype: _C.cast(self, np.dtype(dtype)),
        "index_select": lambda self, dim, index: _C.index_select(self, dim, index),
        "gather": lambda self, dim, index: _C.gather(self, dim, index),
        "matmul": lambda self, other: _C.matmul(self, other),
        "maximum": lambda self, other: _C.maximum(self, _operand(other, self)),
        "minimum": lambda self, other: _C.minimum(self, _operand(other, self)),
        "item": lambda self: self.numpy().item(),
        "tolist": lambda self: self.numpy().tolist(),
        "size": lambda self, dim=None: self.shape if dim is None else self.shape[dim],
        "copy_": _copy_,
        "__getitem__": _getitem,
        "__len__": lambda self: self.shape[0] if self.ndim else _raise_len(),
        "__repr__": _repr,
        "__array__": lambda self, dtype=None: self.numpy() if dtype is None else self.numpy().astype(dtype),
        "__bool__": lambda self: bool(self.numpy()),
        "__float__": lambda self: float(self.numpy()),
        "__int__": lambda self: int(self.numpy()),
    }
    for name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "logical_not"):
        # A pybind11 function set on a class does not bind self: wrap it.
        methods[name] = (lambda op: lambda self: op(self))(getattr(_C, name))
    for name, value in methods.items():
        setattr(Tensor, name, value)


def _raise_len():
    raise TypeError("len() of a 0-d tensor")


_install_methods()
