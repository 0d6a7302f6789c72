"""Runs a program with ordo four ways and checks it.

- "all values": the default schedule with fusion, every value kept and
  read; each value is checked against numpy (reference.py) from the values
  ordo gave its operands.
- "default", "random schedule" (ordo's seeded random topological order)
  and "no fusion": only the program's outputs kept, so the rest are
  temporaries (a fused group keeps them in registers); each output must be
  bitwise the "all values" one, NaN payloads included.

An SPMD program runs on every device through ordo.spawn, each device on its
own data. A program with a poisoned index must fail in every mode: every
value its graph computes raises ExecutionError naming the op, and so does
the next mark_step. A call that must fail when traced must raise its error
naming the op and record nothing."""

import dataclasses

import numpy as np

import ordo
from ordo import _C

from . import values as V
from .apply import apply
from .expect import expected
from .program import listing


@dataclasses.dataclass(frozen=True)
class Mode:
    name: str
    schedule: str
    fuse: bool
    keep_all: bool


MODES = (Mode("all values", "default", True, True), Mode("default", "default", True, False),
         Mode("random schedule", "random", True, False), Mode("no fusion", "default", False, False))


class FuzzFailure(AssertionError):
    """A failed check: the message, the program's listing and how to replay
    it. index: the instruction that failed, if one did; values: per device,
    what the "all values" mode computed (for shrinking)."""

    def __init__(self, program, message, index=None, values=None):
        super().__init__(message)
        self.program, self.message, self.index, self.values = program, message, index, values
        self.at = None  # the first element that differs, for a value check

    def __str__(self):
        return (f"{self.message}\n{listing(self.program)}\n"
                f"replay: PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --replay {self.program.seed}")


def _text(a):
    a = np.asarray(a)
    return np.array2string(a, threshold=20, edgeitems=3).replace("\n", " ") if a.size <= 20 else \
        f"<shape {a.shape}>"


def check_trace_error(program, i, xs, device, check_graph):
    ins = program.instrs[i]
    error, expect = ins.attrs["error"], ins.attrs["expect"]
    before = _C.dump_pending_graph(device) if check_graph else None
    try:
        apply(ins, xs, device)
    except error as e:
        if expect not in str(e):
            raise FuzzFailure(program, f"v{i}: the {error.__name__} does not say '{expect}': {e}", i) from e
    except Exception as e:  # noqa: BLE001 - the wrong class is the failure
        raise FuzzFailure(program, f"v{i}: expected {error.__name__}, got {type(e).__name__}: {e}", i) from e
    else:
        raise FuzzFailure(program, f"v{i}: expected {error.__name__}, nothing was raised", i)
    if check_graph and _C.dump_pending_graph(device) != before:
        raise FuzzFailure(program, f"v{i}: the failed call recorded something in the pending graph", i)


def check_type(program, i, value, mode, device):
    ins = program.instrs[i]
    pairs = zip(value, ins.dtype, ins.shape) if ins.is_list else [(value, ins.dtype, ins.shape)]
    for tensor, dtype, shape in pairs:
        if V.name(tensor.dtype) != dtype or tuple(tensor.shape) != tuple(shape):
            raise FuzzFailure(program, f"v{i} on device {device} ({mode.name}): ordo made {tensor.dtype} "
                              f"{tuple(tensor.shape)}, the rules say {dtype} {tuple(shape)}", i)


def build(program, mode, device):
    values = {}
    for i, ins in enumerate(program.instrs):
        xs = [values[a] for a in ins.args]
        if "error" in ins.attrs:
            check_trace_error(program, i, xs, device, mode.keep_all)
            continue
        if ins.op == "assign_" and mode.keep_all:
            # The handle is rebound, and so is every value sharing it; views
            # keep their old values to be checked.
            for k, v in values.items():
                values[k] = [keep_old(t, xs[0]) for t in v] if isinstance(v, list) else keep_old(v, xs[0])
        try:
            values[i] = apply(ins, xs, device)
        except Exception as e:  # noqa: BLE001 - an op the rules allow must not raise
            raise FuzzFailure(program, f"v{i} on device {device} ({mode.name}): {type(e).__name__}: {e}", i) from e
        check_type(program, i, values[i], mode, device)
        if i in program.cuts:
            cut(values[i], i + program.seed)
    return values


def keep_old(value, handle):
    """value, or a view of it if it shares handle (Tensor.__hash__ is its
    handle's identity)."""
    return _C.reshape(value, list(value.shape)) if hash(value) == hash(handle) else value


def cut(value, parity):
    """Cuts the graph: mark_step, or reading the value (which cuts its
    device's graph first)."""
    if parity % 2 or isinstance(value, list):
        ordo.mark_step()
    else:
        value.numpy()


def read(value):
    return [t.numpy() for t in value] if isinstance(value, list) else value.numpy()


def run_failing(program, mode, device, kept):
    """Every pending value fails with the op's name; the next mark_step
    fails too; then the device works again."""
    op = program.instrs[program.failing].op
    pending = {i for i, t in kept.items() if not isinstance(t, list) and t.is_pending()}
    ordo.mark_step()
    for i, tensor in kept.items():
        try:
            tensor.numpy()
        except ordo.ExecutionError as e:
            if i not in pending or op not in str(e):
                raise FuzzFailure(program, f"v{i} ({mode.name}): unexpected ExecutionError: {e}", i) from e
        else:
            if i in pending:
                raise FuzzFailure(program, f"v{i} ({mode.name}): read without error, its graph failed", i)
    try:
        ordo.mark_step()
    except ordo.ExecutionError:
        pass
    else:
        raise FuzzFailure(program, f"({mode.name}) the mark_step after the failed graph did not raise")
    if (ordo.tensor([1.0], device=device) + 1.0).numpy()[0] != 2.0:
        raise FuzzFailure(program, f"({mode.name}) the device computes wrong values after the failure")
    return {}


def run_mode(program, mode, device):
    # Each device its own random order: the cc token must keep their
    # collectives in one order all the same.
    _C.set_schedule(device, mode.schedule, program.seed * 8 + device, mode.fuse)
    values = build(program, mode, device)
    keep = values.keys() if mode.keep_all else [i for i in program.outputs if i in values]
    kept = {i: values[i] for i in keep}
    values.clear()  # the other values die: temporaries of the graph
    if program.failing is not None:
        return run_failing(program, mode, device, kept)
    if mode.schedule == "default" or program.seed % 2:
        ordo.mark_step()  # else the first read cuts the graph
    try:
        return {i: read(t) for i, t in kept.items()}
    except Exception as e:  # noqa: BLE001
        raise FuzzFailure(program, f"reading the results ({mode.name}) raised {type(e).__name__}: {e}") from e


def run_all_modes(program, device):
    return [run_mode(program, mode, device) for mode in MODES]


def run(program):
    """Per device, per mode, the values read."""
    if program.devices == 1:
        return [run_all_modes(program, 0)]
    try:
        return ordo.spawn(lambda device: run_all_modes(program, device))
    except FuzzFailure:
        raise
    except Exception as e:  # noqa: BLE001
        raise FuzzFailure(program, f"spawn raised {type(e).__name__}: {e}") from e


def operands_at(ins, values, at):
    """The operands of ins, or for an elementwise op their elements that
    made the result's element at `at`."""
    texts = []
    for a in ins.args:
        x = values[a]
        if isinstance(x, list):
            continue
        if at is not None and ins.op in ("unary", "binary", "where", "cast") and x.ndim <= len(at):
            element = tuple(0 if n == 1 else k for k, n in zip(at[len(at) - x.ndim:], x.shape))
            texts.append(f"v{a}{list(element)} = {V.describe(x[element])}")
        else:
            texts.append(f"v{a} = {_text(x)}")
    return "\n  operands: " + "; ".join(texts) if texts else ""


def mismatch(actual, expect, how):
    if how == "bits":
        return V.bits(actual) != V.bits(expect)
    if how == "exact":
        return V.exact_mismatch(actual, expect)
    if how[0] == "ulps":
        return V.ulps_mismatch(actual, expect, how[1])
    return V.bound_mismatch(actual, expect, how[1], how[2])


def compare(program, i, device, actual, expect, how, what):
    expect = np.asarray(expect)
    if actual.dtype != expect.dtype or actual.shape != expect.shape:
        raise FuzzFailure(program, f"v{i} on device {device}: {what} is {expect.dtype} {expect.shape}, "
                          f"ordo gave {actual.dtype} {actual.shape}", i)
    wrong = mismatch(actual, expect, how)
    if np.any(wrong):
        at = tuple(int(k) for k in np.argwhere(wrong)[0])
        detail = f" (tolerance {how[2][at]:.3g})" if isinstance(how, tuple) and how[0] == "bound" else ""
        failure = FuzzFailure(program, f"v{i} on device {device}: {int(np.sum(wrong))} of {actual.size} elements "
                              f"differ from {what} ({how if isinstance(how, str) else how[0]}); at {at}: ordo "
                              f"{V.describe(actual[at])}, expected {V.describe(expect[at])}{detail}", i)
        failure.at = at
        raise failure


def check_values(program, results):
    all_values = [modes[0] for modes in results]
    for device, values in enumerate(all_values):
        for i, actual in values.items():
            ins = program.instrs[i]
            try:
                if ins.op == "input":
                    want = ins.attrs["data"][device], "bits"
                elif ins.op == "item":
                    want = values[ins.args[0]][ins.attrs["index"]], "bits"
                else:
                    args = [values[a] for a in ins.args]
                    want = expected(ins, args, lambda d: [all_values[d][a] for a in ins.args], device)
            except Exception as e:  # noqa: BLE001 - a reference that cannot run is a fuzzer bug
                raise FuzzFailure(program, f"v{i}: the reference raised {type(e).__name__}: {e}", i,
                                  all_values) from e
            pairs = zip(actual, want) if ins.is_list else [(actual, want)]
            for k, (a, (e, how)) in enumerate(pairs):
                try:
                    compare(program, i, device, a, e, how, "numpy" + (f" (result {k})" if ins.is_list else ""))
                except FuzzFailure as failure:
                    failure.values = all_values
                    failure.message += operands_at(ins, values, failure.at)
                    raise


def check_modes(program, results):
    for device, modes in enumerate(results):
        reference = modes[0]
        for mode, values in zip(MODES[1:], modes[1:]):
            for i, value in values.items():
                pairs = zip(value, reference[i]) if isinstance(value, list) else [(value, reference[i])]
                for a, b in pairs:
                    same, at = V.bits_equal(a, b)
                    if not same:
                        where = f"at {at}: {V.describe(a[at])} instead of {V.describe(b[at])}" if at else \
                            f"{a.dtype} {a.shape} instead of {b.dtype} {b.shape}"
                        raise FuzzFailure(program, f"v{i} on device {device} differs bitwise between "
                                          f"'{mode.name}' and 'all values', {where}", i,
                                          [m[0] for m in results])


def check(program):
    results = run(program)
    if program.failing is None:
        check_modes(program, results)
        with np.errstate(all="ignore"):  # numpy computing with NaNs and infinities on purpose
            check_values(program, results)
