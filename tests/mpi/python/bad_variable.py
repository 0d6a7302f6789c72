"""Under mpirun, a bad ORDO_* value fails every process's start, naming the
variable and its value (issue 39, item 9: a timeout of 'x' was read when a
collective first waited, and failed one device hundreds of steps in while
its peers said it was gone). Exits 0 when this process's start failed so."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import ordo  # noqa: E402

EXPECTED = "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'x' is not a positive, finite number of seconds"

try:
    ordo.init()
except ValueError as error:
    sys.exit(0 if str(error) == EXPECTED else f"another error: {error}")
sys.exit(f"the runtime started: {ordo.world_size()} devices")
