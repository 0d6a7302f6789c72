"""ORDO_IR_DEBUG=1: every IR node records the user's Python line (the first
frame outside the ordo package), graph dumps show it, a collective mismatch
names each device's line, and a device that reaches a collective from
another line than its peers is a mismatch on every device. Without it the
same programs behave as before.

Each case runs in a subprocess of its own (`test_ir_debug.py <case>`), with
or without ORDO_IR_DEBUG in its environment, which the runtime reads once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import ordo
from package_dir import PYTHON_DIR

HERE = Path(__file__).resolve().parent
FILE = Path(__file__).name


# Each collective comes from its own line: the line of its def.
def reduce_here(x): return ordo.all_reduce(ordo.REDUCE_SUM, x)  # noqa: E704
def gather_here(x): return ordo.all_gather(x)  # noqa: E704
def extra_reduce_here(x): return ordo.all_reduce(ordo.REDUCE_SUM, x)  # noqa: E704
def next_reduce_here(x): return ordo.all_reduce(ordo.REDUCE_SUM, x)  # noqa: E704
def add_here(x): return x + 1  # noqa: E704
def loss_here(x): return ordo.nn.functional.mse_loss(x, x * 2)  # noqa: E704


def at_line(function):
    return f"{FILE}:{function.__code__.co_firstlineno}"


def outcome_record(call):
    try:
        return ["ok", call()]
    except Exception as error:  # noqa: BLE001 - the class is the result
        return [type(error).__name__, str(error)]


def mismatch(index):
    x = ordo.ones(4)
    return (gather_here(x) if index == 3 else reduce_here(x)).numpy().tolist()


def extra_all_reduce(index):
    s = reduce_here(ordo.ones(4))
    if index == 0:
        s = extra_reduce_here(s)
    return next_reduce_here(ordo.ones(4)).numpy().tolist()


# ---- Cases run in a subprocess: what they print is the last line's JSON. ----

def spawned(case):
    ordo.set_collective_timeout(5.0, warn_seconds=5.0)
    return ordo.spawn(lambda index: outcome_record(lambda: case(index)))


def dump():
    x = ordo.ones(4)
    y = add_here(x)
    loss = loss_here(y)
    reduce_here(y)
    assert loss is not None
    return ordo._C.dump_pending_graph(0)


CASES = {
    "mismatch": lambda: spawned(mismatch),
    "extra all_reduce": lambda: spawned(extra_all_reduce),
    "dump": dump,
}


def run_case(name, ir_debug):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    env.pop("ORDO_IR_DEBUG", None)
    if ir_debug:
        env["ORDO_IR_DEBUG"] = "1"
    done = subprocess.run([sys.executable, str(HERE / FILE), name], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_mismatch_names_the_python_line_of_each_device():
    outcomes = run_case("mismatch", ir_debug=True)
    for kind, message in outcomes:
        assert kind == "CollectiveMismatchError", message
        assert f"all_reduce(sum, scale 1) of float32[4] at " in message
        assert f"all_gather(dim 0) of float32[4] at " in message
        assert at_line(reduce_here) in message and at_line(gather_here) in message
        assert ".cc:" not in message  # the Python line, not the binding's


def test_without_ir_debug_a_mismatch_names_no_lines():
    outcomes = run_case("mismatch", ir_debug=False)
    for kind, message in outcomes:
        assert kind == "CollectiveMismatchError", message
        assert "float32[4] at " not in message and FILE not in message


def test_an_extra_all_reduce_from_another_line_is_a_mismatch_on_every_device():
    outcomes = run_case("extra all_reduce", ir_debug=True)
    for kind, message in outcomes:
        assert kind == "CollectiveMismatchError", message
        assert at_line(extra_reduce_here) in message and at_line(next_reduce_here) in message


def test_without_ir_debug_the_extra_all_reduce_meets_its_peers_next_one():
    outcomes = run_case("extra all_reduce", ir_debug=False)
    # The peers silently get 1 + 1 + 1 + 4 where 4 was right; only the
    # extra device fails, later, waiting alone.
    assert outcomes[1:] == [["ok", [7.0] * 4]] * 3
    assert outcomes[0][0] == "CollectiveError", outcomes[0]


def test_graph_dumps_show_the_users_line_of_every_op():
    text = run_case("dump", ir_debug=True)
    assert f"add(" in text and f"all_reduce(" in text
    lines = text.splitlines()
    assert any("add(" in line and line.endswith(at_line(add_here)) for line in lines), text
    # mse_loss is Python of the ordo package: its ops are the user's line.
    assert sum(line.endswith(at_line(loss_here)) for line in lines) >= 3, text
    assert any("all_reduce(" in line and line.endswith(at_line(reduce_here)) for line in lines), text
    assert "python/ordo/" not in text
    assert ".cc:" not in text  # no op records a binding's C++ line


def test_without_ir_debug_graph_dumps_show_no_lines():
    text = run_case("dump", ir_debug=False)
    assert "all_reduce(" in text and " at " not in text


if __name__ == "__main__":
    print(json.dumps(CASES[sys.argv[1]]()))
