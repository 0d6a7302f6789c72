"""Replica groups that differ between devices: every device that can see the
disagreement raises CollectiveMismatchError naming both partitions; the same
partition written in another order is the same partition; a timeout or a
gone peer says what the missing device does instead; collective_permute
takes each source and each target at most once.

The cases where devices disagree run in a subprocess of their own (run as
`test_group_mismatch.py <case>`), so that a hang fails the test instead of
stalling the suite."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ordo
from cases import params
import spmd
from package_dir import PYTHON_DIR

C = ordo._C
HERE = Path(__file__).resolve().parent
# A disagreement is found by looking, long before this timeout.
CASE_TIMEOUT_SECONDS = 5.0
PAIRS = [[0, 1], [2, 3]]
CROSSED = [[0, 2], [1, 3]]
REVERSED_FIRST = [[1, 0], [2, 3]]


def all_reduce_of_ones(groups):
    return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2), groups=groups).numpy().tolist()


# ---- Cases run in a subprocess: (device index) -> result. ----

CASES = {
    # The first example: devices 0 and 1 pair up as [0, 1], [2, 3];
    # devices 2 and 3 as [0, 2], [1, 3].
    "crossed groups": lambda index: all_reduce_of_ones(PAIRS if index < 2 else CROSSED),
    # The second example: device 0 writes [0, 1] where the others
    # write [1, 0]: another rank order, another partition.
    "another rank order": lambda index: all_reduce_of_ones(PAIRS if index == 0 else REVERSED_FIRST),
}


def outcome_record(outcome):
    if isinstance(outcome, BaseException):
        return [type(outcome).__name__, str(outcome)]
    return ["ok", outcome]


def run_case(name):
    """Each device's outcome of CASES[name] in a fresh interpreter, and how
    long the spawn took: ("ok", result) or (error class, message)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR, str(HERE)]))
    done = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return [tuple(outcome) for outcome in report["outcomes"]], report["seconds"]


def test_devices_whose_peer_took_another_partition_raise_a_mismatch_naming_both():
    outcomes, seconds = run_case("crossed groups")
    assert seconds < CASE_TIMEOUT_SECONDS  # found, not waited out
    # Devices 0 and 1 met each other with the same partition: only a barrier
    # with devices 2 and 3 could tell them.
    assert outcomes[:2] == [("ok", [2.0, 2.0])] * 2
    # Device 2 waits for device 0 in [0, 2] and finds it at the same
    # collective on the other partition (before it returned: not "gone").
    for index, peer, group in ((2, 0, "[0, 2]"), (3, 1, "[1, 3]")):
        kind, message = outcomes[index]
        assert kind == "CollectiveMismatchError", message
        assert (f"collective mismatch at collective #0 of devices {index} and {peer}: device {index} runs "
                f"all_reduce(sum, scale 1, groups [[0, 2], [1, 3]]) of float32[2] #0 on group {group}, "
                f"but device {peer} runs all_reduce #0 on group [0, 1]") in message
        assert "replica groups [[0, 2], [1, 3]] against [[0, 1], [2, 3]]" in message
        assert "is gone" not in message


def test_a_group_in_another_rank_order_is_another_partition():
    outcomes, seconds = run_case("another rank order")
    assert seconds < CASE_TIMEOUT_SECONDS
    # Device 0 waits in [0, 1] for device 1, which waits in [1, 0] for it.
    for index, peer, theirs, against in ((0, 1, "[1, 0]", "[[0, 1], [2, 3]] against [[1, 0], [2, 3]]"),
                                         (1, 0, "[0, 1]", "[[1, 0], [2, 3]] against [[0, 1], [2, 3]]")):
        kind, message = outcomes[index]
        assert kind == "CollectiveMismatchError", message
        assert f"device {peer} runs all_reduce #0 on group {theirs}" in message
        assert f"replica groups {against}" in message
        assert "never arrived" not in message
    # Devices 2 and 3 agree and meet nobody else.
    assert outcomes[2:] == [("ok", [2.0, 2.0])] * 2


# ---- The same partition in another order. ----

def test_the_same_partition_in_another_order_meets_and_reuses_the_plan(bounded_timeouts):
    assert ordo.spawn(lambda index: all_reduce_of_ones(PAIRS)) == [[2.0, 2.0]] * 4
    before = ordo.compile_cache_stats()
    # Every group meets both writings: before, a mismatch whose two
    # descriptions read the same.
    results = ordo.spawn(lambda index: all_reduce_of_ones(PAIRS if index % 2 == 0 else [[2, 3], [0, 1]]))
    assert results == [[2.0, 2.0]] * 4
    after = ordo.compile_cache_stats()
    assert after["misses"] == before["misses"] and after["hits"] == before["hits"] + 4


def graph_of(collective):
    """The graph text (with its hash) of one collective on a chain of its own."""
    C._set_cc_token(0, None)
    text = C.dump_graph([collective()])
    C._set_cc_token(0, None)  # and out of the next step
    return text


@pytest.mark.parametrize("one, other", [
    ([[2, 3], [0, 1]], PAIRS),
    ([[3], [1], [0], [2]], [[0], [1], [2], [3]]),
    ([[0, 1, 2, 3]], None),
])
def test_the_same_partition_in_another_order_is_the_same_graph(one, other):
    def traced(groups):
        return graph_of(lambda: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2), groups=groups))

    assert traced(one) == traced(other)
    assert traced(REVERSED_FIRST) != traced(PAIRS)  # rank order is part of the partition


# ---- collective_permute: each source and each target at most once. ----

BAD_PAIRS = [
    ("a repeated source", [[0, 1], [0, 2]], "device 0 is the source of more than one pair: [0, 1] and [0, 2]"),
    ("a repeated target", [[0, 1], [2, 1]], "device 1 is the target of more than one pair: [0, 1] and [2, 1]"),
    ("a source that is also the source of a self pair", [[3, 3], [1, 2], [3, 0]],
     "device 3 is the source of more than one pair: [3, 3] and [3, 0]"),
]


@pytest.mark.parametrize("pairs, message", params(BAD_PAIRS))
def test_a_permute_with_a_repeated_source_or_target_is_a_value_error_that_leaves_the_token(pairs, message):
    x = ordo.ones(2)
    ordo.all_reduce(ordo.REDUCE_SUM, x)  # a chain that the bad call must not extend
    before = C.dump_pending_graph()
    with pytest.raises(ValueError) as info:
        ordo.collective_permute(x, pairs)
    assert str(info.value) == "collective_permute: " + message
    assert C.dump_pending_graph() == before


def test_permute_pairs_in_another_order_are_the_same_permutation(bounded_timeouts):
    assert (graph_of(lambda: ordo.collective_permute(ordo.ones(2), [[2, 0], [0, 1]]))
            == graph_of(lambda: ordo.collective_permute(ordo.ones(2), [[0, 1], [2, 0]])))

    def step(index):
        pairs = [[0, 1], [1, 2]] if index % 2 == 0 else [[1, 2], [0, 1]]
        return ordo.collective_permute(ordo.full([2], index + 1.0), pairs).numpy().tolist()

    assert ordo.spawn(step) == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 0.0]]


# ---- What a timeout or a gone peer says about the missing device. ----

def test_a_timeout_says_the_missing_device_waits_in_another_group():
    ordo.set_collective_timeout(2.0, warn_seconds=2.0)  # fresh_runtime restores the defaults
    first, second = [[0], [1, 2], [3]], [[0, 1], [2], [3]]
    zero_waits, zero_failed = threading.Event(), threading.Event()

    def step(index):
        if index == 1:
            assert zero_waits.wait(20)
            time.sleep(0.5)  # still waiting for device 2 when device 0 times out
        if index == 2:
            assert zero_failed.wait(20)  # then device 1 meets it
        all_reduce_of_ones(first)
        if index != 0:
            return all_reduce_of_ones(second)
        late = ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2), groups=second)
        zero_waits.set()
        try:
            return late.numpy().tolist()
        finally:
            zero_failed.set()

    outcomes = spmd.spawn_outcomes(step)
    assert isinstance(outcomes[0], ordo.CollectiveTimeoutError), outcomes[0]
    assert ("device 0 waited 2 s in all_reduce(sum, scale 1, groups [[0, 1], [2], [3]]) of float32[2] #0 on "
            "group [0, 1] (its collective #1); missing devices: 1 (is waiting in all_reduce #0 on group [1, 2], "
            "its collective #0)") in str(outcomes[0])
    assert "never arrived" not in str(outcomes[0])
    assert isinstance(outcomes[1], ordo.CollectiveError), outcomes[1]
    assert outcomes[2:] == [[1.0, 1.0]] * 2


def test_a_device_that_returned_after_a_collective_is_named_with_it(bounded_timeouts):
    def step(index):
        all_reduce_of_ones([[0], [1], [2], [3]])
        if index == 3:
            return None  # its peers' next collective needs it
        return all_reduce_of_ones(None)

    start = time.monotonic()
    outcomes = spmd.spawn_outcomes(step)
    assert time.monotonic() - start < 10.0  # long before the 20 s timeout
    assert outcomes[3] is None
    for error in outcomes[:3]:
        assert isinstance(error, ordo.CollectiveError), error
        assert ("cannot complete: device 3 is gone (its spawn function returned), after its collective #0 "
                "(all_reduce #0 on group [3])") in str(error)


if __name__ == "__main__":
    ordo.set_collective_timeout(CASE_TIMEOUT_SECONDS, warn_seconds=CASE_TIMEOUT_SECONDS)
    started = time.monotonic()
    results = spmd.spawn_outcomes(CASES[sys.argv[1]])
    print(json.dumps({"outcomes": [outcome_record(o) for o in results], "seconds": time.monotonic() - started}))
