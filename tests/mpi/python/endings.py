"""How processes end under mpirun when they do not end together
(tests/mpi/mpi_tests.cmake runs it through tests/mpi/mesh_expect.sh, which
counts the lines it prints):

    ORDO_TEST_ENDING=finish_early   process 1 runs one step fewer than the
                                    others and exits cleanly (all_reduce
                                    steps; ORDO_TEST_STEP=rendezvous: the
                                    steps are rendezvous)
    ORDO_TEST_ENDING=sleep          process 1 sleeps in Python at step 5
    ORDO_TEST_ENDING=sigstop        process 1 stops itself (SIGSTOP) at step 5
    ORDO_TEST_ENDING=mismatch       process 1 brings an all_gather to step 5,
                                    catches its error, then sleeps
    ORDO_TEST_ENDING=together       as mismatch, but process 1 exits too
    ORDO_TEST_ENDING=ctrl_c         process 1 gets Ctrl-C (SIGINT) at step 5
                                    while its first device waits there and
                                    its last computes in Python (in a 2 x 2
                                    job, the leader of its devices in the
                                    world's group)

Every device of the other processes prints, once its step fails,
"ordo-ending-test: device N failed after S s: <message>" (a failure later
than BOUND_SECONDS, or steps that all succeed, print "ordo-mesh-test FAIL");
its process then exits: 0 after finish_early and together, else 1. A
process that sleeps or is stopped sleeps far past the test's time limit,
so the job ends in time only if the process that gave up exits without
waiting for it."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import ordo  # noqa: E402
from mesh_lines import failed, say  # noqa: E402

MODE = os.environ["ORDO_TEST_ENDING"]
STEP = os.environ.get("ORDO_TEST_STEP", "all_reduce")
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
ODD_ONE = 1  # the process that ends, stops or disagrees
ODD_STEP = 5
STEPS = 21
BOUND_SECONDS = 10.0


def step(ordinal, index):
    if STEP == "rendezvous":
        ordo.rendezvous(f"step {index}", bytes([ordinal]))
        return
    x = ordo.ones(64) * (ordinal + 1)
    if MODE in ("mismatch", "together") and RANK == ODD_ONE and index == ODD_STEP:
        ordo.all_gather(x).numpy()
    else:
        ordo.all_reduce(ordo.REDUCE_SUM, x).numpy()


def odd_one(ordinal):
    steps = STEPS - 1 if MODE == "finish_early" else STEPS
    for index in range(steps):
        if index == ODD_STEP and (MODE == "sleep" or (MODE == "ctrl_c" and ordinal == LAST_LOCAL)):
            time.sleep(600)
        while index == ODD_STEP and MODE == "sigstop":  # frozen until mpirun ends the job
            os.kill(os.getpid(), signal.SIGSTOP)  # again if ever resumed: one run in six went on at once
            time.sleep(0.05)
        try:
            step(ordinal, index)
        except ordo.CollectiveError as e:
            say(f"ordo-ending-test: odd device {ordinal} failed: {e}")
            if MODE == "mismatch":
                time.sleep(600)
            return


def others(ordinal):
    start = None
    try:
        for index in range(STEPS):
            if index == ODD_STEP - 1 or (MODE == "finish_early" and index == STEPS - 2):
                start = time.monotonic()  # the odd one's last good step, or so
            step(ordinal, index)
    except ordo.CollectiveError as e:
        failed("ending", ordinal, start, e, BOUND_SECONDS)
        return
    say(f"ordo-mesh-test FAIL: device {ordinal}'s steps all succeeded")


LAST_LOCAL = (RANK + 1) * int(os.environ.get("ORDO_NUM_DEVICES", "1")) - 1
if MODE == "ctrl_c" and RANK == ODD_ONE:
    # The user's Ctrl-C, once the waiting device is in step 5's all_reduce.
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
ordo.spawn(odd_one if RANK == ODD_ONE else others)
sys.exit(0 if MODE in ("finish_early", "together") or RANK == ODD_ONE else 1)
