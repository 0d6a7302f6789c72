"""A spawn after a failed one, under mpirun (tests/mpi/mpi_tests.cmake runs
it through tests/mpi/mesh_expect.sh, which counts the lines it prints).

The last device's spawn function raises after one all_reduce; every
process catches its spawn's error and spawns again. In one process that
spawn would start afresh; under mpirun the processes share the
collectives' numbering, so it must refuse at once, before it runs
anything, saying what failed:
"ordo-respawn-test: process R: spawn refused: <message>". Then every
process restarts its runtime (shutdown, init) and its devices' all_reduce
succeeds: "ordo-respawn-test: process R: after init: <sums>"."""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import ordo  # noqa: E402
from mesh_lines import say  # noqa: E402



def total(ordinal):
    return float(ordo.all_reduce(ordo.REDUCE_SUM, ordo.tensor([ordinal + 1.0])).numpy()[0])


def raises_on_the_last_device(ordinal):
    total(ordinal)
    if ordinal == ordo.world_size() - 1:
        raise RuntimeError("boom on the last device")
    total(ordinal)


def main():
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    try:
        ordo.spawn(raises_on_the_last_device)
        say(f"ordo-mesh-test FAIL: process {rank}: the first spawn succeeded")
    except ordo.CollectiveError:
        pass
    except RuntimeError:  # the last device's own error, on its process
        pass
    ran = []
    start = time.monotonic()
    try:
        ordo.spawn(lambda ordinal: ran.append(ordinal))
        say(f"ordo-mesh-test FAIL: process {rank}: the spawn after a failure started")
    except ordo.CollectiveError as e:
        seconds = time.monotonic() - start
        say(f"ordo-respawn-test: process {rank}: spawn refused after {seconds:.2f} s, having run {ran}: {e}")
    ordo.shutdown()
    ordo.init()
    world = ordo.world_size()
    sums = ordo.spawn(total)
    say(f"ordo-respawn-test: process {rank}: after init: {sums} (expected {world * (world + 1) / 2})")


if __name__ == "__main__":
    main()
