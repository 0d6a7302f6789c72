"""ordo.save / ordo.load: bitwise round trips, atomic saves, and every damaged file a CheckpointError."""

import collections
import hashlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import ordo
from package_dir import PYTHON_DIR

ENV = dict(os.environ, PYTHONPATH=PYTHON_DIR)


def state_of_every_kind():
    return {"weights": {"w": ordo.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
                        "b": ordo.tensor(np.array([1.5, -2.0])), "i": ordo.tensor(np.array([7, -8], np.int32)),
                        "l": ordo.tensor(np.array([[1 << 40]])), "m": ordo.tensor(np.array([True, False]))},
            "step": 3, "lr": 0.5, "name": "run", "none": None, "blob": b"\x00\x01", "pair": (1, [2.0]),
            "milestones": collections.Counter([3, 10, 10]), "dtype": np.dtype("float32"),
            "scale": np.float32(0.5), "order": collections.OrderedDict(a=ordo.tensor([1.0])), "set": {1, 2}}


def leftovers(directory, kept):
    return sorted(p.name for p in Path(directory).iterdir() if p.name not in kept)


def test_save_and_load_round_trip_bitwise_in_a_fresh_process(tmp_path):
    nan_payload = np.array([np.nan], np.float64).view(np.uint64) | np.uint64(0x1234)
    state = {"model": ordo.nn.Linear(6, 8).state_dict(), "step": 7, "lr": 0.5, "name": "run", "none": None,
             "nested": [ordo.tensor(nan_payload.view(np.float64)), (ordo.tensor([1, 2]), True)]}
    path = tmp_path / "ckpt.ordo"
    ordo.save(state, path)
    script = f"""
import numpy as np, ordo
state = ordo.load({str(path)!r})
print(state["step"], state["lr"], state["name"], state["none"], state["nested"][1][1])
print(np.asarray(state["nested"][0].numpy()).view(np.uint64)[0])
print(list(state["model"])[0], state["model"]["weight"].numpy().tobytes().hex())
"""
    out = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "7 0.5 run None True"
    assert int(lines[1]) == int(nan_payload[0])
    assert lines[2] == "weight " + state["model"]["weight"].numpy().tobytes().hex()
    assert leftovers(tmp_path, {"ckpt.ordo"}) == []


def test_save_keeps_the_targets_permissions_and_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.ordo"
    ordo.save({"a": 1}, real)
    real.chmod(0o640)
    link = tmp_path / "link.ordo"
    link.symlink_to(real)
    ordo.save({"a": 2}, link)
    assert link.is_symlink() and ordo.load(real) == {"a": 2} and (real.stat().st_mode & 0o777) == 0o640


def test_a_save_that_fails_midway_leaves_the_old_checkpoint_and_no_temporary(tmp_path):
    # The failures come after bytes of the new checkpoint were written: the old
    # save opened the target first and left a fragment; its test failed only
    # before the first byte (the pickle was built in memory), so it passed.
    path = tmp_path / "ckpt.ordo"
    kept = state_of_every_kind()
    ordo.save(kept, path)
    before = path.read_bytes()
    big = ordo.tensor(np.ones(1 << 18, np.float32))  # 1 MiB: pickle writes it out before it meets `bad`
    for bad in [np.zeros(3), 1 + 2j, lambda: 1, int, object(), {"nested": [torch.tensor([1.0])]}]:
        with pytest.raises(TypeError, match="ordo.save: cannot save a"):
            ordo.save({"big": big, "bad": bad, "fine": 1}, path)
        assert path.read_bytes() == before and leftovers(tmp_path, {"ckpt.ordo"}) == []
    loaded = ordo.load(path)
    assert loaded["milestones"] == kept["milestones"] and isinstance(loaded["milestones"], collections.Counter)
    assert loaded["dtype"] == np.float32 and loaded["scale"] == np.float32(0.5) and loaded["set"] == {1, 2}
    np.testing.assert_array_equal(loaded["order"]["a"].numpy(), [1.0])


@pytest.mark.parametrize("failure", ["file_size_limit", "fsync", "rename", "killed"])
def test_a_save_that_the_system_stops_leaves_the_old_checkpoint(tmp_path, failure):
    # In a fresh process: a file size limit (EFBIG, as a full disk's ENOSPC) after
    # 64 KiB, fsync or rename failing with EIO, or SIGKILL in the middle of writing.
    path = tmp_path / "ckpt.ordo"
    script = f"""
import errno, os, resource, signal, sys
import numpy as np, ordo
path = {str(path)!r}
ordo.save({{"step": 1, "w": ordo.tensor(np.arange(4.0))}}, path)
new = {{"step": 2, "w": ordo.tensor(np.ones(1 << 16))}}  # 512 KiB
def eio(*args):
    raise OSError(errno.EIO, "simulated")
if {failure!r} == "file_size_limit":
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
elif {failure!r} == "fsync":
    os.fsync = eio
elif {failure!r} == "rename":
    os.replace = eio
else:
    write = ordo._checkpoint._DigestingWriter.write
    def write_then_die(self, data):
        if self.size > 1 << 17:
            os.kill(os.getpid(), signal.SIGKILL)
        return write(self, data)
    ordo._checkpoint._DigestingWriter.write = write_then_die
try:
    ordo.save(new, path)
except OSError as e:
    print("OSError", e.errno)
"""
    done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60)
    if failure == "killed":
        assert done.returncode == -9
        assert [name.endswith(".tmp") for name in leftovers(tmp_path, {"ckpt.ordo"})] == [True]  # hidden, beside
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[0] == "OSError" and leftovers(tmp_path, {"ckpt.ordo"}) == []
    loaded = ordo.load(path)
    assert loaded["step"] == 1
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(4.0))


def test_a_reader_never_sees_a_save_in_progress(tmp_path):
    path = tmp_path / "ckpt.ordo"
    states = [{"step": k, "w": ordo.tensor(np.full(1 << 14, float(k)))} for k in range(2)]
    ordo.save(states[0], path)
    stop = threading.Event()

    def save_again_and_again():
        k = 0
        while not stop.is_set():
            k += 1
            ordo.save(states[k % 2], path)

    writer = threading.Thread(target=save_again_and_again)
    writer.start()
    try:
        for _ in range(300):
            loaded = ordo.load(path)
            assert np.all(loaded["w"].numpy() == loaded["step"])
    finally:
        stop.set()
        writer.join()
    assert leftovers(tmp_path, {"ckpt.ordo"}) == []


# --- damaged and forged files ---------------------------------------------------------------------------------------

def sealed(payload, version=b"2"):
    """A file of format 2 around payload, its size and digest right (what a forger can write)."""
    return b"ORDO-CHECKPOINT " + version + b"\n" + struct.pack("<Q", len(payload)) + hashlib.sha256(payload).digest() \
        + payload


def payload_of(data):
    """The pickle in a file save wrote (of format 2, or 1 as saves before 2 wrote)."""
    format_1 = b"ORDO-CHECKPOINT 1\n"
    return data[len(format_1):] if data.startswith(format_1) else data[len(b"ORDO-CHECKPOINT 2\n") + 40:]


def assert_refused(path, contents, match=None):
    path.write_bytes(contents)
    try:
        ordo.load(path)
    except ordo.CheckpointError as e:
        assert str(e).startswith("ordo.load: ") and str(path) in str(e), e
        assert match is None or match in str(e), e
        return None
    return "loaded"


class TensorRecord:
    """Pickles as a tensor's record with the fields given."""

    def __init__(self, *fields):
        self.fields = fields

    def __reduce__(self):
        return (ordo._checkpoint._tensor_data, self.fields)


class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_every_truncation_and_flipped_byte_is_a_checkpoint_error(tmp_path):
    good = tmp_path / "good.ordo"
    ordo.save(state_of_every_kind(), good)
    data = good.read_bytes()
    bad = tmp_path / "bad.ordo"
    for end in range(len(data)):
        assert assert_refused(bad, data[:end]) is None, end
    for offset in range(len(data)):  # the digest catches a flip anywhere, a tensor's bytes included
        for bit in (0x01, 0x80) if offset % 8 == 0 else (0x01,):
            flipped = bytearray(data)
            flipped[offset] ^= bit
            assert assert_refused(bad, bytes(flipped)) is None, (offset, bit)
    assert assert_refused(bad, data + b"\x00", match="holds") is None


@pytest.mark.parametrize("version", [b"1", b"2"])
def test_a_forged_payload_is_a_checkpoint_error_and_never_a_raw_one(tmp_path, version):
    # A flip inside a payload whose digest is right again (or a format 1 file,
    # which has none) reaches the unpickler: pickle's KeyError, OverflowError,
    # MemoryError, numpy's reshape and dtype errors must come out as one error.
    good = tmp_path / "good.ordo"
    ordo.save(state_of_every_kind(), good)
    payload = payload_of(good.read_bytes())
    bad = tmp_path / "bad.ordo"
    wrap = sealed if version == b"2" else (lambda p: b"ORDO-CHECKPOINT 1\n" + p)
    for offset in range(len(payload)):
        for value in (0x00, 0xFF, payload[offset] ^ 0x01):
            forged = bytearray(payload)
            forged[offset] = value
            assert_refused(bad, wrap(bytes(forged)))  # refused, or loads as something; never another error
    for end in range(len(payload)):
        assert assert_refused(bad, wrap(payload[:end])) is None, end


def test_forged_headers_records_and_globals_are_checkpoint_errors_and_run_nothing(tmp_path):
    bad = tmp_path / "bad.ordo"
    marker = tmp_path / "pwned"
    pickled = pickle.dumps({"a": 1})
    huge_bytes = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"xx."  # BINBYTES8 of 4 EiB
    cases = {
        b"": "not an ordo checkpoint", pickled: "not an ordo checkpoint", b"ORDO-CHECKPOINT\n": "not an ordo",
        b"ORDO-CHECKPOINT 3\n" + pickled: "format", b"ORDO-CHECKPOINT 10\n": "format",
        b"ORDO-CHECKPOINT 2\n" + struct.pack("<Q", (1 << 64) - 1) + bytes(32) + pickled: "header gives",
        b"ORDO-CHECKPOINT 2\n" + struct.pack("<Q", 1 << 62) + bytes(32): "header gives",
        sealed(huge_bytes): "damaged", sealed(b"\x80\x04\x82\x01."): "damaged",  # EXT1: an extension code
        sealed(b"\x80\x04h\x07."): "damaged", sealed(b"\x80\x04}q\x00j\x05\x00\x00\x00."): "damaged",  # memo
        sealed(pickle.dumps(Evil(marker))): "holds no posix.system",
        b"ORDO-CHECKPOINT 1\n" + pickle.dumps(Evil(marker)): "holds no posix.system",
        sealed(b"\x80\x04cbuiltins\neval\n."): "holds no builtins.eval",
        sealed(b"\x80\x04cordo._checkpoint\n_Unpickler\n."): "holds no ordo._checkpoint._Unpickler",
        sealed(b"\x80\x04cnumpy\nfrombuffer\n."): "holds no numpy.frombuffer",
        sealed(b"\x80\x04P1\n."): "damaged",  # a persistent id
    }
    for dtype, shape, data in [("<f4", (2,), bytes(8)), ("|O", (1,), bytes(8)), ("<U4", (1,), bytes(16)),
                               ("foo", (1,), bytes(4)), (b"<f4", (1,), bytes(4)), ("<f4", (3,), bytes(8)),
                               ("<f4", (1 << 40, 1 << 40), bytes(8)), ("<f4", (-1,), bytes(8)),
                               ("<f4", [2], bytes(8)), ("<f4", (2.0,), bytes(8)), ("<f4", (2,), "12345678"),
                               ("<f8", (1 << 62,), bytes(8))]:
        cases[sealed(pickle.dumps(TensorRecord(dtype, shape, data), protocol=4))] = None if (dtype, shape, data) == ("<f4", (2,), bytes(8)) and type(shape[0]) is int else "tensor"
    for contents, match in cases.items():
        if match is None:  # the one well-formed record: the forging above is right
            bad.write_bytes(contents)
            np.testing.assert_array_equal(ordo.load(bad).numpy(), np.zeros(2, np.float32))
            continue
        assert assert_refused(bad, contents, match) is None, (contents[:60], match)
    assert not marker.exists()


def test_load_still_reads_format_1(tmp_path):
    old = tmp_path / "old.ordo"
    state = {"w": ordo.tensor([1.0, 2.0]), "step": 4}
    ordo.save(state, old)
    old.write_bytes(b"ORDO-CHECKPOINT 1\n" + payload_of(old.read_bytes()))
    loaded = ordo.load(old)
    assert loaded["step"] == 4 and loaded["w"].numpy().tolist() == [1.0, 2.0]
