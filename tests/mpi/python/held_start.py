"""Under mpirun with 2 processes: process 1 is held in Python for a minute
before it starts ordo; process 0's start (ordo.init) must warn at the
collective warning time and fail with CollectiveTimeoutError at the
collective timeout, naming process 1, and the job must then end (issue
39, item 9: it waited without a word and without an end). Process 0
prints "ordo-mesh-test PASS ..." when its start failed so."""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import ordo  # noqa: E402

if os.environ["OMPI_COMM_WORLD_RANK"] == "1":
    time.sleep(60)
    sys.exit("process 1 was not ended when process 0 gave up its start")

timeout = float(os.environ["ORDO_COLLECTIVE_TIMEOUT_SECONDS"])
start = time.monotonic()
try:
    ordo.init()
except ordo.CollectiveTimeoutError as error:
    seconds = time.monotonic() - start
    message = str(error)
    if "missing: process 1" not in message or not timeout <= seconds < timeout + 3:
        sys.exit(f"ordo-mesh-test FAIL after {seconds:.1f} s: {message}")
    print(f"ordo-mesh-test PASS: process 0 failed its start in {seconds:.1f} s: {message}", flush=True)
    sys.exit(1)  # as an uncaught error would: mpirun ends the job
sys.exit(f"ordo-mesh-test FAIL: the runtime started without process 1: {ordo.world_size()} devices")
