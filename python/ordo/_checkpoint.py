"""ordo.save / ordo.load, as torch.save / torch.load for state dicts.

    ordo.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3}, "ckpt.ordo")
    state = ordo.load("ckpt.ordo")            # tensors on the calling thread's device

A checkpoint is a header and a pickle whose tensors are their dtype, shape
and bytes: a round trip is bitwise (NaN payloads too). Loading unpickles
only what save writes (containers, numbers, strings, tensors, numpy
scalars): a file from elsewhere cannot run code, and a file that is not an
ordo checkpoint is a clear error."""

import collections
import functools
import io
import pickle
import types

import numpy as np

from . import _C
from ._devices import _ordinal

_MAGIC = b"ORDO-CHECKPOINT 1\n"
_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,  # MultiStepLR's milestones, as torch's

    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "scalar"): np.core.multiarray.scalar,
}


def _tensor_data(dtype, shape, data, device=-1):
    """A tensor as a checkpoint holds it: its dtype, shape and bytes."""
    return _C.from_numpy(np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy(), device)


# What a checkpoint may hold besides tensors: what pickle writes as itself,
# and instances of the classes load finds in _ALLOWED (numpy scalars through
# its `scalar`).
_SAVABLE = (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, type(None), np.generic) + tuple(
    allowed for allowed in _ALLOWED.values() if isinstance(allowed, type))


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            array = np.ascontiguousarray(obj.numpy())
            return _tensor_data, (array.dtype.str, tuple(array.shape), array.tobytes())
        # What save cannot write so that load reads it is refused now, before
        # the file is written: a class or function only as load knows it (the
        # ones the reductions of the types above refer to).
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            savable = obj is _tensor_data or any(obj is allowed for allowed in _ALLOWED.values())
        else:
            savable = isinstance(obj, _SAVABLE)
        if not savable:
            raise TypeError(f"ordo.save: cannot save a {type(obj).__module__}.{type(obj).__qualname__} ({obj!r:.60}): "
                            "a checkpoint holds tensors, numbers, strings, bytes, bools, None, numpy scalars and "
                            "dtypes, and dicts, lists, tuples and sets of them")
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, device):
        super().__init__(file)
        self._device = device

    def find_class(self, module, name):
        if (module, name) == (__name__, "_tensor_data"):
            return functools.partial(_tensor_data, device=self._device)
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        raise pickle.UnpicklingError(f"ordo.load: a checkpoint holds no {module}.{name}; the file was not written "
                                     f"by ordo.save")


def save(obj, path):
    """Writes obj (nested dicts, lists and tuples of tensors, numbers, strings, bools and None) to path."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=4).dump(obj)
    with open(path, "wb") as f:
        f.write(_MAGIC)
        f.write(buffer.getvalue())


def load(path, device=None):
    """What ordo.save wrote to path, its tensors on `device` (default: the calling thread's)."""
    with open(path, "rb") as f:
        if f.read(len(_MAGIC)) != _MAGIC:
            raise ValueError(f"ordo.load: {path} is not an ordo checkpoint (written by ordo.save)")
        try:
            return _Unpickler(f, _ordinal(device)).load()
        except (pickle.UnpicklingError, EOFError) as e:
            raise ValueError(f"ordo.load: {path} is damaged or not an ordo checkpoint: {e}") from e
