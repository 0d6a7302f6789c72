"""Tensors: creation from Python data, and the methods of ordo.Tensor."""

import numbers

import numpy as np

from . import _C
from ._devices import Device, _ordinal

Tensor = _C.Tensor

_DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_)
bfloat16 = _C.bfloat16  # numpy has none: a tensor of it reads back as float32


def _dtype(dtype):
    """A dtype argument as _C takes it: ordo.bfloat16, else a numpy dtype."""
    return bfloat16 if dtype == bfloat16 else np.dtype(dtype)


def _ordo_dtype(dtype):
    dtype = _dtype(dtype)
    if dtype != bfloat16 and dtype.type not in _DTYPES:
        raise TypeError(f"ordo has no dtype {dtype}; use bfloat16, float16, float32, float64, int32, int64 or bool")
    return dtype


def _int_text(value):
    try:
        return str(value)
    except ValueError:  # beyond Python's digit limit for str()
        return f"of {int(value).bit_length()} bits"


def _out_of_bounds(value, dtype):
    return OverflowError(f"Python integer {_int_text(value)} out of bounds for {np.dtype(dtype)}")


def _checked_cast(array, dtype):
    """Python data, as the array numpy made of it, cast to dtype the way
    numpy 2 converts Python numbers: integers must fit an integer dtype,
    floats are truncated into one but NaN and infinities are refused."""
    if dtype.kind == "i" and array.size and array.dtype.kind in "iubf":
        info = np.iinfo(dtype)
        if array.dtype.kind == "f":
            if np.isnan(array).any():
                raise ValueError(f"cannot convert float NaN to {dtype}")
            if np.isinf(array).any():
                raise OverflowError(f"cannot convert float infinity to {dtype}")
            # -info.min is a power of two, exact as a float, unlike info.max.
            bad = array[(np.trunc(array) < info.min) | (np.trunc(array) >= -float(info.min))]
            if bad.size:
                raise OverflowError(f"float {bad.flat[0]} out of bounds for {dtype}")
        else:
            low, high = int(array.min()), int(array.max())
            if low < info.min or high > info.max:
                raise _out_of_bounds(low if low < info.min else high, dtype)
    return array.astype(dtype, copy=False)


def _python_data(data, dtype):
    """An array of Python data (lists, numbers) for ordo.tensor."""
    array = np.asarray(data)
    if array.dtype == object:
        # Only ints beyond int64 (or no numbers) make numpy hold objects.
        if dtype is not None and dtype.kind in "fb":
            return np.asarray(data, dtype=dtype)  # ints of any size convert
        wide = [v for v in array.flat if isinstance(v, numbers.Integral) and not -2**63 <= v < 2**63]
        if wide:
            raise _out_of_bounds(wide[0], dtype or np.int64)
        return array  # not numbers: from_numpy names the dtype it refuses
    if array.dtype.kind not in "biuf":
        return array  # strings, complex: likewise, even with a dtype to cast to
    if dtype is None:
        # Python floats make float32 tensors, as in torch; ints beyond int64
        # (numpy's uint64) are refused, as torch does.
        dtype = np.dtype(np.float32 if array.dtype == np.float64 else
                         np.int64 if array.dtype.kind == "u" else array.dtype)
    return _checked_cast(array, dtype)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A tensor on `device` (default: the calling thread's) holding a copy of
    `data`: nested lists, a scalar, a numpy array or another tensor.

    Without dtype, Python floats make float32, Python ints int64; a numpy
    array keeps its dtype, in native byte order whatever its own, and
    numpy's integer types that ordo lacks are converted exactly: int8,
    int16, uint8 and uint16 to int32, uint32 to int64, uint64 to int64 when
    every value fits (else OverflowError). Complex, string and object
    arrays raise TypeError. With dtype, Python numbers convert as in
    numpy 2 (an int out of the dtype's range raises OverflowError, a NaN into
    an integer dtype ValueError) and arrays as numpy's astype. bfloat16,
    which numpy lacks, is made from float32 values rounded as torch does."""
    if dtype is not None:
        dtype = _ordo_dtype(dtype)
    if dtype == bfloat16:
        result = _C.cast(tensor(data, np.float32, device), bfloat16)
    else:
        if isinstance(data, Tensor):
            data = data.numpy()
        if isinstance(data, np.ndarray):
            array = data if dtype is None else data.astype(dtype, copy=False)
        else:
            array = _python_data(data, dtype)
        result = _C.from_numpy(array, _ordinal(device))
    if requires_grad:
        result.requires_grad_()
    return result


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return [int(d) for d in shape]


def full(shape, value, dtype=np.float32, device=None):
    return _C.full(_shape(shape), value, _dtype(dtype), _ordinal(device))


def zeros(shape, dtype=np.float32, device=None):
    return full(shape, 0, dtype, device)


def ones(shape, dtype=np.float32, device=None):
    return full(shape, 1, dtype, device)


def arange(start, stop=None, step=1, dtype=None, device=None):
    """[start, stop) by step, like numpy.arange. The bounds and step must be
    finite and the step nonzero, and the number of elements must fit int64
    (ValueError otherwise); integers must fit int64 (OverflowError)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        dtype = np.int64 if integral else np.float32
    return _C.arange(start, stop, step, _dtype(dtype), _ordinal(device))


def rand(shape, seed=0, dtype=np.float32, device=None):
    """Uniform in [0, 1); the same seed gives the same numbers on every run."""
    return _C.rand_uniform(_shape(shape), seed, 0.0, 1.0, _dtype(dtype), _ordinal(device))


def randn(shape, seed=0, dtype=np.float32, device=None):
    """Standard normal; the same seed gives the same numbers on every run."""
    return _C.rand_normal(_shape(shape), seed, 0.0, 1.0, _dtype(dtype), _ordinal(device))


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


def _index_select(self, dim, index):
    """The slices of this tensor along dim that index (a 1-D integer tensor
    or numpy array) picks. Negative indices count from the end, as in
    numpy.take (-1 is the last slice); an index outside [-size, size) makes
    reading the result raise ExecutionError naming it."""
    return _C.index_select(self, dim, index)


def _gather(self, dim, index):
    """torch.gather: out[i][j] = self[index[i][j]][j] for dim 0; index has
    this tensor's rank. Negative indices count from the end, as in
    index_select; one outside [-size, size) makes reading the result raise
    ExecutionError naming it."""
    return _C.gather(self, dim, index)


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
        "astype": lambda self, dtype: _C.cast(self, _dtype(dtype)),
        "to": lambda self, dtype: _C.cast(self, _dtype(dtype)),
        "index_select": _index_select,
        "gather": _gather,
        "scatter_add": lambda self, dim, index, src: _C.scatter_add(self, dim, index, src),
        "index_add": lambda self, dim, index, source: _C.index_add(self, dim, index, source),
        "matmul": lambda self, other: _C.matmul(self, other),
        "maximum": lambda self, other: _C.maximum(self, other),
        "minimum": lambda self, other: _C.minimum(self, other),
        "item": lambda self: self.numpy().item(),
        "tolist": lambda self: self.numpy().tolist(),
        "size": lambda self, dim=None: self.shape if dim is None else self.shape[dim],
        "copy_": _copy_,
        "__getitem__": _getitem,
        "__len__": lambda self: self.shape[0] if self.ndim else _raise_len(),
        "__repr__": _repr,
        "__array__": lambda self, dtype=None: self.numpy() if dtype is None else self.numpy().astype(dtype),
        # As torch: numpy's operators defer to the tensor's (array + tensor
        # is a tensor, not an array), while numpy functions (np.add(array,
        # tensor), array += tensor) still take the tensor as an array.
        "__array_priority__": 1000,
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
