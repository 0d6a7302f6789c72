"""torch_xla's semantics across processes: every collective, the host-side
exchange and the device queries, on the world of every process's devices,
each result checked against numpy computed from the global ordinal (the
inputs and references of tests/python/test_collectives.py and
test_exchange.py, so that they mean what they mean in-process).

    scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=2 /usr/bin/python3 tests/mpi/python/semantics.py
    ORDO_NUM_DEVICES=4 /usr/bin/python3 tests/mpi/python/semantics.py     # one process

Every process checks its own devices; a process exits non-zero naming the
first case that failed. A collective that waits past 30 s fails (and
mpirun's --timeout ends a job that hangs anyway)."""

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import ordo  # noqa: E402
import spmd  # noqa: E402
from test_collectives import device_input  # noqa: E402
from test_exchange import payload  # noqa: E402

# Where Open MPI put this process (unset without mpirun: one process).
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
LOCAL_RANK = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
LOCAL_SIZE = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))


def device_queries(ordinal):
    return dict(ordinal=ordinal, get_ordinal=ordo.get_ordinal(), local=ordo.get_local_ordinal(),
                world=ordo.world_size(), xrt_world=ordo.xrt_world_size(), master=ordo.is_master_ordinal(),
                master_global=ordo.is_master_ordinal(local=False), device=ordo.xla_device(),
                tensor_device=ordo.ones(1).device, devices=ordo.devices())


def expected_queries(ordinal, world, local_devices):
    index = ordinal - RANK * local_devices
    local = LOCAL_RANK * local_devices + index  # among the devices of this host
    return dict(ordinal=ordinal, get_ordinal=ordinal, local=local, world=world, xrt_world=world,
                master=local == 0, master_global=ordinal == 0, device=ordo.Device(index),
                tensor_device=ordo.Device(index), devices=[ordo.Device(i) for i in range(local_devices)])


def driver_cpu_of(ordinal, local_devices):
    """The CPU spawn binds device `ordinal`'s thread to (device/cpu_placement):
    by its place among the devices of its host, so that the processes of a
    host do not pin to the same CPUs."""
    allowed = sorted(os.sched_getaffinity(0))
    host_ordinal = LOCAL_RANK * local_devices + ordinal - RANK * local_devices
    host_devices = LOCAL_SIZE * local_devices
    cpu = host_devices + host_ordinal if 2 * host_devices <= len(allowed) else host_ordinal
    return {allowed[cpu % len(allowed)]}


def cases(world, local_devices):
    """(name, step(ordinal) run on every device, expected(ordinal))."""
    groups = spmd.even_odd_groups(world)
    ring = [[i, (i + 1) % world] for i in range(world)]

    def replication(ordinal):
        ones = ordo.ones((2, 3))
        twos = ones + ones
        ordo.all_reduce(ordo.REDUCE_SUM, [ones, twos], scale=0.5)
        ordo.mark_step()
        return ones.numpy(), twos.numpy()

    def all_reduce_in_groups(ordinal):
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.tensor([float(ordinal)]), groups=groups).numpy()

    def all_gather_of_the_ordinal(ordinal):
        me = ordo.tensor([ordinal])
        return ordo.all_gather(me).numpy(), ordo.all_gather(me, groups=groups).numpy()

    def all_gather_along_dim_1(ordinal):
        return ordo.all_gather(ordo.tensor(device_input(ordinal, (2, 3))), dim=1).numpy()

    def reduce_scatter_sum(ordinal):
        x = ordo.tensor(device_input(ordinal, (3, 2 * world)))
        return ordo.reduce_scatter(ordo.REDUCE_SUM, x, scale=0.5, scatter_dim=1, shard_count=world).numpy()

    def reduce_scatter_max_in_groups(ordinal):
        x = ordo.tensor(device_input(ordinal, (2 * len(groups[0]), 2)))
        return ordo.reduce_scatter(ordo.REDUCE_MAX, x, 1.0, 0, len(groups[0]), groups=groups).numpy()

    def all_to_all_of_the_ordinal(ordinal):
        x = ordo.tensor([ordinal] * 4 * world, dtype=ordo.int32)
        return ordo.all_to_all(x, split_dimension=0, concat_dimension=0, split_count=world).numpy()

    def all_to_all_across_dims(ordinal):
        return ordo.all_to_all(ordo.tensor(device_input(ordinal, (2, 4 * world, 3))), 1, 2, world).numpy()

    def permute_ring(ordinal):
        return ordo.collective_permute(ordo.tensor(device_input(ordinal, (3,))), ring).numpy()

    def broadcast_from_the_last(ordinal):
        tensors = [ordo.tensor(device_input(ordinal, (2, 2))), ordo.full((3,), ordinal, dtype=ordo.int64)]
        ordo.collective_broadcast(tensors, root_ordinal=world - 1)
        return [t.numpy() for t in tensors]

    def broadcast_in_groups(ordinal):
        return ordo.collective_broadcast([ordo.tensor(device_input(ordinal, (3,)))], groups=groups)[0].numpy()

    def merge(dicts):
        return {k: v for d in dicts for k, v in d.items()}

    def group_inputs(ordinal, shape):
        return [device_input(i, shape) for i in spmd.group_of(ordinal, groups)]

    def rank_in_group(ordinal):
        return spmd.group_of(ordinal, groups).index(ordinal)

    every = [device_input(i, (2, 3)) for i in range(world)]
    return [
        ("device queries", lambda o: device_queries(o), lambda o: expected_queries(o, world, local_devices)),
        ("spawn binds by host ordinal", lambda o: os.sched_getaffinity(0), lambda o: driver_cpu_of(o, local_devices)),
        ("replication", replication,
         lambda o: (np.full((2, 3), world * 0.5, np.float32), np.full((2, 3), world, np.float32))),
        ("all_reduce in groups", all_reduce_in_groups, lambda o: np.array([sum(spmd.group_of(o, groups))], np.float32)),
        ("all_gather with and without groups", all_gather_of_the_ordinal,
         lambda o: (np.arange(world), np.arange(o % 2, world, 2))),
        ("all_gather along dim 1", all_gather_along_dim_1, lambda o: spmd.all_gather(every, 1)),
        ("reduce_scatter sum", reduce_scatter_sum,
         lambda o: spmd.reduce_scatter([device_input(i, (3, 2 * world)) for i in range(world)],
                                       ordo.REDUCE_SUM, 0.5, 1, o)),
        ("reduce_scatter max in groups", reduce_scatter_max_in_groups,
         lambda o: spmd.reduce_scatter(group_inputs(o, (2 * len(groups[0]), 2)), ordo.REDUCE_MAX, 1.0, 0,
                                       rank_in_group(o))),
        ("all_to_all of the ordinal", all_to_all_of_the_ordinal,
         lambda o: np.repeat(np.arange(world, dtype=np.int32), 4)),
        ("all_to_all across dims", all_to_all_across_dims,
         lambda o: spmd.all_to_all([device_input(i, (2, 4 * world, 3)) for i in range(world)], 1, 2, o)),
        ("collective_permute ring", permute_ring, lambda o: device_input((o - 1) % world, (3,))),
        ("collective_broadcast from the last", broadcast_from_the_last,
         lambda o: [device_input(world - 1, (2, 2)), np.full(3, world - 1, np.int64)]),
        ("collective_broadcast in groups", broadcast_in_groups,
         lambda o: device_input(0, (3,)) if o % 2 == 0 else np.zeros(3, np.float32)),
        ("rendezvous", lambda o: ordo.rendezvous("hello", payload(o)), lambda o: [payload(i) for i in range(world)]),
        ("rendezvous among replicas", lambda o: ordo.rendezvous("groups", payload(o), spmd.group_of(o, groups)),
         lambda o: [payload(i) for i in spmd.group_of(o, groups)]),
        ("rendezvous rounds", lambda o: [ordo.rendezvous("again", payload(o, r)) for r in range(3)],
         lambda o: [[payload(i, r) for i in range(world)] for r in range(3)]),
        ("mesh_reduce of a number", lambda o: ordo.mesh_reduce("scalar", 1.25, sum), lambda o: 1.25 * world),
        ("mesh_reduce of dicts", lambda o: ordo.mesh_reduce("dicts", {o: str(o)}, merge),
         lambda o: {i: str(i) for i in range(world)}),
    ]


def check_metrics(world, ordinals, local_devices):
    """The device that comes last is counted on its own process; every
    process's report reaches every process, each under its line."""
    late = world - 1
    before = ordo.counter_value("CollectiveLastArrival") or 0

    def late_all_reduce(ordinal):
        if ordinal == late:
            time.sleep(0.3)
        return ordo.all_reduce(ordo.REDUCE_SUM, ordo.tensor([1.0])).numpy()

    ordo.spawn(late_all_reduce)
    gained = (ordo.counter_value("CollectiveLastArrival") or 0) - before
    assert gained == (1 if late in ordinals else 0), f"CollectiveLastArrival gained {gained}"
    report = ordo.metrics_report(all_processes=True)
    starts = [report.find(f"Process {p} (devices {p * local_devices}..{(p + 1) * local_devices - 1}, pid ")
              for p in range(world // local_devices)]
    assert -1 not in starts and starts == sorted(starts), f"every process's report, in order:\n{report}"
    assert report.count("Counter: MarkStep\n") == world // local_devices, report
    assert f"Counter: CollectiveLastArrival.device{late}\n" in report, report


def assert_same(got, expected, where):
    if isinstance(expected, (list, tuple)) and not isinstance(got, np.ndarray):
        assert type(got) in (list, tuple) and len(got) == len(expected), f"{where}: got {got!r}, expected {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
    elif isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        expected = np.asarray(expected)
        assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(got, expected, err_msg=where)
    else:
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"


def main():
    ordo.set_collective_timeout(30.0, warn_seconds=10.0)
    world = ordo.world_size()
    local_devices = len(ordo.devices())
    first = RANK * local_devices
    ordinals = list(range(first, first + local_devices))
    assert ordo.spawn(lambda o, a, b: (o, a + b), args=(2, 3)) == [(o, 5) for o in ordinals], "spawn's ordinals"
    bound = os.environ.get("ORDO_CPU_BIND", "cores") != "none" and len(os.sched_getaffinity(0)) > 1
    passed = 0
    for name, step, expected in cases(world, local_devices):
        if name.startswith("spawn binds") and not bound:
            continue
        results = ordo.spawn(step)
        for ordinal, got in zip(ordinals, results):
            assert_same(got, expected(ordinal), f"{name}, ordinal {ordinal}")
        passed += 1
    check_metrics(world, ordinals, local_devices)
    passed += 1
    ordo.shutdown()
    print(f"process {RANK}: ordinals {ordinals} of {world}: {passed} cases passed")


if __name__ == "__main__":
    main()
