"""Failures across processes, under mpirun (tests/mpi/mpi_tests.cmake runs
it through tests/mpi/mesh_expect.sh, which counts the lines it prints):

    ORDO_TEST_FAILURE=raise    the spawn function raises on the last device
    ORDO_TEST_FAILURE=sigkill  the last process kills itself in a step
    ORDO_TEST_FAILURE=exit     the last process exits without finalizing
    ORDO_TEST_FAILURE=uncaught the last process dies of an uncaught exception

Every other device runs all_reduce steps and prints, once its step fails,
"ordo-failure-test: device N failed after S s: <message>". A failure that
takes longer than 30 s, or a step that succeeds, prints "ordo-mesh-test
FAIL", which fails the test."""

import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import ordo  # noqa: E402
from mesh_lines import failed, say  # noqa: E402

MODE = os.environ["ORDO_TEST_FAILURE"]
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
LAST_PROCESS = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) - 1
BOUND_SECONDS = 30.0


def step(ordinal):
    # Small enough that Open MPI copies it through shared memory: a larger
    # message is read from the sender's memory (CMA), and a read from a
    # process that died makes Open MPI abort the reader (DESIGN.md §7).
    x = ordo.ones(256) * (ordinal + 1)
    return ordo.all_reduce(ordo.REDUCE_SUM, x).numpy()


def run(ordinal):
    world = ordo.world_size()
    step(ordinal)  # every device takes part once
    last_device = ordinal == world - 1
    if last_device and MODE == "raise":
        raise RuntimeError("boom on the last device")
    if RANK == LAST_PROCESS and MODE in ("sigkill", "exit", "uncaught"):
        if ordinal == world - 1:
            if MODE == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            if MODE == "exit":
                os._exit(3)
        time.sleep(60)  # the process ends under this device (uncaught: from the main thread)
        return
    start = time.monotonic()
    try:
        for _ in range(3):
            step(ordinal)
    except ordo.CollectiveError as e:  # the step that needs the gone device
        failed("failure", ordinal, start, e, BOUND_SECONDS)
        return
    say(f"ordo-mesh-test FAIL: device {ordinal}'s steps succeeded without the last device")


if MODE == "uncaught" and RANK == LAST_PROCESS:
    import threading

    threading.Thread(target=lambda: ordo.spawn(run), daemon=True).start()
    time.sleep(1.0)  # the first step is done by then
    raise RuntimeError("boom")
try:
    ordo.spawn(run)
except Exception as e:  # the last device's own failure, on its process
    say(f"ordo-failure-test: process {RANK}: spawn raised {type(e).__name__}")
    sys.exit(1)
