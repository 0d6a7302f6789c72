"""What one traced op costs from Python, against PyTorch eager.

    PYTHONPATH=python /usr/bin/python3 bench/python_op_bench.py

ordo only records an op (nothing runs until mark_step), PyTorch eager runs
it; on tiny tensors (shape (4,)) both costs are mostly the Python -> C++
call and the bookkeeping around it, which is what this measures. Both run
in the same process on the same tiny inputs, in alternating batches of
OPS_PER_BATCH ops (the garbage collector off while timed, as in timeit);
each figure is the median batch divided by OPS_PER_BATCH. Between ordo's
batches an untimed mark_step cuts the graph so it does not grow.

Target: ordo per op <= PyTorch eager, for every op."""

import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import numpy as np  # noqa: E402

import ordo  # noqa: E402

OPS_PER_BATCH = 1000
BATCHES = 41
WARMUP_BATCHES = 3
SHAPE = (4,)

# (label, op): op(x, w, lib) runs on ordo and on torch alike (lib is the
# module); x is the (4,) input, w a (4, 4) matrix.
OPS = [
    ("y = x + x", lambda x, w, lib: x + x),
    ("y = x * 2.0", lambda x, w, lib: x * 2.0),
    ("y = 1.0 - x", lambda x, w, lib: 1.0 - x),
    ("y = tanh(x)", lambda x, w, lib: lib.tanh(x)),
    ("y = relu(x)", lambda x, w, lib: lib.relu(x)),
    ("y = w @ x", lambda x, w, lib: w @ x),
    ("y = x > 0.5", lambda x, w, lib: x > 0.5),
]


def time_batch(op, x, w, lib):
    """Seconds for OPS_PER_BATCH calls of op, the garbage collector off."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(OPS_PER_BATCH):
            y = op(x, w, lib)
        elapsed = time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    del y
    return elapsed


def ordo_inputs():
    x = ordo.tensor(np.linspace(-1.0, 1.0, SHAPE[0], dtype=np.float32))
    w = ordo.tensor(np.eye(SHAPE[0], dtype=np.float32))
    ordo.mark_step(wait=True)  # inputs are device data, not pending IR
    return x, w


def cut_graph():
    ordo.mark_step(wait=True)


def measure(op, torch=None):
    """{library: seconds per op} (median over batches)."""
    runs = {"ordo": (ordo, *ordo_inputs(), cut_graph)}
    if torch is not None:
        x = torch.linspace(-1.0, 1.0, SHAPE[0], dtype=torch.float32)
        runs["torch"] = (torch, x, torch.eye(SHAPE[0], dtype=torch.float32), lambda: None)
    samples = {name: [] for name in runs}
    for batch in range(WARMUP_BATCHES + BATCHES):
        for name, (lib, x, w, after) in runs.items():
            seconds = time_batch(op, x, w, lib)
            after()  # untimed
            if batch >= WARMUP_BATCHES:
                samples[name].append(seconds)
    return {name: statistics.median(s) / OPS_PER_BATCH for name, s in samples.items()}


def main():
    try:
        import torch
    except ImportError as error:
        torch = None
        reason = error
    ordo.init(1)
    print(f"ordo: cost of one traced op from Python on shape {SHAPE}, "
          f"median of {BATCHES} batches of {OPS_PER_BATCH} ops")
    if torch is None:
        for label, op in OPS:
            print(f"  {label:<14} ordo {measure(op)['ordo'] * 1e9:8.0f} ns/op")
        print(f"PyTorch is not installed ({reason}): no comparison with PyTorch eager. "
              "Install it (Debian: apt-get install python3-torch) to compare.")
        return 0
    torch.set_num_threads(1)
    print(f"PyTorch {torch.__version__} eager on the same inputs, in alternating batches")
    print(f"  {'op':<14} {'ordo ns/op':>11} {'torch ns/op':>12} {'ordo/torch':>11}  target")
    all_met = True
    for label, op in OPS:
        seconds = measure(op, torch)
        ratio = seconds["ordo"] / seconds["torch"]
        met = seconds["ordo"] <= seconds["torch"]
        all_met &= met
        print(f"  {label:<14} {seconds['ordo'] * 1e9:11.0f} {seconds['torch'] * 1e9:12.0f} {ratio:11.2f}  "
              f"{'MET' if met else 'MISSED'}")
    print(f"target: ordo per op <= PyTorch eager: {'MET' if all_met else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
