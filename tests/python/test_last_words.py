"""Under mpirun, an uncaught exception tells the other processes why this
one ends (ordo's process mesh), then Python reports it as always; started
without mpirun, sys.excepthook is left alone. Each case in a subprocess."""

import os
import subprocess
import sys

import pytest

PROGRAM = """
import sys
import ordo
print("hooked" if sys.excepthook is not sys.__excepthook__ else "untouched", flush=True)
said = []
ordo._C._say_last_words = lambda why: said.append(why) or False
raise RuntimeError("boom")
"""

PROGRAM_WITH_SPY = PROGRAM.replace('raise RuntimeError("boom")', '''
import atexit
atexit.register(lambda: print("said:", said, flush=True))
raise RuntimeError("boom")''')


def run(program, mpi):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_")}
    if mpi:
        env["OMPI_COMM_WORLD_SIZE"] = "1"  # as mpirun sets it; no mesh is joined here
    return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mpi", [False, True])
def test_an_uncaught_exception_is_still_reported_and_fails_the_process(mpi):
    result = run(PROGRAM_WITH_SPY, mpi)
    assert result.returncode == 1
    assert "RuntimeError: boom" in result.stderr
    assert result.stdout.splitlines()[0] == ("hooked" if mpi else "untouched")
    assert result.stdout.splitlines()[-1] == ("said: ['raised RuntimeError: boom']" if mpi else "said: []")


def test_without_a_mesh_the_last_words_go_nowhere():
    import ordo
    assert ordo._C._say_last_words("raised RuntimeError: boom") is False
