"""A spawn of every device after one that failed starts clean: whatever the
failed spawn left (devices failed, absent or interrupted, groups whose
members stopped at different collectives, a collective traced and never
run, a rendezvous round one device never reached, a failure recorded for
the next step) is forgotten, and the next spawns meet with correct values.

Every other test starts on a fresh runtime (conftest.py restarts it), which
forgets all of that too: this is why no test saw a second spawn fail once a
first one had. Here the failed spawn and those after it share one runtime."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import ordo

WORLD = 4  # conftest.py's runtime


def clean_step(index):
    """One of each way devices meet, with values that tell the devices
    apart; returns what this device got."""
    ordo.mark_step()  # would raise a failure kept from the failed spawn
    x = ordo.tensor(np.full(2, index + 1.0, np.float32))
    total = ordo.all_reduce(ordo.REDUCE_SUM, x)
    gathered = ordo.all_gather(x)
    pairs = ordo.all_reduce(ordo.REDUCE_SUM, x, groups=[[0, 1], [2, 3]])
    payloads = ordo.rendezvous("after", bytes([index]))
    return total.numpy().tolist(), gathered.numpy().tolist(), pairs.numpy().tolist(), list(b"".join(payloads))


def expected_clean_results():
    gathered = [float(i + 1) for i in range(WORLD) for _ in range(2)]
    pair_sums = [3.0, 3.0, 7.0, 7.0]
    return [([10.0, 10.0], gathered, [pair_sums[i]] * 2, [0, 1, 2, 3]) for i in range(WORLD)]


def assert_later_spawns_start_clean():
    """Two spawns in a row, each must meet at once with correct values."""
    for attempt in range(2):
        start = time.monotonic()
        assert ordo.spawn(clean_step) == expected_clean_results(), f"spawn {attempt + 2}"
        assert time.monotonic() - start < 10.0  # long before the 20 s timeout


def raises_after_one_all_reduce(index):
    ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()
    if index == 1:
        raise RuntimeError("replica 1 gave up")
    return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()  # waits for device 1


def raises_with_a_collective_traced(index):
    pending = ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))  # device 1 never runs it
    if index == 1:
        raise RuntimeError("replica 1 gave up")
    return pending.numpy()


def raises_while_its_peers_queue_a_step(index):
    """The peers' queued step fails on their workers (device 1 is gone), and
    each device keeps that failure for its next step."""
    ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()
    ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))
    if index == 1:
        raise RuntimeError("replica 1 gave up")
    ordo.mark_step()  # queued; nobody reads it


def raises_before_a_rendezvous(index):
    if index == 1:
        raise RuntimeError("replica 1 gave up")
    return ordo.rendezvous("before")


def catches_its_peers_failure(index):
    """Nothing raises in the spawn function: device 3 returns at once, the
    others catch the error of the all_reduce it never joined (and of the
    rendezvous after it), so no device stays failed, but every group is
    out of step."""
    if index == 3:
        return None
    for meet in (lambda: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy(), lambda: ordo.rendezvous("r")):
        with pytest.raises(ordo.CollectiveError, match="device 3 is gone"):
            meet()
    return index


@pytest.mark.parametrize("failing", [raises_after_one_all_reduce, raises_with_a_collective_traced,
                                     raises_while_its_peers_queue_a_step, raises_before_a_rendezvous])
def test_a_spawn_after_one_where_a_replica_raised_starts_clean(bounded_timeouts, failing):
    with pytest.raises(RuntimeError, match="^ordinal 1: replica 1 gave up$"):
        ordo.spawn(failing)
    assert_later_spawns_start_clean()


def test_a_spawn_after_one_whose_replicas_caught_the_failures_starts_clean(bounded_timeouts):
    assert ordo.spawn(catches_its_peers_failure) == [0, 1, 2, None]
    assert_later_spawns_start_clean()


def test_a_spawn_after_one_that_timed_out_starts_clean(short_timeouts):
    def late(index):
        if index == 3:
            time.sleep(0.6)  # past its peers' timeout; it joins nothing
            return None
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()

    with pytest.raises(ordo.CollectiveTimeoutError, match="missing devices: 3"):
        ordo.spawn(late)
    ordo.set_collective_timeout(20.0, warn_seconds=10.0)
    assert_later_spawns_start_clean()


def test_a_spawn_after_an_interrupted_one_starts_clean(bounded_timeouts):
    """Ctrl-C while spawn waits: the waiting replicas fail as interrupted
    and end at once, so none is left behind and the next spawn starts
    clean."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")

    def interrupted(index):
        if index == 0:
            os.kill(os.getpid(), signal.SIGINT)  # the caller raises KeyboardInterrupt
            return ordo.rendezvous("never", replicas=[0, 1])  # device 1 waits in the all_reduce
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()

    with pytest.raises(KeyboardInterrupt) as info:
        ordo.spawn(interrupted)
    assert "still running" not in " ".join(info.value.__notes__)
    assert_later_spawns_start_clean()


def test_a_spawn_of_some_devices_starts_clean_when_the_others_are_idle(bounded_timeouts):
    with pytest.raises(RuntimeError, match="replica 1 gave up"):
        ordo.spawn(raises_after_one_all_reduce)
    pairs = [[0, 1], [2], [3]]

    def pair_sum(index):
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2) * (index + 1), groups=pairs).numpy().tolist()

    assert ordo.spawn(pair_sum, nprocs=2) == [[3.0, 3.0]] * 2
    for index in (2, 3):  # the caller drives the others through the same collective, as SPMD asks
        ordo.set_device(index)
        assert pair_sum(index) == [index + 1.0] * 2
    assert_later_spawns_start_clean()


def test_a_spawn_of_some_devices_forgets_nothing_while_a_device_it_leaves_out_has_a_collective_traced(
        bounded_timeouts):
    """A fresh start would orphan that collective: its peers stay gone."""
    with pytest.raises(RuntimeError, match="replica 1 gave up"):
        ordo.spawn(raises_after_one_all_reduce)
    ordo.set_device(3)
    left_out = ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2))  # traced by the caller, not run
    with pytest.raises(ordo.CollectiveError, match="device 1 is gone"):
        ordo.spawn(lambda index: ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy(), nprocs=3)
    del left_out
    ordo.drop_pending_graph(3)
    assert_later_spawns_start_clean()


def test_a_spawn_after_a_failed_one_leaves_the_callers_pending_tensors_alone(bounded_timeouts):
    """Only a pending graph that holds a collective is dropped: the
    caller's own pending tensor on the device that raised (before it
    traced anything) survives the fresh start."""
    ordo.set_device(1)
    kept = ordo.ones(2) * 3.0  # pending on device 1, no collective in it
    with pytest.raises(RuntimeError, match="replica 1 gave up"):
        ordo.spawn(raises_before_a_rendezvous)
    assert_later_spawns_start_clean()
    assert kept.numpy().tolist() == [3.0, 3.0]


def test_torch_xla_spawn_after_a_replica_raised_starts_clean(bounded_timeouts):
    torch = pytest.importorskip("torch")
    pytest.importorskip("ordo.torch_xla")
    import ordo.torch_xla.core.xla_model as xm
    import ordo.torch_xla.distributed.xla_multiprocessing as xmp

    def raising(index):
        xm.all_reduce(xm.REDUCE_SUM, torch.ones(2, device=xm.xla_device())).cpu()
        if index == 2:
            raise RuntimeError("replica 2 gives up")
        xm.all_reduce(xm.REDUCE_SUM, torch.ones(2, device=xm.xla_device())).cpu()

    with pytest.raises(RuntimeError, match="replica 2 gives up"):
        xmp.spawn(raising)
    for _ in range(2):
        sums = {}

        def summing(index):
            value = torch.full((2,), index + 1.0, device=xm.xla_device())
            sums[index] = xm.all_reduce(xm.REDUCE_SUM, value).cpu().tolist()

        xmp.spawn(summing)
        assert sums == {index: [10.0, 10.0] for index in range(WORLD)}


def test_peers_still_hear_of_the_failed_device_until_the_next_spawn(bounded_timeouts):
    """Between the spawns nothing is forgotten: the caller's collective
    that needs the failed device fails at once, naming it."""
    with pytest.raises(RuntimeError, match="replica 1 gave up"):
        ordo.spawn(raises_after_one_all_reduce)
    ordo.set_device(0)
    with pytest.raises(ordo.CollectiveError, match="device 1 is gone"):
        ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy()
    assert_later_spawns_start_clean()

