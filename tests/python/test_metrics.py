"""ordo's counters and metrics from Python, as torch_xla.debug.metrics."""

import os
import re
import time

import numpy as np
import pytest

import ordo


@pytest.fixture(autouse=True)
def cleared():
    # Counts start from nothing: no graph compiled, no counter counted.
    ordo._C.reset_compile_cache()
    ordo.clear_all()


def test_a_known_program_has_exact_counts_and_positive_times():
    for _ in range(3):
        y = ordo.exp(ordo.tensor([1.0, 2.0])) * 2
        ordo.mark_step()
        y.numpy()
    assert ordo.counter_value("MarkStep") == 3
    assert ordo.counter_value("UncachedCompile") == 1
    assert ordo.counter_value("CachedCompile") == 2
    samples, accumulator, values = ordo.metric_data("ExecuteTime")
    assert samples == 3 and accumulator > 0 and len(values) == 3
    assert all(v > 0 for _, v in values)
    assert [t for t, _ in values] == sorted(t for t, _ in values)
    assert ordo.metric_data("TransferFromDeviceTime")[0] == 3
    assert set(ordo.counter_names()) >= {"MarkStep", "CachedCompile", "UncachedCompile", "CreateTensor"}
    assert "CompileTime" in ordo.metric_names()


def test_the_report_has_torch_xlas_format():
    y = ordo.tensor([1.0]) + 1
    ordo.mark_step()
    y.numpy()
    report = ordo.metrics_report()
    assert re.search(r"^Metric: CompileTime\n  TotalSamples: 1\n  Accumulator: [0-9hms]*\d{3}ms\d{3}\.\d{3}us\n"
                     r"  Percentiles: 1%=\S+; 5%=\S+; 10%=\S+; 20%=\S+; 50%=\S+; 80%=\S+; 90%=\S+; 95%=\S+; 99%=\S+\n",
                     report, re.M), report
    assert "Counter: MarkStep\n  Value: 1\n" in report
    assert "CachedCompile\n" not in report  # zero: left out, as torch_xla


def test_spawned_devices_count_their_own_collectives_and_each_kinds_bytes(world):
    # Each kind once, its output of a size of its own: a total alone
    # (CollectiveBytes, all this test checked) cannot say which kind moved what.
    def ones(n):
        return ordo.tensor(np.ones(n, np.float32))

    def step(index):
        outputs = [ordo.all_reduce(ordo.REDUCE_SUM, ones(4)), ordo.all_gather(ones(3)),
                   ordo.reduce_scatter(ordo.REDUCE_SUM, ones(5 * world), 1.0, 0, world),
                   ordo.all_to_all(ones(6 * world), 0, 0, world),
                   ordo.collective_permute(ones(7), [(d, (d + 1) % world) for d in range(world)]),
                   *ordo.collective_broadcast([ones(8)])]
        ordo.mark_step()
        return [x.numpy() for x in outputs]

    ordo.spawn(step)
    kinds = {"AllReduce": 4 * 4, "AllGather": 3 * world * 4, "ReduceScatter": 5 * 4, "AllToAll": 6 * world * 4,
             "CollectivePermute": 7 * 4, "CollectiveBroadcast": 8 * 4}
    for device in range(world):
        for kind, size in kinds.items():
            assert (ordo.counter_value(kind, device), ordo.counter_value(kind + "Bytes", device)) == (1, size), kind
        assert ordo.counter_value("MarkStep", device) == 1
        assert ordo.metric_data("CollectiveBytes", device)[:2] == (len(kinds), sum(kinds.values()))
    report = ordo.metrics_report()
    for kind, size in kinds.items():
        assert ordo.counter_value(kind + "Bytes") == world * size
        assert f"Counter: {kind}\n  Value: {world}\nCounter: {kind}Bytes\n  Value: {world * size}\n" in report
    assert ordo.counter_value("AllReduce") == world


def test_the_late_device_is_named_and_its_peers_waited_for_it(world):
    late, late_by = world - 1, 0.3

    def step(index):
        if index == late:
            time.sleep(late_by)
        total = ordo.all_reduce(ordo.REDUCE_SUM, ordo.tensor([1.0]))
        ordo.mark_step()
        return total.numpy()

    ordo.spawn(step)
    for device in range(world):
        samples, waited, _ = ordo.metric_data("CollectiveWaitTime", device)
        assert samples == 1
        if device == late:
            assert ordo.counter_value("CollectiveLastArrival", device) == 1
            assert waited < late_by / 2 * 1e9
        else:
            assert ordo.counter_value("CollectiveLastArrival", device) == 0
            assert waited > late_by / 2 * 1e9
    report = ordo.metrics_report()
    assert f"Counter: CollectiveLastArrival.device{late}\n  Value: 1\n" in report
    assert "Metric: CollectiveWaitTime\n" in report


def test_every_process_report_in_one_process_is_this_ones():
    ordo.mark_step()
    report = ordo.metrics_report(all_processes=True)
    header = f"Process 0 (devices 0..{len(ordo.devices()) - 1}, pid {os.getpid()}):\n"
    assert report == header + ordo.metrics_report()
    with pytest.raises(ValueError, match="pass no device"):
        ordo.metrics_report(device=0, all_processes=True)


def test_unknown_names_are_none_and_clearing_empties():
    assert ordo.counter_value("NoSuchCounter") is None
    assert ordo.metric_data("NoSuchMetric") is None
    ordo.mark_step()
    (ordo.tensor([1.0]) * 3).numpy()
    ordo.clear_counters()
    assert ordo.counter_names() == []
    assert ordo.metric_names() != []
    ordo.clear_metrics()
    assert ordo.metric_names() == []
    with pytest.raises(ValueError):
        ordo.counter_value("MarkStep", device=99)
