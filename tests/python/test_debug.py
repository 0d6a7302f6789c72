"""Seeing what ran: the log's level (ORDO_LOG_LEVEL, ordo.set_log_level),
compiled graphs saved to files (ORDO_SAVE_GRAPHS_FILE, _FMT) and ORDO_DEBUG's
warnings about recompiling graphs and reads every step. The environment is
read when the runtime starts: each case runs a subprocess."""

import os
import subprocess
import sys

import pytest

import ordo

SETUP = """
import numpy as np
import ordo
w = ordo.tensor(np.ones(4, np.float32))
g = ordo.tensor(np.full(4, 0.5, np.float32))
"""

# The learning rate is a Python number: a constant of each step's graph, so
# every step compiles a new graph.
RECOMPILING_LOOP = SETUP + """
for step in range(20):
    lr = (step + 1) / 100
    w = w - lr * g
    ordo.mark_step()
"""

# The learning rate enters as device data: one graph for every step.
STEADY_LOOP = SETUP + """
for step in range(20):
    lr = (step + 1) / 100
    w = w - ordo.tensor(lr) * g
    ordo.mark_step()
"""

READING_LOOP = STEADY_LOOP + "    print(w.numpy()[0])\n"


def run(program, succeeds=True, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ORDO_", "OMPI_"))}
    full_env.update({"ORDO_NUM_DEVICES": "2", **env})
    result = subprocess.run([sys.executable, "-c", program], env=full_env, capture_output=True, text=True,
                            timeout=120)
    assert (result.returncode == 0) == succeeds, result.stderr
    return result


def ordo_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("ordo: ")]


def test_a_recompiling_loop_is_warned_about_once_naming_the_constant():
    lines = ordo_lines(run(RECOMPILING_LOOP, ORDO_DEBUG="1"))
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("ordo: device 0 compiled 10 graphs in the last 10 steps (ORDO_DEBUG)"), line
    # At step 10, when it is said, the last two graphs baked in 0.09 and 0.1.
    assert "differ at node %1: full() ints=[0] reals=[0.09] : float32[] vs full() ints=[0] reals=[0.1] : float32[]." \
        in line, line
    assert "ordo.tensor(lr)" in line


def test_a_steady_loop_says_nothing():
    assert ordo_lines(run(STEADY_LOOP, ORDO_DEBUG="1")) == []


def test_without_ordo_debug_a_recompiling_loop_says_nothing():
    assert ordo_lines(run(RECOMPILING_LOOP)) == []


def test_reading_a_value_every_step_is_warned_about_once():
    lines = ordo_lines(run(READING_LOOP, ORDO_DEBUG="1"))
    assert lines == ["ordo: device 0 read values back to the host in each of the last 10 steps (ORDO_DEBUG): each "
                     "read waits for the device to finish the step. Read less often (every N steps), or keep the "
                     "values on the device"], lines


def test_reading_every_other_step_says_nothing():
    program = STEADY_LOOP + "    if step % 2: print(w.numpy()[0])\n"
    assert ordo_lines(run(program, ORDO_DEBUG="1")) == []


def test_the_log_level_error_silences_the_warnings():
    assert ordo_lines(run(RECOMPILING_LOOP, ORDO_DEBUG="1", ORDO_LOG_LEVEL="error")) == []
    assert ordo_lines(run(RECOMPILING_LOOP, ORDO_DEBUG="1", ORDO_LOG_LEVEL="0")) == []


def test_at_level_info_every_compile_is_said():
    lines = ordo_lines(run(RECOMPILING_LOOP, ORDO_DEBUG="1", ORDO_LOG_LEVEL="info"))
    compiling = [line for line in lines if line.startswith("ordo: compiling device 0, graph ")]
    assert len(compiling) == 20, lines  # every step's constant differs
    assert [line.split(", step ")[1] for line in compiling][:2] == ["1 (5 nodes)", "2 (5 nodes)"], compiling
    assert len([line for line in lines if line.startswith("ordo: device 0 compiled 10 graphs")]) == 1, lines
    assert len(lines) == 21, lines


# They were warnings, and the program ran on with the defaults.
def test_bad_values_fail_the_start_naming_each():
    result = run(RECOMPILING_LOOP, succeeds=False, ORDO_DEBUG="yes", ORDO_LOG_LEVEL="loud")
    assert result.stderr.splitlines()[-1] == (
        "ValueError: ORDO_LOG_LEVEL: 'loud' is not a log level (error, warning, info, debug or 0-3); "
        "ORDO_DEBUG: 'yes' is not a switch (1, on, true; or 0, off, false)")


def test_set_log_level_in_python():
    old = ordo.log_level()
    try:
        ordo.set_log_level("info")
        assert ordo.log_level() == "info"
        ordo.set_log_level(0)
        assert ordo.log_level() == "error"
        with pytest.raises(ValueError, match="'loud' is not a log level"):
            ordo.set_log_level("loud")
        with pytest.raises(ValueError, match="'7' is not a log level"):
            ordo.set_log_level(7)
        with pytest.raises(TypeError):
            ordo.set_log_level(1.5)
        assert ordo.log_level() == "error"
    finally:
        ordo.set_log_level(old)


# The compile cache is the process's: a graph one device compiled is a hit
# for the others, so each device's graphs here have a shape of their own.
TWO_DEVICES = """
import numpy as np
import ordo
for device in (0, 1):
    x = ordo.tensor(np.arange(3 + device, dtype=np.float32), device=device)
    for factor in (2.0, 3.0, 2.0):
        y = x * factor
        ordo._C.mark_step(device)
print(y.numpy())
"""


@pytest.mark.parametrize("fmt", ["text", "dot"])
def test_compiled_graphs_are_saved_per_device(tmp_path, fmt):
    path = tmp_path / "graphs"
    run(TWO_DEVICES, ORDO_SAVE_GRAPHS_FILE=str(path), ORDO_SAVE_GRAPHS_FMT=fmt)
    comment = "//" if fmt == "dot" else "##"
    for device in (0, 1):
        text = (tmp_path / f"graphs.{device}").read_text()
        headers = [line for line in text.splitlines() if line.startswith(f"{comment} ordo graph: ")]
        assert len(headers) == 2, text  # the third graph was the first's: a cache hit
        assert all(h.startswith(f"{comment} ordo graph: device {device}, graph ") for h in headers), headers
        assert [h.split(", step ")[1] for h in headers] == ["1", "2"], headers
        assert text.count("digraph") == (2 if fmt == "dot" else 0)
        assert "full() ints=[2] reals=[2] : float32[]" in text and "full() ints=[3] reals=[3] : float32[]" in text


# One graph on two devices: device 0 compiles it, device 1 hits the cache.
SAME_GRAPH_ON_TWO_DEVICES = """
import numpy as np
import ordo
for device in (0, 1):
    for _ in range(2):
        y = ordo.tensor(np.arange(3, dtype=np.float32), device=device) * 2.0
        ordo._C.mark_step(device)
print(y.numpy())
"""


def test_a_graph_another_device_compiled_is_saved_once_in_this_ones_file(tmp_path):
    path = tmp_path / "graphs"
    run(SAME_GRAPH_ON_TWO_DEVICES, ORDO_SAVE_GRAPHS_FILE=str(path))
    entries = [(tmp_path / f"graphs.{device}").read_text().split("## ordo graph: ")[1:] for device in (0, 1)]
    assert [len(e) for e in entries] == [1, 1], entries
    assert entries[0][0].startswith("device 0, graph ") and entries[1][0].startswith("device 1, graph ")
    # The same graph: the same hash and lines, each file under its own device.
    assert entries[0][0].split(", step ")[0].split("graph ")[1] == entries[1][0].split(", step ")[0].split("graph ")[1]
    assert entries[0][0].split("\n", 1)[1] == entries[1][0].split("\n", 1)[1]


# It was a warning at the first compile, and text was saved.
def test_a_bad_graph_format_fails_the_start(tmp_path):
    path = tmp_path / "graphs"
    result = run(TWO_DEVICES, succeeds=False, ORDO_SAVE_GRAPHS_FILE=str(path), ORDO_SAVE_GRAPHS_FMT="svg")
    assert result.stderr.splitlines()[-1] == "ValueError: ORDO_SAVE_GRAPHS_FMT: 'svg' is not one of text, dot"
    assert not (tmp_path / "graphs.0").exists()
