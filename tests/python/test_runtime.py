"""The runtime from Python: configuration (ORDO_NUM_DEVICES, init,
shutdown, the collective timeouts from the environment), Device values, and
devices driven by threads that need the GIL released while they wait."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ordo

from package_dir import PYTHON_DIR
CONFIG_VARIABLES = ("ORDO_NUM_DEVICES", "ORDO_COLLECTIVE_TIMEOUT_SECONDS", "ORDO_COLLECTIVE_WARN_SECONDS",
                    "ORDO_CPU_BIND", "ORDO_KERNEL_THREADS")


def run_python(code, timeout=60, **environment):
    """Runs code in a fresh interpreter with only the given ordo variables
    set; returns what it printed as JSON on its last line."""
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARIABLES}
    env.update(environment, PYTHONPATH=str(PYTHON_DIR))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


CONFIGURATION = """
    import json, ordo
    try:
        result = [ordo.world_size(), list(ordo._C.collective_timeouts())]
    except Exception as error:
        result = [type(error).__name__, str(error)]
    print(json.dumps(result))
"""


@pytest.mark.parametrize("environment, expected", [
    ({}, [4, [30.0, 300.0]]),
    ({"ORDO_NUM_DEVICES": "3"}, [3, [30.0, 300.0]]),
    ({"ORDO_NUM_DEVICES": "1", "ORDO_COLLECTIVE_TIMEOUT_SECONDS": "7.5", "ORDO_COLLECTIVE_WARN_SECONDS": "2"},
     [1, [2.0, 7.5]]),
    ({"ORDO_NUM_DEVICES": "four"}, ["ValueError", "ORDO_NUM_DEVICES: 'four' is not a whole number"]),
    ({"ORDO_NUM_DEVICES": "0"},
     ["ValueError", "ORDO_NUM_DEVICES: the number of devices must be in [1, 1024], got 0"]),
    ({"ORDO_KERNEL_THREADS": "2"}, [4, [30.0, 300.0]]),
    ({"ORDO_KERNEL_THREADS": "0"},
     ["ValueError", "ORDO_KERNEL_THREADS: '0' is not a whole number of threads >= 1"]),
], ids=["defaults", "3 devices", "timeouts", "not a number", "zero", "kernel threads", "zero kernel threads"])
def test_configuration_from_the_environment(environment, expected):
    assert run_python(CONFIGURATION, **environment) == expected


CPU_BINDING = """
    import json, os, ordo
    try:
        result = [sorted(cpus) for cpus in ordo.spawn(lambda index: os.sched_getaffinity(0))]
    except Exception as error:
        result = [type(error).__name__, str(error)]
    print(json.dumps(result))
"""


def test_cpu_binding_follows_the_environment():
    allowed = sorted(os.sched_getaffinity(0))
    bound = run_python(CPU_BINDING, ORDO_NUM_DEVICES="2")
    unbound = run_python(CPU_BINDING, ORDO_NUM_DEVICES="2", ORDO_CPU_BIND="none")
    assert unbound == [allowed, allowed]
    assert bound == unbound if len(allowed) == 1 else all(len(cpus) == 1 for cpus in bound)
    if len(allowed) > 1:
        # Devices share the CPUs round-robin, each thread with its device's worker.
        assert run_python(CPU_BINDING, ORDO_NUM_DEVICES=str(2 * len(allowed))) == [
            [allowed[index % len(allowed)]] for index in range(2 * len(allowed))]
    assert run_python(CPU_BINDING, ORDO_CPU_BIND="cores") == run_python(CPU_BINDING)
    assert run_python(CPU_BINDING, ORDO_CPU_BIND="sideways") == [
        "ValueError", "ORDO_CPU_BIND: 'sideways' is not one of cores, none"]


TORCH_XLA_BINDING = """
    import json, os
    import ordo.torch_xla.core.xla_model as xm
    import ordo.torch_xla.distributed.xla_multiprocessing as xmp
    found = {}
    def replica(index):
        found[index] = sorted(os.sched_getaffinity(0))
    xmp.spawn(replica)
    print(json.dumps([found[i] for i in sorted(found)]))
"""


# PyTorch's bindings hand the GIL between a process's drivers in every op:
# with several devices, ordo pins nothing unless ORDO_CPU_BIND says cores.
def test_several_torch_xla_devices_in_a_process_are_unpinned_by_default():
    pytest.importorskip("torch")
    allowed = sorted(os.sched_getaffinity(0))
    assert run_python(TORCH_XLA_BINDING, ORDO_NUM_DEVICES="2") == [allowed, allowed]
    if len(allowed) > 1:
        assert all(len(cpus) == 1 for cpus in run_python(TORCH_XLA_BINDING, ORDO_NUM_DEVICES="2",
                                                         ORDO_CPU_BIND="cores"))
        assert [len(cpus) for cpus in run_python(TORCH_XLA_BINDING, ORDO_NUM_DEVICES="1")] == [1]


def test_init_and_shutdown():
    assert ordo._C.is_initialized() and ordo.world_size() == 4
    ordo.init(4)  # the same count again: nothing to do
    ordo.init()  # no count: keeps the running one
    assert ordo.world_size() == 4
    ordo.shutdown()
    assert not ordo._C.is_initialized()
    ordo.init(num_devices=2)
    assert ordo.world_size() == ordo.xrt_world_size() == 2
    assert ordo.devices() == [ordo.Device(0), ordo.Device(1)]


def test_shutdown_inside_spawn_is_refused_as_init_is_and_the_peers_go_on():
    # Before, it was accepted: the other replicas went on in a new runtime
    # whose devices nobody drove, and waited for them until the timeout.
    ordo.set_collective_timeout(20.0, warn_seconds=20.0)

    def step(index):
        refused = []
        for refused_call in (ordo.shutdown, lambda: ordo.init(8)):
            if index == 1:
                with pytest.raises(ValueError) as info:
                    refused_call()
                refused.append(str(info.value))
        return refused, ordo.all_reduce(ordo.REDUCE_SUM, ordo.ones(2)).numpy().tolist()

    results = ordo.spawn(step)
    (shutdown_refused, init_refused), _ = results[1]
    assert shutdown_refused == ("shutdown: called by the spawn function of ordinal 1; only the caller of spawn may do "
                                "this, after spawn returned")
    assert "call shutdown() before init(8)" in init_refused
    assert [total for _, total in results] == [[4.0, 4.0]] * 4
    assert ordo._C.is_initialized() and ordo.world_size() == 4
    ordo.shutdown()  # its caller may, once spawn returned
    assert not ordo._C.is_initialized()


def test_device_values():
    device = ordo.Device(3)
    assert device == ordo.Device(3) and device != ordo.Device(2) and device != 3
    assert hash(device) == hash(ordo.Device(3)) and len({device, ordo.Device(3)}) == 1
    assert int(device) == 3 and [10, 11, 12, 13][device] == 13  # usable as an index
    assert repr(device) == str(device) == "ordo:3"


def test_set_device_changes_the_calling_threads_device_only():
    ordo.set_device(ordo.Device(2))
    try:
        assert ordo.get_ordinal() == 2 and ordo.xla_device() == ordo.Device(2)
        assert ordo.spawn(lambda index: ordo.get_ordinal(), nprocs=2) == [0, 1]
        assert ordo.get_ordinal() == 2
    finally:
        ordo.set_device(0)


def test_mark_step_on_each_device_inside_spawn(world):
    def step(index):
        x = ordo.full((3,), float(index)) * 2.0
        ordo.mark_step(wait=True)
        assert not x.is_pending()
        return x.numpy()

    for index, result in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(result, np.full(3, 2.0 * index, np.float32))


# Four Python threads drive four devices: a thread waiting for a value (in
# numpy(), mark_step or a collective) must let the others trace their part,
# or the first collective deadlocks. Run in a fresh interpreter with a
# timeout so that a regression fails instead of hanging the suite.
GIL_PROGRAM = """
    import json, numpy as np, ordo
    ordo.init(4)
    ordo.set_collective_timeout(30.0, warn_seconds=10.0)

    def step(index):
        x = ordo.full((64,), float(index))
        for i in range(20):
            x = ordo.all_reduce(ordo.REDUCE_SUM, x, scale=0.25)
            ordo.mark_step(wait=i % 2 == 0)
            x.numpy()
        gathered = ordo.all_gather(ordo.tensor([index]))
        return [float(x.numpy()[0]), gathered.numpy().tolist(), ordo.mesh_reduce("done", index, sum)]

    print(json.dumps(ordo.spawn(step)))
"""


def test_spawn_with_collectives_completes_so_the_gil_is_released():
    mean = (0 + 1 + 2 + 3) / 4
    assert run_python(GIL_PROGRAM, timeout=90) == [[mean, [0, 1, 2, 3], 6]] * 4
