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

import numpy as np

from . import _C
from ._devices import _ordinal

_MAGIC = b"ORDO-CHECKPOINT 1\n"
_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "scalar"): np.core.multiarray.scalar,
}


def _tensor_data(dtype, shape, data, device=-1):
    """A tensor as a checkpoint holds it: its dtype, shape and bytes."""
    return _C.from_numpy(np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy(), device)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            array = np.ascontiguousarray(obj.numpy())
            return _tensor_data, (array.dtype.str, tuple(array.shape), array.tobytes())
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
