"""Shapes whose element or byte count overflows int64 raise ValueError when
the op is called, naming the shape and why; tensors too large for memory
raise OutOfMemoryError (an ExecutionError and a MemoryError) where run-time
failures surface, and the runtime goes on. Each case runs in a fresh
interpreter with a timeout: before these checks most of them crashed the
process (SIGSEGV, heap corruption) or hung filling memory."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from package_dir import PYTHON_DIR

PRELUDE = """
import json
import numpy as np
import ordo


def outcome(call):
    try:
        result = call()
    except Exception as error:
        return {"class": type(error).__name__, "message": str(error),
                "value_error": isinstance(error, ValueError), "memory_error": isinstance(error, MemoryError),
                "execution_error": isinstance(error, ordo.ExecutionError)}
    return {"class": "accepted", "message": repr(result)}
"""


def run_isolated(body, timeout=60):
    """Runs PRELUDE + body in a fresh interpreter on 4 devices; returns the
    JSON of the last line it printed. A crash fails the test with its
    signal and output instead of taking the suite down."""
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), ORDO_NUM_DEVICES="4")
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.splitlines()[-1])


def refused(expression):
    return run_isolated(f"print(json.dumps(outcome(lambda: {expression})))")


# (expression, a part of the ValueError's message). The first ten are the
# reproducers of issue #11.
REFUSED = [
    ("ordo.rand([2**62])",
     "rand_uniform: shape [4611686018427387904] of float32 needs 18446744073709551616 bytes"),
    ("ordo.randn([2**61], dtype=ordo.float64)",
     "rand_normal: shape [2305843009213693952] of float64 needs 18446744073709551616 bytes"),
    ("ordo.arange(0, 2**62).sum().numpy()",
     "arange: shape [4611686018427387904] of int64 needs 36893488147419103232 bytes"),
    ("ordo.one_hot(ordo.tensor([0]), 2**62).sum().numpy()",
     "one_hot: shape [1, 4611686018427387904] of int64 needs 36893488147419103232 bytes"),
    ("ordo.arange(4).reshape(2**62 + 1, 4)[2**62].numpy()",
     "reshape: shape [4611686018427387905, 4] has 18446744073709551620 elements, more than int64 can hold"),
    ("ordo.ones([1, 1]).broadcast_to([2**62 + 1, 4]) @ ordo.ones([4, 1])",
     "broadcast_to: shape [4611686018427387905, 4] has 18446744073709551620 elements"),
    ("ordo.ones([2**32, 2**32]).sum().numpy()",
     "full: shape [4294967296, 4294967296] has 18446744073709551616 elements, more than int64 can hold "
     "(9223372036854775807); dimension 1 (4294967296) takes the count past it"),
    ("ordo.arange(0.0, 1e20, 1.0, dtype=ordo.float64)",
     "arange: [0, 1e+20) by step 1 has 1e+20 elements, more than int64 can hold"),
    # [2**62, 2] is itself 2**63 elements: refused when made.
    ("ordo.cat([ordo.ones([2**62, 2]), ordo.ones([2**62, 2])])",
     "full: shape [4611686018427387904, 2] has 9223372036854775808 elements"),
    ("ordo.cat([ordo.ones([2**62], dtype=ordo.bool_)] * 2).sum().numpy()",
     "concat: dimension 0 of the result would be the sum of the inputs' sizes "
     "[4611686018427387904, 4611686018427387904], more than int64 can hold"),
    # Shapes ordo computes: broadcasting, matmul, collectives.
    ("ordo.ones([2**40, 1]) + ordo.ones([1, 2**40])",
     "add: shape [1099511627776, 1099511627776] has 1208925819614629174706176 elements"),
    ("ordo.ones([2**32, 2]) @ ordo.ones([2, 2**32])", "matmul: shape [4294967296, 4294967296] has"),
    ("ordo.all_gather(ordo.ones([2**62], dtype=ordo.bool_))",
     "all_gather: dimension 0 of the result would be 4611686018427387904 (of shape [4611686018427387904]) "
     "times the group size 4, more than int64 can hold"),
    ("ordo.zeros([0, 2**62, 2**62])", "is empty, but its nonzero dimensions multiply to"),
    # arange: bounds and steps that are not finite, or integers past int64.
    ("ordo.arange(float('nan'))", "arange: stop must be finite, got nan"),
    ("ordo.arange(float('-inf'), 0.0)", "arange: start must be finite, got -inf"),
    ("ordo.arange(0.0, 1.0, float('inf'))", "arange: step must be finite, got inf"),
    ("ordo.arange(0.0, 1.0, 0.0)", "arange: step must not be zero"),
    ("ordo.arange(0, 1e300, 1e-300)", "has inf elements, more than int64 can hold"),
    ("ordo.arange(-2**63, 2**63 - 1)", "has 18446744073709551615 elements, more than int64 can hold"),
]


@pytest.mark.parametrize("expression,message", REFUSED, ids=[case[0] for case in REFUSED])
def test_shapes_that_overflow_raise_value_error(expression, message):
    result = refused(expression)
    assert result["class"] == "ValueError", result
    assert message in result["message"], result


def test_integer_ranges_are_counted_exactly():
    # Rounded to double, both bounds are 2**60: the range came out empty.
    result = refused("ordo.arange(2**60, 2**60 + 3).numpy().tolist()")
    assert result == {"class": "accepted", "message": repr([2**60, 2**60 + 1, 2**60 + 2])}


AFTER_A_FAILED_ALLOCATION = """
failure = outcome(lambda: {expression})
again = outcome(ordo.mark_step)          # the device's next mark_step reports it once
after = outcome(ordo.mark_step)
small = outcome(lambda: (ordo.arange(5, dtype=ordo.float32) * 2).sum().item())
print(json.dumps([failure, again, after, small]))
"""


def check_out_of_memory(expression, message):
    failure, again, after, small = run_isolated(AFTER_A_FAILED_ALLOCATION.format(expression=expression))
    for result in (failure, again):
        assert result["class"] == "OutOfMemoryError", result
        assert result["memory_error"] and result["execution_error"], result
        assert message in result["message"], result
    assert after == {"class": "accepted", "message": "None"}
    assert small == {"class": "accepted", "message": "20.0"}


def test_a_tensor_larger_than_any_address_space_raises_out_of_memory_and_the_runtime_goes_on():
    # 2**59 float32 are 2 EiB: no machine maps that, whatever its overcommit setting.
    check_out_of_memory(
        "ordo.ones([2**59]).sum().numpy()",
        "full (node %0 of graph ")
    check_out_of_memory(
        "ordo.ones([2**59]).sum().numpy()",
        "failed on device 0: cannot allocate 2 EiB (2305843009213693952 bytes) for a float32 tensor of shape "
        "[576460752303423488]: out of memory")


def test_a_random_tensor_too_large_for_memory_raises_when_made():
    result = refused("ordo.rand([2**59], device=1)")
    assert result["class"] == "OutOfMemoryError" and result["memory_error"], result
    assert result["message"] == ("rand_uniform on device 1: cannot allocate 2 EiB (2305843009213693952 bytes) "
                                 "for a float32 tensor of shape [576460752303423488]: out of memory")


def _memory_refuses(nbytes):
    """Whether the kernel refuses to map nbytes at once: with overcommit
    mode 1 it maps anything, and filling it would summon the OOM killer."""
    try:
        mode = Path("/proc/sys/vm/overcommit_memory").read_text().strip()
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    except OSError:
        return False
    available = sum(int(fields[name].split()[0]) * 1024 for name in ("MemTotal", "SwapTotal"))
    return mode != "1" and nbytes > 4 * available


@pytest.mark.skipif(not _memory_refuses(4 << 40), reason="this host's overcommit policy would map 4 TiB")
def test_four_tebibytes_raise_out_of_memory_naming_the_size():
    check_out_of_memory("ordo.ones([2**40]).sum().numpy()",
                        "cannot allocate 4 TiB (4398046511104 bytes) for a float32 tensor of shape [1099511627776]")
