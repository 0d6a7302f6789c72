"""The lines tests/mpi/mesh_expect.sh counts, each written whole."""

import os
import time


def say(line):
    os.write(1, (line + "\n").encode())  # one write: the devices' lines never interleave


def failed(test, ordinal, start, error, bound_seconds):
    """A device's step failed, as the test wants: says after how long and
    why; later than bound_seconds fails the test."""
    seconds = time.monotonic() - start
    say(f"ordo-{test}-test: device {ordinal} failed after {seconds:.2f} s: {error}")
    if seconds > bound_seconds:
        say(f"ordo-mesh-test FAIL: device {ordinal} took {seconds:.1f} s")
