"""ordo.save / ordo.load, as torch.save / torch.load for state dicts.

    ordo.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3}, "ckpt.ordo")
    state = ordo.load("ckpt.ordo")            # tensors on the calling thread's device

A checkpoint (format 2) is a header line, the payload's size (8 bytes,
little-endian) and SHA-256, and the payload: a pickle whose tensors are
their dtype, shape and bytes, so a round trip is bitwise (NaN payloads
too). Format 1 files (header line and pickle, no size or digest) still load.

save is atomic: it writes a temporary file beside the target, flushes it to
disk and renames it over the target, so the path holds the old checkpoint or
the new one, never a fragment, whatever happens to the save (an error, a
full disk, a kill) and whoever reads the path meanwhile.

load verifies the digest before it unpickles, so damage is an error and never
a different value, and unpickles only what save writes (containers, numbers,
strings, tensors, numpy scalars and dtypes): a file from elsewhere cannot run
code. Every way a file can fail to be a checkpoint raises CheckpointError
(a ValueError) naming ordo.load and the file."""

import collections
import contextlib
import functools
import hashlib
import math
import os
import pickle
import secrets
import stat
import struct
import types

import numpy as np

from . import _C
from ._devices import _ordinal

_HEADER_LINE = b"ORDO-CHECKPOINT "
_VERSION_UNCHECKED, _VERSION = 1, 2
_SIZE_AND_DIGEST = struct.Struct("<Q32s")
_CHUNK = 1 << 20
_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,  # MultiStepLR's milestones, as torch's

    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "scalar"): np.core.multiarray.scalar,
}
# The numpy dtypes of ordo's tensors, by the name save writes (dtype.str);
# bfloat16, which numpy lacks, is saved as its bits under its own name.
_TENSOR_DTYPES = {np.dtype(t).str: np.dtype(t)
                  for t in (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_)}
_BFLOAT16 = "bfloat16"
_TENSOR_DTYPES[_BFLOAT16] = np.dtype(np.uint16)


class CheckpointError(ValueError):
    """ordo.load's error for a file that is not a whole checkpoint written by ordo.save: damaged, truncated,
    of an unknown format version, or holding what save never writes."""


def _tensor_data(dtype, shape, data, device=-1):
    """A tensor as a checkpoint holds it: its dtype, shape and bytes."""
    # Checked here so that a forged record is a CheckpointError, not numpy's error (or allocation) at reshape.
    if type(dtype) is not str or dtype not in _TENSOR_DTYPES:
        raise pickle.UnpicklingError(f"a tensor has dtype {dtype!r:.40}, not one of {sorted(_TENSOR_DTYPES)}")
    if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
        raise pickle.UnpicklingError(f"a tensor has shape {shape!r:.60}, not a tuple of sizes")
    if type(data) is not bytes or math.prod(shape) * _TENSOR_DTYPES[dtype].itemsize != len(data):
        raise pickle.UnpicklingError(f"a tensor of shape {shape!r:.60} and dtype {dtype} does not hold "
                                     f"{len(data) if type(data) is bytes else type(data).__name__} bytes")
    array = np.frombuffer(data, dtype=_TENSOR_DTYPES[dtype]).reshape(shape).copy()
    if dtype == _BFLOAT16:
        return _C._from_raw_bits(array, _C.bfloat16, device)
    return _C.from_numpy(array, device)


# What a checkpoint may hold besides tensors: what pickle writes as itself,
# and instances of the classes load finds in _ALLOWED (numpy scalars through
# its `scalar`).
_SAVABLE = (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, type(None), np.generic) + tuple(
    allowed for allowed in _ALLOWED.values() if isinstance(allowed, type))


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            if obj.dtype == _C.bfloat16:
                return _tensor_data, (_BFLOAT16, tuple(obj.shape), np.ascontiguousarray(obj._raw_bits()).tobytes())
            array = np.ascontiguousarray(obj.numpy())
            return _tensor_data, (array.dtype.str, tuple(array.shape), array.tobytes())
        # What save cannot write so that load reads it is refused: a class or
        # function only as load knows it (the ones the reductions of the types
        # above refer to).
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
        raise pickle.UnpicklingError(f"a checkpoint holds no {module!s:.60}.{name!s:.60}")


class _DigestingWriter:
    """The file save writes the payload to, counting and hashing it on the way."""

    def __init__(self, file):
        self._file, self.size, self.sha256 = file, 0, hashlib.sha256()

    def write(self, data):
        self.sha256.update(data)
        self.size += len(data)
        return self._file.write(data)


def _create_beside(target):
    """A new file in target's directory (a rename within a directory is atomic), open for writing."""
    directory, name = os.path.split(target)
    while True:  # 64 random bits: a name taken twice in a row does not happen
        temporary = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
        with contextlib.suppress(FileExistsError):
            return open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), "wb"), temporary


def _fsync_directory(directory):
    """Makes a rename in directory durable; a file system that cannot sync a directory has nothing to sync."""
    fd = os.open(directory or ".", os.O_RDONLY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def save(obj, path):
    """Writes obj (nested dicts, lists and tuples of tensors, numbers, strings, bools and None) to path, atomically:
    on any error (including one raised while writing) path still holds what it held before."""
    target = os.path.realpath(os.fspath(path))  # through a symlink, as open(path, "wb") would write
    f, temporary = _create_beside(target)
    try:
        with f:
            with contextlib.suppress(FileNotFoundError):  # the permissions target has, as overwriting keeps them
                os.fchmod(f.fileno(), stat.S_IMODE(os.stat(target).st_mode))
            magic = _HEADER_LINE + b"%d\n" % _VERSION
            f.write(magic + bytes(_SIZE_AND_DIGEST.size))
            writer = _DigestingWriter(f)
            _Pickler(writer, protocol=4).dump(obj)
            f.seek(len(magic))
            f.write(_SIZE_AND_DIGEST.pack(writer.size, writer.sha256.digest()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(os.path.dirname(target))


def _read_version(f, path):
    line = f.readline(len(_HEADER_LINE) + 8)
    if not line.startswith(_HEADER_LINE):
        raise CheckpointError(f"ordo.load: {path} is not an ordo checkpoint (written by ordo.save)")
    version = line[len(_HEADER_LINE):]
    if version not in (b"%d\n" % _VERSION_UNCHECKED, b"%d\n" % _VERSION):
        raise CheckpointError(f"ordo.load: {path} has checkpoint format {version[:8]!r}; this ordo reads formats "
                              f"{_VERSION_UNCHECKED} and {_VERSION} (a newer ordo wrote it, or it is damaged)")
    return int(version)


def _verify_payload(f, path):
    """Checks the payload's size and digest against the header; leaves f at the payload's start."""
    header = f.read(_SIZE_AND_DIGEST.size)
    if len(header) != _SIZE_AND_DIGEST.size:
        raise CheckpointError(f"ordo.load: {path} is truncated: it ends inside its header")
    size, digest = _SIZE_AND_DIGEST.unpack(header)
    start = f.tell()
    present = os.fstat(f.fileno()).st_size - start
    if present != size:
        raise CheckpointError(f"ordo.load: {path} is damaged or truncated: its header gives a payload of {size} "
                              f"bytes and the file holds {present}")
    sha256 = hashlib.sha256()
    while chunk := f.read(_CHUNK):
        sha256.update(chunk)
    if sha256.digest() != digest:
        raise CheckpointError(f"ordo.load: {path} is damaged: its payload does not match its SHA-256")
    f.seek(start)


def load(path, device=None):
    """What ordo.save wrote to path, its tensors on `device` (default: the calling thread's).
    Raises CheckpointError (a ValueError) naming the file if it is not a whole checkpoint written by ordo.save."""
    device = _ordinal(device)
    with open(path, "rb") as f:
        if _read_version(f, path) == _VERSION:
            _verify_payload(f, path)
        try:
            return _Unpickler(f, device).load()
        except _C.OutOfMemoryError:
            raise  # the device's memory, not the file
        except Exception as e:  # pickle's and numpy's errors for a forged payload: KeyError, MemoryError, ...
            raise CheckpointError(f"ordo.load: {path} is damaged or was not written by ordo.save "
                                  f"({type(e).__name__}: {e!s:.200})") from e
