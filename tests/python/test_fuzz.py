"""The differential fuzzer (tests/python/fuzz): thousands of seeded random
programs over every op, each run with the default schedule, a random
schedule and without fusion, compared bitwise with each other and with
numpy. ORDO_FUZZ_PROGRAMS and ORDO_FUZZ_SEED change how many and from
which seed; scripts/fuzz-soak.sh runs far more. The other tests here
check the checker: a wrong result, a NaN whose sign differs between
modes, a call that should fail and does not, a graph that should fail and
does not are each caught, and shrinking finds the op at fault."""

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ordo
from fuzz import apply as fuzz_apply
from fuzz import run as fuzz_run
from fuzz.driver import run_programs
from fuzz.generate import generate
from fuzz.program import Instr, Program, listing
from fuzz.run import FuzzFailure, check
from package_dir import PYTHON_DIR

ROOT = Path(__file__).resolve().parents[2]
# Sized to take well under a minute on a loaded 2-core machine.
DEFAULT_PROGRAMS = 3000

# Every op of src/ir/op_list.def, as the fuzzer names its calls (the leaves
# DeviceData and CcToken are every input and collective).
EVERY_OP = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "relu", "logical_not", "cast", "add",
            "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
            "logical_or", "where", "sum", "mean", "max", "min", "argmax", "matmul", "reshape", "permute", "slice",
            "concat", "broadcast_to", "index_select", "gather", "one_hot", "full", "arange", "all_reduce",
            "all_gather", "reduce_scatter", "all_to_all", "collective_permute", "collective_broadcast",
            # and the ways in: Python indexing, copy_, lists, random numbers, cuts, failures
            "getitem", "copy_", "all_reduce_list", "rand", "randn", "mark_step inside", "failing graph")


def test_random_programs_agree_with_numpy_and_with_each_other():
    programs = int(os.environ.get("ORDO_FUZZ_PROGRAMS", DEFAULT_PROGRAMS))
    seed = int(os.environ.get("ORDO_FUZZ_SEED", 0))
    # In a process of its own: a crash or a hang fails this test, not the suite.
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "python" / "fuzz"), "--programs", str(programs),
                             "--seed", str(seed)], cwd=ROOT, env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                            capture_output=True, text=True, timeout=120 + programs * 0.1)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"checked {programs} programs" in result.stdout
    summary = result.stdout.split("covered: ")[1].splitlines()[0]
    covered = dict(item.rsplit("=", 1) for item in summary.split(", "))
    missing = [op for op in EVERY_OP if int(covered.get(op, 0)) == 0]
    assert not missing, f"the programs never ran {missing}"
    assert any("(must fail)" in name for name in covered)


def test_a_seed_gives_the_same_program():
    for seed in (0, 7, 12345):
        a, b = generate(seed), generate(seed)
        assert listing(a) == listing(b)
        for x, y in zip(a.instrs, b.instrs):
            for p, q in zip(x.attrs.get("data", []), y.attrs.get("data", [])):
                np.testing.assert_array_equal(p, q)


def input_of(data):
    data = np.asarray(data)
    return Instr("input", (), {"data": [data]}, str(data.dtype), data.shape)


def small_program(op_instr, *inputs):
    instrs = [input_of(d) for d in inputs] + [op_instr]
    return Program(seed=1, instrs=instrs, outputs=[len(instrs) - 1])


def test_a_wrong_result_is_caught(monkeypatch):
    exp = Instr("unary", (0,), {"fn": "exp", "style": "fn", "symbol": None}, "float32", (3,))
    program = small_program(exp, np.array([0.0, 1.0, -2.0], np.float32))
    check(program)  # right as it is
    original = fuzz_apply.APPLY["unary"]
    # 2^-20 relative: a few ulps of float32 too many.
    monkeypatch.setitem(fuzz_apply.APPLY, "unary", lambda a, xs, d: original(a, xs, d) * (1 + 2.0**-20))
    with pytest.raises(FuzzFailure, match=r"v1 on device 0: \d of 3 elements differ from numpy \(ulps\)"):
        check(program)


def test_a_nan_sign_that_differs_between_modes_is_caught(monkeypatch):
    nan = np.float32(np.nan)
    add = Instr("binary", (0, 1), {"fn": "add", "style": "fn", "symbol": "+"}, "float32", (2,))
    program = small_program(add, np.array([nan, 1], np.float32), np.array([1, nan], np.float32))
    check(program)
    run_mode = fuzz_run.run_mode

    def sign_flipped_without_fusion(program, mode, device):
        values = run_mode(program, mode, device)
        if mode.name == "no fusion":
            values = {i: np.where(np.isnan(v), -v, v) for i, v in values.items()}
        return values

    monkeypatch.setattr(fuzz_run, "run_mode", sign_flipped_without_fusion)
    with pytest.raises(FuzzFailure, match=r"differs bitwise between 'no fusion' and 'all values'.*bits 0xffc00000"):
        check(program)


def test_a_call_that_should_fail_and_does_not_is_caught():
    reshape = Instr("reshape", (0,), {"shape": [2, 3], "style": "fn", "error": ValueError, "expect": "reshape"})
    program = small_program(reshape, np.zeros(6, np.float32))
    program.outputs = [0]
    with pytest.raises(FuzzFailure, match="expected ValueError, nothing was raised"):
        check(program)
    reshape.attrs["shape"] = [4]
    check(program)  # a real error, with the op's name in it


def test_a_graph_that_should_fail_and_does_not_is_caught():
    gather = Instr("index_select", (0, 1), {"axis": 0, "style": "fn"}, "float32", (2, 2))
    program = small_program(gather, np.ones((3, 2), np.float32), np.array([0, 3]))
    program.failing = 2
    check(program)  # index 3 of 3 rows: every value of the graph fails, then the next mark_step
    program.instrs[1] = input_of(np.array([0, 2]))
    with pytest.raises(FuzzFailure, match="read without error, its graph failed"):
        check(program)


def test_shrinking_finds_the_op_at_fault(monkeypatch):
    original = fuzz_apply.APPLY["unary"]

    def wrong_tanh(a, xs, device):
        result = original(a, xs, device)
        return result + 0.25 if a["fn"] == "tanh" else result

    monkeypatch.setitem(fuzz_apply.APPLY, "unary", wrong_tanh)
    checked, _, report = run_programs(0, 500)
    assert report is not None, "no program of 500 ran tanh"
    shrunk = report.split("shrunk to:")[1]
    assert "tanh" in shrunk
    assert len([line for line in shrunk.splitlines() if re.match(r"  v\d+ = ", line)
                and "ordo.tensor(" not in line]) <= 2, report


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("length", [127, 129, 131, 1025])
def test_nan_pairs_keep_their_bits_with_fusion(dtype, length):
    """Issue #11: x + nan with both NaN, then a column scale that cuts the
    fused group into rows: the rows' scalar tails had the other operand's
    NaN (the sign bit set) with fusion on."""
    def run(fuse):
        ordo._C.set_schedule(0, "default", 0, fuse)
        x = ordo.tensor(np.full((4, length), np.nan, dtype))
        s = ordo.tensor(-np.array(np.nan, dtype))
        column = ordo.tensor(np.ones((4, 1), dtype))
        return [((x + s) * column).numpy(), ((x * s) * column).numpy()]

    for fused, unfused in zip(run(True), run(False)):
        np.testing.assert_array_equal(fused.view(np.uint8), unfused.view(np.uint8))
        assert not np.signbit(fused).any()  # x's NaN, the first operand's


def test_the_program_listing_says_how_to_replay():
    program = dataclasses.replace(generate(3), seed=3)
    text = str(FuzzFailure(program, "something differs"))
    assert "something differs" in text and "program seed=3" in text and "--replay 3" in text
