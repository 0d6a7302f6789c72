"""Fixtures of ordo's Python tests.

Every test starts on a fresh runtime of 4 devices (the default) with token
edges on, so a test that breaks the runtime on purpose (a mismatch, a gone
device) cannot leak into the next, and ends by restoring the default
collective timeouts and token edges. Multi-device tests take the `world`
fixture instead, which runs them on 1, 2, 4 and 8 devices."""

import sys

# `import ordo` from the source tree, or from the build PYTHONPATH names.
from package_dir import PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)

import pytest  # noqa: E402

import ordo  # noqa: E402
from spmd import restart  # noqa: E402

WORLD_SIZES = (1, 2, 4, 8)
DEFAULT_NUM_DEVICES = 4
# The library's defaults (include/ordo/collectives.h: CollectiveTimeouts).
DEFAULT_TIMEOUT_SECONDS = 300.0
DEFAULT_WARN_SECONDS = 30.0


# While a test runs, no collective waits longer than this (the default is
# five minutes): a test that leaves a device waiting fails instead of
# stalling the suite, and its teardown does not wait for the default.
GUARD_TIMEOUT_SECONDS = 60.0


@pytest.fixture(autouse=True)
def fresh_runtime():
    ordo._C.set_token_edges_enabled(True)
    ordo.set_collective_timeout(GUARD_TIMEOUT_SECONDS, warn_seconds=DEFAULT_WARN_SECONDS)
    restart(DEFAULT_NUM_DEVICES)
    yield DEFAULT_NUM_DEVICES
    ordo._C.set_token_edges_enabled(True)
    ordo.set_collective_timeout(DEFAULT_TIMEOUT_SECONDS, warn_seconds=DEFAULT_WARN_SECONDS)


@pytest.fixture(params=WORLD_SIZES, ids=lambda n: f"{n}dev")
def world(request):
    """The number of devices of a fresh runtime; override the sizes of one
    test with @pytest.mark.parametrize("world", [...], indirect=True)."""
    restart(request.param)
    return request.param


@pytest.fixture
def short_timeouts():
    """Collectives warn after 0.05 s and fail after 0.3 s: a device that
    never joins costs a third of a second."""
    ordo.set_collective_timeout(0.3, warn_seconds=0.05)
    return 0.3  # fresh_runtime restores the defaults after the test


@pytest.fixture
def bounded_timeouts():
    """Timeouts far longer than any prompt failure takes: a failure that
    should be prompt but waits for the timeout fails the test (it measures
    the time)."""
    ordo.set_collective_timeout(20.0, warn_seconds=10.0)
    return 20.0  # fresh_runtime restores the defaults after the test


def pytest_sessionfinish(session, exitstatus):
    ordo.shutdown()
