"""Ordering, the per-device cc token, and what happens when devices
disagree, wait too long, fail or get bad arguments: a clear error naming the
devices and ops, never a hang, never a silent wrong result."""

import functools
import re
import time

import numpy as np
import pytest

import ordo
from cases import params
import spmd

C = ordo._C
SEEDS = range(20)


# ---- Ordering under random schedules. ----

# Collectives that no data edge orders, each with its own fingerprint (op and
# shape), so that any reordering between devices is caught by the mismatch
# check. (name, traced on a device, numpy reference over every device's input.)
ORDERED_COLLECTIVES = [
    ("all_reduce", lambda x, world: ordo.all_reduce(ordo.REDUCE_SUM, x),
     lambda inputs, rank: spmd.all_reduce(inputs, ordo.REDUCE_SUM)),
    ("all_gather", lambda x, world: ordo.all_gather(x, dim=1),
     lambda inputs, rank: spmd.all_gather(inputs, 1)),
    ("reduce_scatter", lambda x, world: ordo.reduce_scatter(ordo.REDUCE_MAX, x, 1.0, 0, world),
     lambda inputs, rank: spmd.reduce_scatter(inputs, ordo.REDUCE_MAX, 1.0, 0, rank)),
    ("all_to_all", lambda x, world: ordo.all_to_all(x, 0, 1, world),
     lambda inputs, rank: spmd.all_to_all(inputs, 0, 1, rank)),
]
PROGRAM_LENGTH = 12


def program_input(index, step, world):
    """Step `step`'s input on device `index`: shape (world, step + 1)."""
    return (np.arange(world * (step + 1)).reshape(world, step + 1) * (index + 1) + step).astype(np.float32)


def ordering_program(index, world):
    """Traces PROGRAM_LENGTH independent collectives (with some compute
    around them) as one graph and returns every result."""
    results = []
    for step in range(PROGRAM_LENGTH):
        _, collective, _ = ORDERED_COLLECTIVES[step % len(ORDERED_COLLECTIVES)]
        x = ordo.tensor(program_input(index, step, world)) * 2.0
        results.append(ordo.relu(collective(x, world)) + 0.0)
    ordo.mark_step()
    return [r.numpy() for r in results]


def expected_program_results(world):
    expected = []
    for step in range(PROGRAM_LENGTH):
        _, _, reference = ORDERED_COLLECTIVES[step % len(ORDERED_COLLECTIVES)]
        inputs = [program_input(i, step, world) * 2.0 for i in range(world)]
        expected.append([reference(inputs, rank) for rank in range(world)])
    return expected


def run_with_random_schedules(world, seed):
    for device in range(world):
        C.set_schedule(device, "random", seed * 1000 + device)  # every device its own order
    return spmd.spawn_outcomes(ordering_program, world)


def assert_program_results(outcomes, world):
    expected = expected_program_results(world)
    for index, results in enumerate(outcomes):
        assert isinstance(results, list), f"device {index}: {results!r}"
        for step, result in enumerate(results):
            np.testing.assert_array_equal(result, expected[step][index], err_msg=f"device {index}, step {step}")


def test_random_schedules_keep_every_devices_collectives_in_program_order(world, bounded_timeouts):
    for seed in SEEDS:
        assert_program_results(run_with_random_schedules(world, seed), world)


@pytest.mark.parametrize("world", [2, 4, 8], indirect=True)
def test_without_token_edges_random_schedules_are_caught_as_mismatches(world, bounded_timeouts):
    C.set_token_edges_enabled(False)  # restored by the fresh_runtime fixture
    mismatches = []
    for seed in SEEDS:
        outcomes = run_with_random_schedules(world, seed)
        errors = spmd.errors_of(outcomes)
        if not errors:
            # The devices happened to agree: then the results are right.
            assert_program_results(outcomes, world)
            continue
        mismatches += [e for e in errors.values() if isinstance(e, ordo.CollectiveMismatchError)]
        spmd.restart(world)  # a mismatch leaves the runtime behind: start clean
    assert mismatches, "no seed reordered the collectives without token edges"
    for error in mismatches:
        assert "collective mismatch" in str(error) and "but device" in str(error)


# ---- The cc token of each device. ----

def token_leaves(device=-1):
    """How many chains of collectives the device's pending graph holds."""
    return C.dump_pending_graph(device).count("= cc_token()")


@pytest.mark.parametrize("get_token, set_token", [
    (C._get_cc_token, C._set_cc_token), (C._get_all_reduce_token, C._set_all_reduce_token),
], ids=["cc_token", "all_reduce_token (torch_xla's names)"])
def test_token_slot_of_each_device(get_token, set_token):
    def step(index):
        assert get_token(index) is None  # a fresh slot
        results = [ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))]  # kept alive: they stay in the graph
        token = get_token(index)
        assert isinstance(token, ordo.CcToken) and token.device == index
        set_token(index, None)  # resets: the next collective starts a new chain
        results.append(ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(3)))
        assert token_leaves() == 2
        set_token(index, token)  # and back: the next one continues the first chain
        results.append(ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(4)))
        assert token_leaves() == 2
        ordo.mark_step()
        assert get_token(index) is None  # a graph cut resets the slot
        set_token(index, token)  # a token whose graph already ran counts as fresh
        assert get_token(index) is None
        return [r.numpy() for r in results]

    for results in ordo.spawn(step):
        for n, result in zip((2, 3, 4), results):
            np.testing.assert_array_equal(result, np.full(n, 4.0, np.float32))


def test_tracing_on_one_device_leaves_the_other_slots_alone():
    pending = [ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2, device=2))]
    assert C._get_cc_token(2).device == 2
    assert [C._get_cc_token(d) for d in (0, 1, 3)] == [None] * 3
    C._set_cc_token(2, None)
    del pending  # nothing of device 2's graph is left to run without its peers
    assert C.dump_pending_graph(2).count("all_reduce") == 0


def test_a_device_never_takes_another_devices_token():
    ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2, device=1))
    token = C._get_cc_token(1)
    before = C.dump_pending_graph(0)
    for set_token in (C._set_cc_token, C._set_all_reduce_token):
        with pytest.raises(ValueError, match="a token of device 1 cannot be the token of device 0"):
            set_token(0, token)
    assert C._get_cc_token(0) is None and C.dump_pending_graph(0) == before
    assert C._get_cc_token(1).device == 1


def test_every_device_keeps_its_own_chain_when_threads_trace_at_once(world):
    def step(index):
        for n in range(1, 9):
            ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(n))
            ordo.all_gather(ordo.ones(n))
        token = C._get_cc_token(index)
        return token.device, token_leaves(), C.dump_pending_graph().count("all_")

    assert ordo.spawn(step) == [(index, 1, 16) for index in range(world)]


# ---- Mismatch. ----

MISMATCH_CASES = [
    # (id, what device 2 does instead, what its message names)
    ("another shape", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(4)),
     "device 2 runs all_reduce(sum, scale 1) of float32[4]"),
    ("another op", lambda x: ordo.all_gather(x), "device 2 runs all_gather(dim 0) of float32[3]"),
    ("another reduce type", lambda x: ordo.all_reduce(ordo.REDUCE_MAX, x), "all_reduce(max, scale 1)"),
    ("another scale", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, scale=0.5), "all_reduce(sum, scale 0.5)"),
    ("another dtype", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(3, dtype=ordo.int32)),
     "all_reduce(sum, scale 1) of int32[3]"),
]


@pytest.mark.parametrize("deviant, names", params(MISMATCH_CASES))
def test_a_mismatch_fails_every_participant_naming_devices_and_ops(deviant, names, bounded_timeouts):
    def step(index):
        x = ordo.ones(3)
        result = deviant(x) if index == 2 else ordo.all_reduce(ordo.REDUCE_SUM, x)
        return result.numpy()

    start = time.monotonic()
    errors = spmd.errors_of(spmd.spawn_outcomes(step))
    assert time.monotonic() - start < 10.0  # prompt: no waiting for a timeout
    assert sorted(errors) == [0, 1, 2, 3]
    for error in errors.values():
        assert isinstance(error, ordo.CollectiveMismatchError), error
        message = str(error)
        assert "collective mismatch at #0 on group [0, 1, 2, 3]" in message
        assert names in message
        assert "all_reduce(sum, scale 1) of float32[3]" in message  # the other side


def test_spawn_raises_a_mismatch_saying_which_ordinal_raised_it(bounded_timeouts):
    def step(index):
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(1 + (index == 1))).numpy()

    with pytest.raises(ordo.CollectiveMismatchError, match=r"^ordinal \d: .*collective mismatch") as info:
        ordo.spawn(step)
    assert isinstance(info.value, ordo.CollectiveError) and isinstance(info.value, RuntimeError)
    assert any(note.startswith("raised by the spawn function of ordinal") for note in info.value.__notes__)


# ---- Timeouts. ----

def never_joins(index, collective, late=3):
    """The step of a test where device `late` joins nothing before its peers
    time out. It still runs meanwhile: a device whose function returned is
    gone, which fails its peers at once (see below)."""
    if index == late:
        time.sleep(1.0)
        return None
    return collective()


def test_a_device_that_never_joins_warns_then_times_out(short_timeouts, capfd):
    start = time.monotonic()
    outcomes = spmd.spawn_outcomes(never_joins, lambda: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy())
    elapsed = time.monotonic() - start
    assert outcomes[3] is None
    assert sorted(spmd.errors_of(outcomes)) == [0, 1, 2]
    for error in spmd.errors_of(outcomes).values():
        assert isinstance(error, ordo.CollectiveTimeoutError), error
        assert "waited 0.3 s in all_reduce(sum, scale 1) of float32[2] #0 on group [0, 1, 2, 3]" in str(error)
        assert "missing devices: 3 (has not reached a collective yet)" in str(error)
    assert 0.3 <= elapsed < 5.0
    warnings = capfd.readouterr().err
    assert "has waited" in warnings and "missing devices: 3" in warnings


def test_spawn_re_raises_a_timeout(short_timeouts):
    with pytest.raises(ordo.CollectiveTimeoutError, match=r"^ordinal [0-2]: .*missing devices: 3 \(has not reached a collective yet\)"):
        ordo.spawn(never_joins, args=(lambda: ordo.all_gather(ordo.ones(2)).numpy(),))


def test_set_collective_timeout():
    ordo.set_collective_timeout(12.0, warn_seconds=3.0)
    assert C.collective_timeouts() == (3.0, 12.0)
    ordo.set_collective_timeout(2.0)  # the warning never comes after the timeout
    assert C.collective_timeouts() == (2.0, 2.0)
    ordo.set_collective_timeout(300, warn_seconds=30)
    assert C.collective_timeouts() == (30.0, 300.0)


# ---- Peer failure. ----

def all_reduce_of_ones(index):
    return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()


def test_spawn_re_raises_the_first_error_and_its_peers_are_unblocked_promptly(bounded_timeouts):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="^ordinal 3: user code failed$") as info:
        ordo.spawn(spmd.with_failing_device(all_reduce_of_ones))
    assert time.monotonic() - start < 10.0  # long before the 20 s timeout
    assert info.value.__notes__ == ["raised by the spawn function of ordinal 3"]


def test_the_peers_of_a_device_whose_function_returned_fail_promptly(bounded_timeouts):
    def step(index):
        if index == 3:
            return None  # without the all_reduce its peers run
        return all_reduce_of_ones(index)

    start = time.monotonic()
    outcomes = spmd.spawn_outcomes(step)
    assert time.monotonic() - start < 10.0  # long before the 20 s timeout
    assert outcomes[3] is None
    for error in outcomes[:3]:
        assert isinstance(error, ordo.CollectiveError), error
        assert "cannot complete: device 3 is gone (its spawn function returned)" in str(error)


def test_devices_are_driven_again_after_a_spawn_in_which_one_returned_early(bounded_timeouts):
    def step(index):
        result = ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))
        if index == 3:
            ordo.mark_step()  # queued: device 3 joins, and nobody waits on it
            return None
        return result.numpy()

    assert [r.tolist() for r in ordo.spawn(step)[:3]] == [[4.0, 4.0]] * 3
    assert [r.tolist() for r in ordo.spawn(all_reduce_of_ones)] == [[4.0, 4.0]] * 4


def test_a_spawn_of_some_devices_returns_while_its_collectives_wait_for_the_others(bounded_timeouts):
    def step(index):
        total = ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))
        ordo.mark_step()  # waits on the worker for devices 2 and 3
        return total

    start = time.monotonic()
    totals = ordo.spawn(step, nprocs=2)
    assert time.monotonic() - start < 10.0  # long before the 20 s timeout
    for index in (2, 3):
        ordo.set_device(index)
        totals.append(ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)))
        ordo.mark_step()
    ordo.set_device(0)
    assert [t.numpy().tolist() for t in totals] == [[4.0, 4.0]] * 4


def test_the_peers_of_a_failed_device_are_told_who_is_gone(bounded_timeouts):
    gone = "cannot complete: device 3 is gone (its spawn function raised RuntimeError: user code failed)"
    outcomes = spmd.spawn_outcomes(spmd.with_failing_device(all_reduce_of_ones))
    assert type(outcomes[3]) is RuntimeError
    for error in outcomes[:3]:
        assert isinstance(error, ordo.CollectiveError) and gone in str(error), error
    # Later collectives that need device 3 fail at once too, saying why.
    with pytest.raises(ordo.CollectiveError, match=re.escape(gone)):
        all_reduce_of_ones(0)
    # Until the next spawn, which starts clean (test_spawn_after_failure.py).
    assert [r.tolist() for r in ordo.spawn(all_reduce_of_ones)] == [[4.0, 4.0]] * 4


def test_a_peer_whose_graph_fails_makes_the_others_fail_promptly(bounded_timeouts):
    def step(index):
        x = ordo.ones(3)
        if index == 1:
            x = x.index_select(0, ordo.tensor([5]))  # fails when the graph runs
        return ordo.all_reduce(ordo.REDUCE_SUM, x).numpy()

    start = time.monotonic()
    errors = spmd.errors_of(spmd.spawn_outcomes(step))
    assert time.monotonic() - start < 10.0
    assert sorted(errors) == [0, 1, 2, 3]
    assert type(errors[1]) is ordo.ExecutionError
    assert "index_select" in str(errors[1]) and "index 5 is out of range" in str(errors[1])
    for index in (0, 2, 3):
        assert isinstance(errors[index], ordo.CollectiveError), errors[index]
        assert "device 1 will not join all_reduce #0" in str(errors[index])
        assert "index 5 is out of range" in str(errors[index])


def test_a_restart_after_a_failure_gives_a_clean_runtime(bounded_timeouts):
    with pytest.raises(ZeroDivisionError, match="^ordinal 0: "):
        ordo.spawn(lambda index: 1 / 0 if index == 0 else ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(1)).numpy())
    spmd.restart(4)
    for result in ordo.spawn(lambda index: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(1)).numpy()):
        np.testing.assert_array_equal(result, [4.0])


# ---- Bad arguments: ValueError / TypeError when traced, token untouched. ----

BAD_COLLECTIVE_CALLS = [
    # (id, call on device 0 of 4 given x = ones(8), exception, message fragment)
    ("unknown reduce type", lambda x: ordo.all_reduce("avg", x), ValueError, "unknown reduce type 'avg'"),
    ("overlapping groups", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, groups=[[0, 1], [1, 2, 3]]),
     ValueError, "device 1 is in more than one replica group"),
    ("groups missing a device", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, groups=[[0, 1]]),
     ValueError, "device 2 is in no replica group"),
    ("a group member out of range", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, groups=[[0, 1, 2, 5]]),
     ValueError, "device 5 in a replica group does not exist"),
    ("an empty group", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, groups=[[], [0, 1, 2, 3]]),
     ValueError, "a replica group is empty"),
    ("and of floats", lambda x: ordo.all_reduce(ordo.REDUCE_AND, x), TypeError, "needs bool or integer"),
    ("sum of bools", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2, dtype=ordo.bool_)),
     TypeError, "not defined for bool"),
    ("scale of or", lambda x: ordo.all_reduce(ordo.REDUCE_OR, ordo.ones(2, dtype=ordo.int32), scale=2.0),
     ValueError, "scale applies to"),
    ("infinite scale", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, x, scale=float("inf")),
     ValueError, "scale must be finite"),
    ("an empty list", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, []), ValueError, "no tensors given"),
    ("a list across devices", lambda x: ordo.all_reduce(ordo.REDUCE_SUM, [x, ordo.ones(2, device=1)]),
     ValueError, "devices"),
    ("all_gather of unequal groups", lambda x: ordo.all_gather(x, groups=[[0], [1, 2, 3]]),
     ValueError, "same size"),
    ("all_gather of a 0-d tensor", lambda x: ordo.all_gather(ordo.tensor(1.0)), ValueError, "rank >= 1"),
    ("all_gather dim", lambda x: ordo.all_gather(x, dim=3), ValueError, "out of range"),
    ("all_gather output shape", lambda x: ordo.all_gather(x, output=ordo.zeros(5)), ValueError, "shape"),
    ("reduce_scatter shard_count", lambda x: ordo.reduce_scatter(ordo.REDUCE_SUM, x, 1.0, 0, 3),
     ValueError, "shard_count 3 must equal the group size 4"),
    ("reduce_scatter of 3 into 4", lambda x: ordo.reduce_scatter(ordo.REDUCE_SUM, ordo.ones(3), 1.0, 0, 4),
     ValueError, "does not split into 4 equal parts"),
    ("reduce_scatter output shape",
     lambda x: ordo.reduce_scatter(ordo.REDUCE_SUM, x, 1.0, 0, 4, output=ordo.zeros(3)), ValueError, "shape"),
    ("all_to_all split_count", lambda x: ordo.all_to_all(x, 0, 0, 2),
     ValueError, "split_count 2 must equal the group size 4"),
    ("all_to_all of 6 into 4", lambda x: ordo.all_to_all(ordo.ones(6), 0, 0, 4), ValueError, "does not split"),
    ("permute out of range", lambda x: ordo.collective_permute(x, [[0, 4]]),
     ValueError, r"pair \[0, 4\] is out of range for world size 4"),
    ("permute to one target twice", lambda x: ordo.collective_permute(x, [[0, 1], [2, 1]]),
     ValueError, "device 1 is the target of more than one pair"),
    ("broadcast from a missing root", lambda x: ordo.collective_broadcast([x], root_ordinal=7),
     ValueError, "root 7 does not exist"),
]


# Groups the binding cannot take at all (an entry past C++'s int, a string, a
# float, a flat list): the cases above hold only ints that reach the C++
# check, so these gave pybind's "incompatible function arguments" or int()'s
# "invalid literal". Every collective that takes groups names them.
MALFORMED_GROUPS = [
    ([[0, 1, 2, 2**40]], r"replica group 0 names device 1099511627776, which does not exist"),
    ([[0, 1, 2, 2**63]], r"replica group 0 names device 9223372036854775808, which does not exist"),
    ([[0, 1], "ab"], r"groups \[\[0, 1\], 'ab'\]: replica group 1 must be a list of device ordinals, got str"),
    ([[0, 1], [2, 3.0]], r"replica group 1 must be a list of device ordinals; it holds float 3.0"),
    ([[0, 1], [2, True]], r"replica group 1 must be a list of device ordinals; it holds bool True"),
    ([0, 1, 2, 3], r"groups \[0, 1, 2, 3\]: replica group 0 must be a list of device ordinals, got int 0"),
    ("ab", r"groups must be a list of replica groups \(lists of device ordinals\), got str 'ab'"),
    (5, r"groups must be a list of replica groups \(lists of device ordinals\), got int 5"),
    ([list(range(10**5)) + ["x"]], r"groups \[\[0, 1, 2, .{0,200}: replica group 0 must be a list of device "
                                    r"ordinals; it holds str 'x'$"),
]
TAKING_GROUPS = {
    "all_reduce": lambda x, groups: ordo.all_reduce(ordo.REDUCE_SUM, x, groups=groups),
    "all_gather": lambda x, groups: ordo.all_gather(x, groups=groups),
    "reduce_scatter": lambda x, groups: ordo.reduce_scatter(ordo.REDUCE_SUM, x, 1.0, 0, 4, groups=groups),
    "all_to_all": lambda x, groups: ordo.all_to_all(x, 0, 0, 4, groups=groups),
    "collective_broadcast": lambda x, groups: ordo.collective_broadcast([x], groups=groups),
    "reduce_gradients": lambda x, groups: ordo.reduce_gradients([x], groups=groups),
}
BAD_COLLECTIVE_CALLS += [
    (f"{name} of groups {groups!r:.30}", functools.partial(lambda x, call, groups: call(x, groups), call=call,
                                                          groups=groups), ValueError, f"^{name}: .*{fragment}")
    for name, call in TAKING_GROUPS.items() for groups, fragment in MALFORMED_GROUPS
] + [
    ("permute of a pair past int", lambda x: ordo.collective_permute(x, [[0, 2**40]]),
     ValueError, r"pairs \[\[0, 1099511627776\]\]: pair 0 names device 1099511627776, which does not exist"),
    ("permute of a string pair", lambda x: ordo.collective_permute(x, [[0, 1], "ab"]),
     ValueError, r"pair 1 must be a list of device ordinals, got str 'ab'"),
    ("permute of a triple", lambda x: ordo.collective_permute(x, [[0, 1, 2]]),
     ValueError, r"each pair must be \[source, target\]"),
]


@pytest.mark.parametrize("call, error, fragment", params(BAD_COLLECTIVE_CALLS))
def test_bad_collective_arguments_leave_the_token_and_graph_alone(call, error, fragment):
    x = ordo.ones(8)
    ordo.all_reduce(ordo.REDUCE_SUM, x)  # a chain that bad calls must not extend
    before = C.dump_pending_graph()
    with pytest.raises(error, match=fragment):
        call(x)
    assert C.dump_pending_graph() == before
    assert C._get_cc_token(0).device == 0


def test_a_rejected_output_leaves_no_collective_behind(bounded_timeouts):
    def step(index):
        x = ordo.ones(4)
        if index == 0:
            with pytest.raises(ValueError):
                ordo.all_gather(x, output=ordo.zeros(5))  # the wrong size: rejected
        return ordo.all_reduce(ordo.REDUCE_SUM, x).numpy()  # so every device's next collective is this

    for result in spmd.spawn_outcomes(step):
        assert not isinstance(result, Exception), result
        np.testing.assert_array_equal(result, np.full(4, 4.0, np.float32))


def test_error_classes():
    assert issubclass(ordo.ExecutionError, RuntimeError)
    assert issubclass(ordo.CollectiveError, ordo.ExecutionError) and issubclass(ordo.CollectiveError, RuntimeError)
    for error in (ordo.CollectiveMismatchError, ordo.CollectiveTimeoutError):
        assert issubclass(error, ordo.CollectiveError)
    assert not issubclass(ordo.CollectiveMismatchError, ordo.CollectiveTimeoutError)


BAD_RUNTIME_CALLS = [
    # (id, call on a runtime of 4 devices, exception, message fragment)
    ("timeout 0", lambda: ordo.set_collective_timeout(0), ValueError, "positive and finite"),
    ("negative warning", lambda: ordo.set_collective_timeout(5, warn_seconds=-1), ValueError, "positive"),
    ("nan timeout", lambda: ordo.set_collective_timeout(float("nan")), ValueError, "positive and finite"),
    ("init with 0 devices", lambda: ordo.init(0), ValueError, r"must be in \[1, "),
    ("init with another count", lambda: ordo.init(8), ValueError, "call shutdown"),
    ("spawn on no device", lambda: ordo.spawn(lambda i: i, nprocs=0), ValueError, r"nprocs must be in \[1, 4\]"),
    ("spawn on too many", lambda: ordo.spawn(lambda i: i, nprocs=5), ValueError, r"nprocs must be in \[1, 4\]"),
    ("unknown schedule", lambda: C.set_schedule(0, "fifo", 1), ValueError, "'default' or 'random'"),
    ("token of a missing device", lambda: C._get_cc_token(4), ValueError, "device 4 does not exist"),
    ("set a missing device", lambda: ordo.set_device(9), ValueError, "device 9 does not exist"),
    ("set a device by a foreign name", lambda: ordo.set_device("cuda:0"), TypeError, "ordo.Device"),
    ("wait for a missing device", lambda: ordo.wait_device_ops([7]), ValueError, "device 7 does not exist"),
    ("fail a missing device", lambda: C.mark_device_failed(7, "no"), ValueError, "device 7 does not exist"),
]


@pytest.mark.parametrize("call, error, fragment", params(BAD_RUNTIME_CALLS))
def test_bad_runtime_arguments(call, error, fragment):
    timeouts = C.collective_timeouts()
    with pytest.raises(error, match=fragment):
        call()
    assert C.collective_timeouts() == timeouts and ordo.world_size() == 4


# ---- Dropping a pending graph. ----


def test_drop_pending_graph_drops_values_resets_the_token_and_fails_peers_promptly(bounded_timeouts):
    def step(index):
        kept = ordo.ones(2) * 2.0
        ordo.mark_step()
        pending = kept + 1.0
        reduced = ordo.all_reduce(ordo.REDUCE_SUM, kept)
        if index == 0:
            assert C._get_cc_token(0) is not None
            ordo.drop_pending_graph()
            assert C._get_cc_token(0) is None
            with pytest.raises(ordo.ExecutionError, match=r"dropped with drop_pending_graph\(0\)"):
                pending.numpy()
        else:
            # The graph that held the collective failed as a whole.
            with pytest.raises(ordo.CollectiveError, match="device 0 will not join .*dropped"):
                reduced.numpy()
        # Later collectives meet as usual, and kept data was never touched.
        total = ordo.all_reduce(ordo.REDUCE_SUM, kept).numpy().tolist()
        return kept.numpy().tolist(), total

    start = time.monotonic()
    outcomes = spmd.spawn_outcomes(step)
    assert time.monotonic() - start < bounded_timeouts / 2
    world = ordo.world_size()
    assert outcomes == [([2.0, 2.0], [2.0 * world] * 2)] * world


def test_a_dropped_tensor_is_refused_as_an_input_and_costs_nothing_else():
    x = ordo.ones(3) + 1.0
    ordo.drop_pending_graph()
    with pytest.raises(ordo.ExecutionError, match="dropped"):
        x * 2.0
    y = ordo.ones(3) * 3.0
    ordo.mark_step()  # no failure to report
    assert y.numpy().tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("device", [0, "ordo:0"])
def test_clear_pending_irs_is_torch_xlas_name_for_it(device):
    x = ordo.ones(3) + 1.0
    C._clear_pending_irs(device)
    with pytest.raises(ordo.ExecutionError, match="dropped"):
        x.numpy()


def test_dropping_checks_the_device():
    with pytest.raises(ValueError, match="device 99"):
        ordo.drop_pending_graph(99)
    with pytest.raises(ValueError, match="'xla:0' is not a device"):
        C._clear_pending_irs("xla:0")
    with pytest.raises(ValueError, match="device -2 does not exist"):
        C._clear_pending_irs(-2)
