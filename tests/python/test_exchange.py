"""The host-side exchange between devices: rendezvous and mesh_reduce, on
1, 2, 4 and 8 devices, and what happens when a device is late or gone."""

import time

import numpy as np
import pytest

import ordo
import spmd


def payload(index, round_=0):
    return f"device {index} round {round_}".encode()


def test_rendezvous_returns_every_payload_in_ordinal_order(world):
    expected = [payload(i) for i in range(world)]
    assert ordo.spawn(lambda index: ordo.rendezvous("hello", payload(index))) == [expected] * world


def test_rendezvous_without_a_payload(world):
    assert ordo.spawn(lambda index: ordo.rendezvous("barrier")) == [[b""] * world] * world


def test_rendezvous_takes_any_bytes_like_payload():
    kinds = [bytes, bytearray, lambda b: memoryview(bytearray(b)), lambda b: np.frombuffer(b, np.uint8)]
    results = ordo.spawn(lambda index: ordo.rendezvous("bytes-like", kinds[index](payload(index))))
    assert results == [[payload(i) for i in range(4)]] * 4
    assert all(type(p) is bytes for p in results[0])


def test_rendezvous_among_replicas(world):
    groups = spmd.even_odd_groups(world)

    def step(index):
        return ordo.rendezvous("groups", payload(index), replicas=spmd.group_of(index, groups))

    for index, result in enumerate(ordo.spawn(step)):
        assert result == [payload(i) for i in spmd.group_of(index, groups)]


def test_rounds_of_one_tag_do_not_mix(world):
    rounds = 4

    def step(index):
        return [ordo.rendezvous("again", payload(index, r)) for r in range(rounds)]

    for result in ordo.spawn(step):
        assert result == [[payload(i, r) for i in range(world)] for r in range(rounds)]


def test_mesh_reduce_of_a_number(world):
    assert ordo.spawn(lambda index: ordo.mesh_reduce("scalar", 1.25, sum)) == [1.25 * world] * world


def test_mesh_reduce_reads_tensors_to_numpy(world):
    def step(index):
        data = [ordo.full((2,), float(index)), (ordo.tensor([index]), "tag")]
        return ordo.mesh_reduce("tensors", data, lambda values: values)

    for values in ordo.spawn(step):
        for index, (array, (nested, text)) in enumerate(values):
            assert type(array) is np.ndarray and type(nested) is np.ndarray and text == "tag"
            np.testing.assert_array_equal(array, np.full(2, float(index), np.float32))
            np.testing.assert_array_equal(nested, [index])


def test_mesh_reduce_of_any_picklable_data(world):
    def merge(dicts):
        return {k: v for d in dicts for k, v in d.items()}

    expected = {i: str(i) for i in range(world)}
    assert ordo.spawn(lambda index: ordo.mesh_reduce("dicts", {index: str(index)}, merge)) == [expected] * world


def test_a_device_outside_the_replicas_may_not_join():
    with pytest.raises(ValueError, match=r"device 0 is not among the replicas \[1, 2\]"):
        ordo.rendezvous("outside", replicas=[1, 2])


def late_to_rendezvous(index, tag):
    """Device 3 joins nothing before its peers time out (still running: a
    device whose function returned is gone, and fails its peers at once)."""
    if index == 3:
        time.sleep(1.0)
        return None
    return ordo.rendezvous(tag, payload(index))


def test_a_late_device_makes_the_others_warn_then_time_out(short_timeouts, capsys):
    outcomes = spmd.spawn_outcomes(late_to_rendezvous, "late")
    errors = spmd.errors_of(outcomes)
    assert sorted(errors) == [0, 1, 2]
    for index, error in errors.items():
        assert isinstance(error, ordo.CollectiveTimeoutError)
        assert str(error) == (f"device {index} waited 0.3 s in rendezvous 'late'; "
                              "devices that never arrived: [3]")
    printed = capsys.readouterr().out
    for index in errors:
        assert f"ordo: device {index} has waited 0.05 s in rendezvous 'late'; missing devices: [3]" in printed


def test_a_device_whose_function_returned_makes_the_others_fail_at_once(bounded_timeouts):
    outcomes = spmd.spawn_outcomes(lambda index: None if index == 3 else ordo.rendezvous("returned"))
    assert outcomes[3] is None
    for error in outcomes[:3]:
        assert isinstance(error, ordo.CollectiveError)
        assert str(error) == "rendezvous 'returned': device 3 is gone (its spawn function returned)"
    # Device 3 may meet again once spawn returned.
    assert ordo.spawn(lambda index: ordo.rendezvous("again", payload(index))) == [[payload(i) for i in range(4)]] * 4


def test_a_gone_device_makes_the_others_fail_at_once(bounded_timeouts):
    outcomes = spmd.spawn_outcomes(spmd.with_failing_device(lambda index: ordo.mesh_reduce("gone", index, sum)))
    assert str(outcomes[3]) == "ordinal 3: user code failed"
    for error in outcomes[:3]:
        assert isinstance(error, ordo.CollectiveError)
        assert str(error) == ("rendezvous 'gone': device 3 is gone "
                              "(its spawn function raised RuntimeError: user code failed)")


def test_shutdown_resets_the_exchange(bounded_timeouts):
    # Device 3 is gone and devices 0-2 each leave a round of "reset" behind.
    with pytest.raises(RuntimeError, match="^ordinal 3: user code failed"):
        ordo.spawn(spmd.with_failing_device(lambda index: ordo.rendezvous("reset")))
    spmd.restart(4)
    # Every device starts again at round 0 of every tag, and none is gone.
    everyone = [payload(i) for i in range(4)]
    assert ordo.spawn(lambda index: ordo.rendezvous("reset", payload(index))) == [everyone] * 4


def test_payloads_of_different_lengths_and_large_ones_meet(world):
    def data(index):
        return bytes(range(256)) * (index * 4099) if index % 2 else b""

    assert ordo.spawn(lambda index: ordo.rendezvous("lengths", data(index))) == [[data(i) for i in range(world)]] * world


@pytest.mark.parametrize("world", [2, 4], indirect=True)
def test_devices_that_wait_in_different_rendezvous_raise_a_mismatch_at_once(world, bounded_timeouts):
    start = time.monotonic()
    outcomes = spmd.spawn_outcomes(lambda index: ordo.rendezvous("odd" if index == world - 1 else "even"))
    assert time.monotonic() - start < 5  # before, they waited for the timeout
    for error in outcomes:
        assert isinstance(error, ordo.CollectiveMismatchError)
        assert str(error).startswith("rendezvous mismatch: device ")
        assert "rendezvous 'odd' (round 0 of devices" in str(error)
        assert "rendezvous 'even' (round 0 of devices" in str(error)
    # The devices meet again under another tag.
    assert ordo.spawn(lambda index: ordo.rendezvous("after", payload(index))) == [[payload(i) for i in range(world)]] * world


@pytest.mark.parametrize("replicas, message", [
    ([0, 0], r"device 0 is twice among the replicas \[0, 0\]"),
    ([0, 4], r"device 4 among the replicas \[0, 4\] does not exist \(world size 4\)"),
    ([-1, 0], r"device -1 among the replicas \[-1, 0\] does not exist"),
])
def test_replicas_that_are_not_distinct_devices_are_refused(replicas, message):
    with pytest.raises(ValueError, match=message):
        ordo.rendezvous("bad", replicas=replicas)
    # Nothing was left behind: device 0 meets alone.
    assert ordo.rendezvous("bad", b"x", replicas=[0]) == [b"x"]


@pytest.mark.parametrize("replicas, message", [
    ([0, 2**40], r"^rendezvous: replicas names device 1099511627776, which does not exist$"),
    ([0, 2**63], r"^rendezvous: replicas names device 9223372036854775808, which does not exist$"),
    ([0, "a"], r"^rendezvous: replicas must be a list of device ordinals; it holds str 'a'$"),
    ([0, 1.0], r"^rendezvous: replicas must be a list of device ordinals; it holds float 1.0$"),
    ("01", r"^rendezvous: replicas must be a list of device ordinals, got str '01'$"),
    (3, r"^rendezvous: replicas must be a list of device ordinals, got int 3$"),
])
def test_replicas_that_are_not_ordinals_are_a_value_error_naming_them(replicas, message):
    # pybind's "incompatible function arguments" and operator.index's
    # TypeError before: the cases above hold only ints that reach C++.
    with pytest.raises(ValueError, match=message):
        ordo.rendezvous("bad", replicas=replicas)
    assert ordo.rendezvous("bad", b"x", replicas=[0]) == [b"x"]


def test_a_million_replicas_make_a_short_message():
    # It printed every one of them: 7.9 MB.
    with pytest.raises(ValueError) as refused:
        ordo.rendezvous("many", replicas=range(10**6))
    message = str(refused.value)
    assert len(message) < 300, message[:300]
    assert "[0, 1, 2, 3, ..., 999996, 999997, 999998, 999999] (1000000 in all, digest " in message


def test_a_tag_that_is_not_a_str_is_refused():
    with pytest.raises(TypeError, match="rendezvous: the tag must be a str, got int"):
        ordo.rendezvous(3)
