"""The timeline across processes: every process traces the same steps (the last device comes late to the
second step's all_reduces) and calls stop_trace; process 0's one file must hold every process's rows, each
device with every collective, and name the late device (tests/python/test_trace.py's checks).

    scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=2 /usr/bin/python3 tests/mpi/python/trace.py /tmp/t.json"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import ordo  # noqa: E402
from test_trace import HOST_LANE_TID, check_event_format, check_steps_of, thread_names, traced_steps  # noqa: E402


def main(path):
    world, local = ordo.world_size(), len(ordo.devices())
    late = world - 1
    ordo.start_trace(path)
    ordo.spawn(traced_steps, (late,))
    ordo.stop_trace()
    if ordo.get_ordinal() != 0:  # the main thread is on its first device
        return 0  # process 0 writes the file
    trace = json.loads(Path(path).read_text())
    rows = check_event_format(trace)
    names = thread_names(trace)
    processes = world // local
    for ordinal in range(world):
        pid = ordinal // local
        assert names[(pid, ordinal)] == f"ordo:{ordinal % local}" + (f" (ordinal {ordinal})" if processes > 1 else "")
        assert (pid, HOST_LANE_TID + ordinal) in names
        check_steps_of(rows, pid, ordinal, late)
    assert {pid for pid, _ in rows} == set(range(processes))
    print(f"merged trace: {processes} processes, {world} devices, {len(trace['traceEvents'])} events")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
