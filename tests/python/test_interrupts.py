"""Waits that end when they must: Ctrl-C (a real SIGINT from this process)
while an ordo call waits raises KeyboardInterrupt within a second and lets
the process exit, a second Ctrl-C never aborts it, a timeout shorter than
the warning time wins with a message that tells the truth, and a child
forked beside a busy runtime gets a fresh one instead of a hang. Each case
runs in a fresh interpreter with a time limit, so that a hang fails the
test instead of stalling the suite."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from package_dir import PYTHON_DIR
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


# ---- Ctrl-C while an ordo call waits. ----

# The child prints "ready" just before it waits, then waits for devices
# that never come (the timeouts are far beyond the test's time limit).
INTERRUPTED_WAIT = """
    import os, sys, threading, time, ordo
    ordo.set_collective_timeout(600, warn_seconds=600)
    {setup}
    print("ready", flush=True)
    try:
        {wait}
        print("the wait ended without an interrupt", flush=True)
    except KeyboardInterrupt as interrupt:
        print(f"interrupted at {{time.monotonic()!r}}", flush=True)
        for note in getattr(interrupt, "__notes__", []):
            print(f"note: {{note}}", flush=True)
        raise
"""

# A thread that drives device 1 and waits with the main thread (device 0);
# devices 2 and 3 never come. It reports how its wait ended.
PEER = """
    def peer():
        ordo.set_device(1)
        try:
            {wait}
        except ordo.CollectiveError as error:
            os.write(1, f"peer: {{type(error).__name__}}: {{error}}\\n".encode())  # one write: lines never mix
    threading.Thread(target=peer).start()
    time.sleep(0.2)
"""

# Every device but 3 waits in an all_reduce for device 3, which waits in a
# rendezvous for them: a deadlock that only the interrupt ends. Each thread
# reports how its wait ended.
SPAWN_DEADLOCK = """
    def step(index):
        try:
            if index == 3:
                ordo.rendezvous("never")
            while True:
                ordo.all_reduce("sum", ordo.ones([4])).numpy()
        except ordo.CollectiveError as error:
            os.write(1, f"device {index}: {type(error).__name__}: {error}\\n".encode())  # one write: lines never mix
            raise
"""

# Every device runs all_reduces in a loop: before, the threads went on after
# the interrupt, and a second Ctrl-C ended the interpreter under them
# ("terminate called without an active exception", SIGABRT).
SPAWN_BUSY = """
    def step(index):
        while True:
            ordo.all_reduce("sum", ordo.ones([4])).numpy()
"""

# Device 0's call is busy in code of its own (sleeping, computing in
# Python, waiting on a lock nobody releases) while the others wait for it
# in a collective or a rendezvous. Before, the interrupted spawn waited for
# it at exit, and a second Ctrl-C sent while spawn still gave its threads a
# moment to end counted as the first: the process lived on.
SPAWN_BESIDE_A_BUSY_CALL = """
    lock = threading.Lock()
    lock.acquire()

    def step(index):
        if index == 0:
            {busy}
            os.write(1, b"the busy call returned\\n")
            return
        try:
            {wait}
        except ordo.CollectiveError as error:
            os.write(1, f"device {{index}}: {{type(error).__name__}}: {{error}}\\n".encode())
            raise
"""
BUSY_CALLS = {
    "sleeping": f"time.sleep({CHILD_TIME_LIMIT})",
    "in a Python loop": "while True: pass",
    "waiting on a lock": "lock.acquire()",
}
ALL_REDUCE = 'ordo.all_reduce("sum", ordo.ones([4]))'
WAITS_BESIDE_A_BUSY_CALL = {
    "sleeping": f"{ALL_REDUCE}.numpy()",
    "in a Python loop": 'ordo.mesh_reduce("meet", 1.0, sum)',
    "waiting on a lock": f"{ALL_REDUCE}.numpy()",
}


def spawn_beside_a_busy_call(busy):
    return SPAWN_BESIDE_A_BUSY_CALL.format(busy=BUSY_CALLS[busy], wait=WAITS_BESIDE_A_BUSY_CALL[busy])


INTERRUPTED_WAITS = {
    "reading a value": (f"x = {ALL_REDUCE}", "x.numpy()"),
    "wait_device_ops": (f"x = {ALL_REDUCE}; ordo.mark_step()", "ordo.wait_device_ops()"),
    "mark_step": (f"x = {ALL_REDUCE}", "ordo.mark_step(wait=True)"),
    "spawn, deadlocked": (SPAWN_DEADLOCK, "ordo.spawn(step)"),
    "spawn, busy": (SPAWN_BUSY, "ordo.spawn(step)"),
    # Devices 0-2 wait in a rendezvous for device 3, which nobody drives.
    "spawn of fewer devices": ("", 'ordo.spawn(lambda index: ordo.rendezvous("meet"), nprocs=3)'),
    "rendezvous": (PEER.format(wait='ordo.rendezvous("meet")'), 'ordo.rendezvous("meet")'),
    "mesh_reduce": (PEER.format(wait='ordo.mesh_reduce("meet", 1.0, sum)'), 'ordo.mesh_reduce("meet", 1.0, sum)'),
    **{f"spawn beside a call {busy}": (spawn_beside_a_busy_call(busy), "ordo.spawn(step)") for busy in BUSY_CALLS},
}
EXIT_SECONDS = 2.0  # from the first SIGINT until the child has ended
SETTLE_SECONDS = 0.5  # from "ready" until the child surely waits
SECOND_SIGINT_AFTER = 0.2


def child_code(setup, wait):
    return INTERRUPTED_WAIT.format(setup=textwrap.indent(textwrap.dedent(setup), "    ").strip(), wait=wait)


def read_line(stream, timeout):
    """A line from an unbuffered binary pipe, without reading beyond it."""
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        if not select.select([stream], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError(f"no line within {timeout} s (got {line!r})")
        byte = os.read(stream.fileno(), 1)
        if not byte:
            break
        line += byte
    return line.decode()


def interrupt_child(code, signals=1):
    """Runs code in a fresh interpreter, sends it `signals` SIGINTs once it
    waits, and returns (seconds from the first SIGINT until the child
    caught KeyboardInterrupt or None, seconds until it ended, its return
    code, its output)."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=child_environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    try:
        ready = read_line(child.stdout, CHILD_TIME_LIMIT)
        if ready.strip() != "ready":
            child.kill()
            pytest.fail(f"the child did not get ready: {ready}{child.communicate()[1].decode()}")
        time.sleep(SETTLE_SECONDS)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        for _ in range(signals - 1):
            time.sleep(SECOND_SIGINT_AFTER)
            child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=CHILD_TIME_LIMIT)
        exited = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"the child did not exit after SIGINT:\n{out.decode()}\n{err.decode()[-3000:]}")
    output = out.decode() + err.decode()
    caught = re.search(r"interrupted at ([0-9.]+)", output)
    return (float(caught.group(1)) - sent if caught else None), exited, child.returncode, output


@pytest.mark.parametrize("signals", [1, 2], ids=["one SIGINT", "two SIGINTs"])
@pytest.mark.parametrize("waiting", list(INTERRUPTED_WAITS))
def test_ctrl_c_while_an_ordo_call_waits_raises_keyboard_interrupt_promptly_and_the_process_exits(
        waiting, signals):
    delay, exited, returncode, output = interrupt_child(child_code(*INTERRUPTED_WAITS[waiting]), signals)
    assert delay is not None, output
    assert delay < 1.0, output  # before, only once the collective timed out
    # The child re-raised KeyboardInterrupt: Python then ends itself with
    # SIGINT. Not an abort (SIGABRT, "terminate called recursively").
    assert returncode == -signal.SIGINT, output
    assert "terminate called" not in output
    # Nothing it waited for holds the exit (a call busy in Python, say).
    assert exited < EXIT_SECONDS, output


READ_BESIDE_A_PEER = INTERRUPTED_WAITS["reading a value"][0] + textwrap.dedent(PEER.format(wait=f"{ALL_REDUCE}.numpy()"))


@pytest.mark.parametrize("setup, wait, peer_error", [
    (READ_BESIDE_A_PEER, "x.numpy()",
     "CollectiveError: all_reduce(sum, scale 1) of float32[4] #0 on group [0, 1, 2, 3] was interrupted on device "
     "0: Python's main thread was interrupted by KeyboardInterrupt while it waited for device 0 (reading a value)"),
    (*INTERRUPTED_WAITS["rendezvous"],
     "CollectiveError: rendezvous 'meet' cannot complete: device 0 was interrupted by KeyboardInterrupt while it "
     "waited"),
    (*INTERRUPTED_WAITS["mesh_reduce"],
     "CollectiveError: rendezvous 'meet' cannot complete: device 0 was interrupted by KeyboardInterrupt while it "
     "waited"),
], ids=["reading a value", "rendezvous", "mesh_reduce"])
def test_the_peers_of_an_interrupted_wait_fail_at_once_naming_the_interrupt(setup, wait, peer_error):
    _, _, returncode, output = interrupt_child(child_code(setup, wait))
    assert returncode == -signal.SIGINT, output
    kind, message = peer_error.split(": ", 1)
    assert re.search(rf"peer: {kind}: (.*: )?{re.escape(message)}", output), output


def test_an_interrupted_spawn_stops_its_devices_collectives_with_a_clear_error():
    _, _, returncode, output = interrupt_child(child_code(*INTERRUPTED_WAITS["spawn, deadlocked"]))
    assert returncode == -signal.SIGINT, output
    reason = "the main thread was interrupted by KeyboardInterrupt while ordo.spawn waited for the devices' threads"
    for index in range(3):
        assert re.search(rf"device {index}: CollectiveError: .*{re.escape(reason)}", output), output
    # Gone (its peers) or interrupted (itself), whichever it sees first.
    assert re.search(rf"device 3: CollectiveError: rendezvous 'never'.*{re.escape(reason)}", output), output
    assert re.search(r"note: ordo.spawn was interrupted; the devices' calls raised: ordinal \d: CollectiveError",
                     output), output
    assert "still running" not in output


@pytest.mark.parametrize("busy", list(BUSY_CALLS))
def test_an_interrupted_spawn_fails_the_waiting_calls_names_the_busy_one_and_the_exit_does_not_wait_for_it(busy):
    _, exited, returncode, output = interrupt_child(child_code(spawn_beside_a_busy_call(busy), "ordo.spawn(step)"))
    assert returncode == -signal.SIGINT, output
    reason = "the main thread was interrupted by KeyboardInterrupt while ordo.spawn waited for the devices' threads"
    for index in range(1, 4):
        assert re.search(rf"device {index}: CollectiveError: .*{re.escape(reason)}", output), output
    assert re.search(r"note: ordo.spawn was interrupted; the devices' calls raised: (ordinal [123]: CollectiveError"
                     r"(, )?){3}; still running: ordinals \[0\]", output), output
    # Before, the interpreter waited at exit for the busy call, as for a
    # thread of its own, until it returned.
    assert "the busy call returned" not in output
    assert exited < EXIT_SECONDS, output


# ---- fork() beside a running runtime. ----

# Threads drive every device with small steps while the main thread forks:
# the child has none of them, nor the workers, only their memory and locks.
FORK_BESIDE_A_BUSY_RUNTIME = """
    import json, os, sys, threading, time
    import numpy as np
    import ordo
    ordo.init(3)
    ordo.set_collective_timeout(600, warn_seconds=600)
    stop = threading.Event()
    inherited = []  # tensors of the parent's runtime, some pending at the fork

    def busy(index):  # the devices agree on when to stop, or one would wait for another
        ordo.set_device(index)
        while True:
            x = ordo.all_reduce("sum", ordo.ones([64]) * 2.0)
            stopping = ordo.all_reduce("max", ordo.tensor([float(stop.is_set())]))
            inherited.append(x)
            ordo.mark_step()
            if stopping.numpy()[0] > 0:
                break
            del inherited[:-4]

    threads = [threading.Thread(target=busy, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)

    def in_child():
        {child}

    outcomes = []
    for trial in range({trials}):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                result = in_child()
            except BaseException as error:
                result = [type(error).__name__, str(error)]
            os.write(write, json.dumps(result).encode())
            os.close(write)
            {child_exit}
        os.close(write)
        start = time.monotonic()
        with os.fdopen(read) as pipe:
            reported = pipe.read()
        _, status = os.waitpid(pid, 0)
        outcomes.append([json.loads(reported) if reported else None, os.waitstatus_to_exitcode(status),
                         time.monotonic() - start])
        time.sleep(0.02)
    stop.set()
    for thread in threads:
        thread.join()
    print(json.dumps(outcomes))
"""
FORK_TRIALS = 5
CHILD_SHUTDOWN = """
        start = time.monotonic()
        ordo.shutdown()
        return ["shut down", time.monotonic() - start]"""
CHILD_USES_ORDO = """
        devices = ordo.world_size()
        sums = ordo.spawn(lambda index: ordo.all_reduce("sum", ordo.tensor([float(index)] * 2)).numpy().tolist())
        try:
            inherited[-1].numpy()
            parents = "read"
        except ValueError as error:
            parents = str(error)
        return [devices, sums, parents]"""


def run_forks(child, child_exit="os._exit(0)"):
    code = FORK_BESIDE_A_BUSY_RUNTIME.format(child=textwrap.indent(textwrap.dedent(child), " " * 8).strip(),
                                             trials=FORK_TRIALS, child_exit=child_exit)
    outcomes, _ = run_child(code)
    return outcomes


@pytest.mark.parametrize("child_exit", ["os._exit(0)", "sys.exit(0)"], ids=["os._exit", "interpreter exit"])
def test_a_forked_child_of_a_busy_runtime_shuts_down_at_once_and_exits(child_exit):
    # Before, shutdown joined the parent's workers, which the child does not
    # have (every trial hung), and so did the child's exit.
    for (reported, exit_code, seconds) in run_forks(CHILD_SHUTDOWN, child_exit):
        assert reported[0] == "shut down" and reported[1] < 1.0, reported
        assert exit_code == 0 and seconds < 20


def test_a_forked_child_gets_a_fresh_runtime_with_the_parents_devices_and_refuses_the_parents_tensors():
    for (reported, exit_code, _) in run_forks(CHILD_USES_ORDO):
        assert exit_code == 0, reported
        devices, sums, parents = reported
        assert devices == 3
        assert sums == [[3.0, 3.0]] * 3
        assert parents == ("copy_to_host: an input tensor belongs to a runtime that was shut down "
                           "(or to the parent's, in a forked process)")


# Workers of a fork Pool load data with numpy while spawn's threads train on
# every device; each worker first drops the tensors it inherited (large
# ones, from the buffer pool), as a garbage collection there would.
MULTIPROCESSING_BESIDE_ORDO = """
    import gc, json, multiprocessing, threading
    import numpy as np
    import ordo

    held = []  # the parent's tensors, some pending, inherited by every worker

    def drop_inherited():
        held.clear()
        gc.collect()

    def load(seed):
        return float(np.random.default_rng(seed).standard_normal((64, 64)).sum())

    def train(index, steps):
        total = ordo.zeros([32768])
        for step in range(steps):
            total = ordo.all_reduce("sum", ordo.ones([32768])) + total
            held.append(total)
            ordo.mark_step()
            if step % 4 == 0:
                total.numpy()
            del held[:-64]
        return float(total.numpy()[0])

    def main():
        ordo.init(4)
        ordo.set_collective_timeout(600, warn_seconds=600)
        results = {}
        training = threading.Thread(target=lambda: results.update(trained=ordo.spawn(train, (200,))))
        training.start()
        context = multiprocessing.get_context("fork")
        batches = []
        while training.is_alive() or not batches:
            with context.Pool(3, initializer=drop_inherited) as pool:
                batches.append(pool.map(load, range(12)))
        training.join()
        expected = [load(seed) for seed in range(12)]
        print(json.dumps([len(batches), all(batch == expected for batch in batches), results["trained"]]))

    if __name__ == "__main__":
        main()
"""


def test_multiprocessing_with_fork_loads_data_beside_ordo_devices_running_in_threads():
    (pools, loaded, trained), _ = run_child(MULTIPROCESSING_BESIDE_ORDO)
    assert pools >= 1 and loaded
    assert trained == [800.0] * 4


# The same on torch tensors: a torch_xla program whose replica 0 sleeps
# while the others wait in xm.all_reduce; their errors are ordo's.
TORCH_SPAWN_BESIDE_A_BUSY_CALL = """
    import torch
    import ordo.torch_xla.core.xla_model as xm
    import ordo.torch_xla.distributed.xla_multiprocessing as xmp

    def step(index):
        if index == 0:
            time.sleep(60)
            return
        try:
            xm.all_reduce(xm.REDUCE_SUM, torch.ones(4, device=xm.xla_device())).cpu()
        except ordo.CollectiveError as error:
            os.write(1, f"device {index}: {type(error).__name__}: {error}\\n".encode())
            raise
"""


def test_an_interrupted_torch_xla_spawn_fails_the_waiting_replicas_with_ordos_error():
    pytest.importorskip("torch")
    pytest.importorskip("ordo.torch_xla")
    delay, exited, returncode, output = interrupt_child(child_code(TORCH_SPAWN_BESIDE_A_BUSY_CALL, "xmp.spawn(step)"))
    assert delay is not None and delay < 1.0, output
    assert returncode == -signal.SIGINT, output
    assert exited < EXIT_SECONDS, output
    reason = "the main thread was interrupted by KeyboardInterrupt while ordo.spawn waited for the devices' threads"
    for index in range(1, 4):
        assert re.search(rf"device {index}: CollectiveError: .*{re.escape(reason)}", output), output
