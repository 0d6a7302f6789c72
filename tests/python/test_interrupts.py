"""Waits that end when they must: a timeout shorter than the warning time
wins and its message tells the truth. Each case runs in a fresh interpreter
with a time limit, so that a hang fails the test instead of stalling the
suite."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
CONFIG_VARIABLES = ("ORDO_NUM_DEVICES", "ORDO_COLLECTIVE_TIMEOUT_SECONDS", "ORDO_COLLECTIVE_WARN_SECONDS")
CHILD_TIME_LIMIT = 60  # seconds; a child that takes longer hangs


def child_environment(**environment):
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARIABLES}
    env.update(environment, PYTHONPATH=str(PYTHON_DIR))
    return env


def run_child(code, **environment):
    """Runs code in a fresh interpreter; returns (the JSON it printed last,
    everything it printed on stdout and stderr)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_environment(**environment),
                          capture_output=True, text=True, timeout=CHILD_TIME_LIMIT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stdout + done.stderr


# ---- A timeout shorter than the warning time. ----

TIMED_WAIT = """
    import json, time, ordo
    {setup}
    start = time.monotonic()
    try:
        {wait}
        outcome = ["no error", ""]
    except ordo.CollectiveError as error:
        outcome = [type(error).__name__, str(error)]
    print(json.dumps([time.monotonic() - start] + outcome))
"""

ALL_REDUCE_WITHOUT_PEERS = 'ordo.all_reduce("sum", ordo.ones([4])).numpy()'  # devices 1-3 never come


@pytest.mark.parametrize("setup, wait, environment, timeout", [
    ("", ALL_REDUCE_WITHOUT_PEERS, {"ORDO_COLLECTIVE_TIMEOUT_SECONDS": "3"}, 3),
    ("ordo.set_collective_timeout(2, warn_seconds=10)", ALL_REDUCE_WITHOUT_PEERS, {}, 2),
    ("ordo.set_collective_timeout(2, warn_seconds=10)", 'ordo.rendezvous("lonely")', {}, 2),
], ids=["environment, collective", "set_collective_timeout, collective", "set_collective_timeout, rendezvous"])
def test_a_timeout_shorter_than_the_warning_time_wins(setup, wait, environment, timeout):
    (waited, error, message), printed = run_child(TIMED_WAIT.format(setup=setup, wait=wait), **environment)
    assert error == "CollectiveTimeoutError", message
    assert f"waited {timeout} s" in message
    # Before, the wait slept until the warning time (30 s, 10 s) first.
    assert timeout <= waited < timeout + 5
    assert "has waited" not in printed  # no warning: the error says it all
