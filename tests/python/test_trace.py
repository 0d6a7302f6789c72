"""The timeline (ordo.start_trace / stop_trace / plot_timeline, ORDO_TRACE_FILE): the file is Chrome's trace
event format with every collective of every device, the late device named and its peers' waits shown; the
PNG is drawn. The checks are shared with the MPI test (tests/mpi/python/trace.py)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ordo

from package_dir import PYTHON_DIR
STEPS = 3
LATE_DEVICE = 2
LATE_SECONDS = 0.3  # far beyond a loaded machine's skew between devices
METADATA = {"process_name", "process_sort_index", "process_labels", "thread_name", "thread_sort_index"}
HOST_LANE_TID = 1000000


def traced_steps(ordinal, late_ordinal=LATE_DEVICE):
    """STEPS steps of two chained all_reduces; late_ordinal comes LATE_SECONDS late to step 1's."""
    for step in range(STEPS):
        x = ordo.tensor(np.full(4, float(ordinal), np.float32))
        if step == 1 and ordinal == late_ordinal:
            time.sleep(LATE_SECONDS)
        y = ordo.all_reduce(ordo.REDUCE_SUM, ordo.all_reduce(ordo.REDUCE_SUM, x))
        ordo.mark_step()
        y.numpy()
    return ordinal


def check_event_format(trace):
    """Chrome's trace event format as ordo writes it; returns the complete events by (pid, tid)."""
    assert set(trace) >= {"traceEvents"}
    rows, named = {}, set()
    for event in trace["traceEvents"]:
        assert event["ph"] in ("X", "M"), event
        assert isinstance(event["pid"], int) and isinstance(event["name"], str)
        if event["ph"] == "M":
            assert event["name"] in METADATA and isinstance(event["args"], dict), event
            if event["name"] == "thread_name":
                named.add((event["pid"], event["tid"]))
            continue
        assert isinstance(event["tid"], int) and isinstance(event["cat"], str)
        assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float)), event
        assert event["ts"] >= 0 and event["dur"] >= 0, event
        rows.setdefault((event["pid"], event["tid"]), []).append(event)
    for key, events in rows.items():
        assert key in named, f"row {key} has no thread_name"
        starts = [e["ts"] for e in events]
        assert starts == sorted(starts), f"row {key} is not in time order"
    return rows


def thread_names(trace):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}


def check_steps_of(rows, pid, ordinal, late_ordinal):
    """Every collective of the device with its args and its wait inside it; the late device named."""
    device = rows[(pid, ordinal)]
    collectives = [e for e in device if e["name"] == "all_reduce"]
    assert len(collectives) == 2 * STEPS, f"device {ordinal}: {len(collectives)} all_reduces"
    waits = [e for e in device if e["name"] == "wait"]
    for c in collectives:
        assert c["cat"] == "collective" and c["args"]["bytes"] == 16
        assert 0 <= c["args"]["wait_us"] <= c["dur"] + 1e-3
        inside = [w for w in waits if c["ts"] <= w["ts"] and w["ts"] + w["dur"] <= c["ts"] + c["dur"] + 1e-3]
        assert len(inside) == 1 and abs(inside[0]["dur"] - c["args"]["wait_us"]) < 1e-2, c
    assert len([e for e in device if e["name"] == "execute"]) == STEPS
    host = rows[(pid, HOST_LANE_TID + ordinal)]
    assert len([e for e in host if e["name"] == "mark_step"]) == STEPS
    assert len([e for e in host if e["name"] == "trace"]) == STEPS
    if ordinal != late_ordinal:
        late = [c for c in collectives
                if c["args"]["last_device"] == late_ordinal and c["args"]["wait_us"] > LATE_SECONDS * 1e6 / 2]
        assert late, f"device {ordinal} never waited for device {late_ordinal}"


def test_the_file_has_every_collective_of_every_device_and_names_the_late_one(tmp_path):
    path = tmp_path / "trace.json"
    ordo._C.reset_compile_cache()
    ordo.start_trace(path)
    assert ordo.is_tracing()
    assert ordo.spawn(traced_steps) == [0, 1, 2, 3]
    assert ordo.stop_trace() == str(path)
    assert not ordo.is_tracing()
    trace = json.loads(path.read_text())
    rows = check_event_format(trace)
    names = thread_names(trace)
    for d in range(4):
        assert names[(0, d)] == f"ordo:{d}" and names[(0, HOST_LANE_TID + d)] == f"ordo:{d} host"
        check_steps_of(rows, 0, d, LATE_DEVICE)
    # Compiled by whichever devices came first (at most each once), then found in the cache.
    compiles = [e for d in range(4) for e in rows[(0, HOST_LANE_TID + d)] if e["name"] == "compile"]
    assert 1 <= len(compiles) <= 4 and all(len(e["args"]["graph_hash"]) == 16 for e in compiles)


def test_the_png_is_written(tmp_path):
    trace, png = tmp_path / "trace.json", tmp_path / "timeline.png"
    ordo.start_trace(trace)
    ordo.spawn(traced_steps)
    ordo.stop_trace()
    assert ordo.plot_timeline(str(trace), str(png)) == str(png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_a_new_trace_starts_empty_and_nothing_is_recorded_between(tmp_path):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    ordo.start_trace(first)
    ordo.spawn(traced_steps)
    ordo.stop_trace()
    ordo.spawn(traced_steps)  # not traced
    ordo.start_trace(second)
    (ordo.tensor([1.0]) + 1).numpy()
    ordo.stop_trace()
    spans = [e for e in json.loads(second.read_text())["traceEvents"] if e["ph"] == "X"]
    assert "execute" in {e["name"] for e in spans}
    assert not any(e["name"] in ("all_reduce", "wait") for e in spans)
    assert min(e["ts"] for e in spans) >= 0


def test_bad_calls_raise_value_error_and_change_nothing(tmp_path):
    with pytest.raises(ValueError, match="no trace is on"):
        ordo.stop_trace()
    with pytest.raises(ValueError, match="does not exist"):
        ordo.start_trace(tmp_path / "missing" / "trace.json")
    assert not ordo.is_tracing()
    ordo.start_trace(tmp_path / "trace.json")
    with pytest.raises(ValueError, match="already on"):
        ordo.start_trace(tmp_path / "other.json")
    ordo.stop_trace()
    assert not (tmp_path / "other.json").exists()


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYTHON_DIR, **env},
                          capture_output=True, text=True, timeout=120)


SPAWN_PROGRAM = """
import sys
sys.path.insert(0, {tests!r})
import ordo
from test_trace import traced_steps
ordo.spawn(traced_steps)
{end}
"""


@pytest.mark.parametrize("end", ["", "ordo.shutdown()"], ids=["at_exit", "at_shutdown"])
def test_ordo_trace_file_traces_the_runtime_until_it_ends(tmp_path, end):
    path = tmp_path / "env.json"
    program = SPAWN_PROGRAM.format(tests=str(Path(__file__).parent), end=end)
    done = run_python(program, ORDO_TRACE_FILE=str(path), ORDO_NUM_DEVICES="4")
    assert done.returncode == 0, done.stderr
    trace = json.loads(path.read_text())
    rows = check_event_format(trace)
    for d in range(4):
        check_steps_of(rows, 0, d, LATE_DEVICE)


def test_ordo_imports_without_matplotlib():
    done = run_python("import sys; sys.modules['matplotlib'] = None\nimport ordo\n"
                      "try:\n    ordo.plot_timeline('x.json', 'x.png')\nexcept ImportError:\n    print('no plot')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no plot"


def test_merge_traces_keeps_every_files_rows(tmp_path):
    paths = []
    for name in ("a", "b"):
        paths.append(tmp_path / f"{name}.json")
        ordo.start_trace(paths[-1])
        ordo.spawn(traced_steps)
        ordo.stop_trace()
    out = tmp_path / "merged.json"
    done = subprocess.run([sys.executable, "-m", "ordo.merge_traces", str(out)] + [str(p) for p in paths],
                          env={**os.environ, "PYTHONPATH": PYTHON_DIR}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.read_text())
    rows = check_event_format(merged)
    first_a = min(e["ts"] for e in json.loads(paths[0].read_text())["traceEvents"] if e["ph"] == "X")
    second_b = min(e["ts"] for pid_tid, es in rows.items() if pid_tid[0] == 1 for e in es)
    assert second_b > first_a  # b ran after a: its times moved past a's
    for pid in (0, 1):  # the second file's process renumbered
        for d in range(4):
            check_steps_of(rows, pid, d, LATE_DEVICE)
