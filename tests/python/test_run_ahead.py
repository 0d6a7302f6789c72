"""mark_step bounds how far tracing runs ahead of execution
(ordo.set_max_steps_ahead, ORDO_MAX_STEPS_AHEAD): a failed step surfaces
within the bound, and 0 makes mark_step synchronous."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ordo
from package_dir import PYTHON_DIR



@pytest.fixture
def bound():
    before = ordo.max_steps_ahead()
    yield ordo.set_max_steps_ahead
    ordo.set_max_steps_ahead(before)


def step_that_fails_at(failing_step, steps):
    """Runs steps of one device; the step failing_step gathers out of range.
    Returns the step whose mark_step raised."""
    w = ordo.ones([4])
    for step in range(steps):
        index = ordo.tensor(np.array([9 if step == failing_step else 0], dtype=np.int64))
        w = w + w.index_select(0, index).sum()
        try:
            ordo.mark_step()
        except ordo.ExecutionError:
            return step
    return None


@pytest.mark.parametrize("steps_ahead", [0, 1, 3])
def test_a_failed_step_surfaces_within_the_bound(bound, steps_ahead):
    bound(steps_ahead)
    ordo.shutdown()
    ordo.init(1)
    raised_at = step_that_fails_at(5, 40)
    assert raised_at is not None and 5 < raised_at <= 5 + steps_ahead + 1
    ordo.shutdown()


def test_the_bound_is_a_whole_number_of_steps(bound):
    assert ordo.max_steps_ahead() == 2  # the default
    with pytest.raises(ValueError, match="0 or more"):
        bound(-1)
    with pytest.raises(TypeError):
        bound(1.5)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, ORDO_MAX_STEPS_AHEAD="x")
    result = subprocess.run([sys.executable, "-c", "import ordo; ordo.ones([1]); ordo.mark_step()"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "ORDO_MAX_STEPS_AHEAD" in result.stderr
