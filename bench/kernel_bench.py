"""ordo's kernels against numpy (and PyTorch, for information), one device.

    PYTHONPATH=python /usr/bin/python3 bench/kernel_bench.py [--threads 1,2] [--repeats 21] [filter]

Each thread count runs in child processes of its own, since the thread
counts are fixed when the libraries load: ordo with ORDO_NUM_DEVICES=1 and
ORDO_KERNEL_THREADS=N (its worker plus N-1 free cores), numpy's OpenBLAS
with OPENBLAS_NUM_THREADS=N, torch with set_num_threads(N). numpy's
elementwise functions and reductions use one thread whatever N is: the
figure says so.

torch runs in a child of its own, first: loaded beside ordo it slows
ordo's kernels (measured: ordo's argmax over 4M floats on one thread took
1.73 ms with torch in the process and 0.93 ms without, numpy's 1.16 and
0.87), and it is information, not a target. ordo and numpy share the
other child: the machine's noise hits both alike there.

A case (bench/kernel_cases/*.py, each module's CASES) gives the inputs and
one callable per library; every library gets the same inputs. ordo and
numpy run in turn, `repeats` times after a warm-up, and each figure is the
median time of one call. ordo's call traces the op, runs the step and waits for
it (inputs are device data beforehand), so its figure includes tracing and
the cache-hit compile: a case whose op is cheap chains `inner` ops in one
call on every library. The ratio is numpy's time over ordo's (above 1:
ordo is faster), or torch's for a case numpy has no form of (convolutions:
`reference="torch"`); the target is a minimum ratio."""

import argparse
import dataclasses
import importlib
import json
import os
import pkgutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Case:
    name: str
    inputs: Callable  # (numpy.random.Generator) -> tuple of numpy arrays
    ordo: Callable  # (*tensors) -> tensor
    numpy: Optional[Callable]  # (*arrays) -> array; None: no numpy form (then reference is torch)
    torch: Optional[Callable] = None  # (*tensors) -> tensor
    target: Optional[float] = None  # minimum reference_time / ordo_time
    numpy_threads_follow: bool = False  # numpy uses N threads (BLAS) rather than one
    reference: str = "numpy"  # the library of the ratio: "numpy" or "torch"

    def __post_init__(self):
        if self.numpy is None:
            self.reference = "torch"


def all_cases():
    sys.path.insert(0, str(ROOT / "bench"))
    cases = []
    for module in sorted(pkgutil.iter_modules([str(ROOT / "bench" / "kernel_cases")]), key=lambda m: m.name):
        cases += importlib.import_module(f"kernel_cases.{module.name}").CASES
    return cases


def median_call_seconds(runs, repeats):
    """{library: median seconds of one call}: each library's call runs in
    turn, so that the machine's load hits all of them alike."""
    samples = {name: [] for name in runs}
    for round_index in range(repeats + 2):
        for name, call in runs.items():
            start = time.perf_counter()
            call()
            elapsed = time.perf_counter() - start
            if round_index >= 2:  # the first two warm caches and compile
                samples[name].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


def inputs_of(case):
    import numpy as np

    return case.inputs(np.random.default_rng(0))


def measure_ordo_and_numpy(case, repeats):
    import ordo

    arrays = inputs_of(case)
    tensors = [ordo.tensor(a) for a in arrays]
    ordo.mark_step(wait=True)

    def run_ordo():
        result = case.ordo(*tensors)
        ordo.mark_step(wait=True)
        return result

    runs = {"ordo": run_ordo}
    if case.numpy is not None:
        runs["numpy"] = lambda: case.numpy(*arrays)
    return median_call_seconds(runs, repeats)


def measure_torch(case, threads, repeats):
    import torch

    torch.set_num_threads(threads)
    tensors = [torch.from_numpy(a) for a in inputs_of(case)]
    return median_call_seconds({"torch": lambda: case.torch(*tensors)}, repeats)["torch"]


def machine_limits(threads, repeats):
    """This machine's limits at `threads` (what the figures compare with):
    memcpy's bandwidth on one thread (bytes read + written per second,
    64 MiB: past every cache) and the best float32 GFLOP/s of OpenBLAS's
    sgemm at 2048 (through numpy)."""
    import numpy as np

    source = np.ones(16 * 1024 * 1024, dtype=np.float32)
    target = np.empty_like(source)
    a = np.ones((2048, 2048), dtype=np.float32)
    times = median_call_seconds({"copy": lambda: np.copyto(target, source), "sgemm": lambda: a @ a},
                                max(3, repeats // 3))
    copy_gbs = 2 * source.nbytes / times["copy"] / 1e9
    gflops = 2 * 2048 ** 3 / times["sgemm"] / 1e9
    print(f"-- {threads} thread(s): memcpy {copy_gbs:.1f} GB/s (one thread, read + write), "
          f"sgemm 2048 {gflops:.0f} GFLOP/s (OpenBLAS, {threads} thread(s))", flush=True)


def selected_cases(pattern):
    return [case for case in all_cases() if not pattern or pattern in case.name]


def torch_child(threads, repeats, pattern):
    """Prints {case name: torch's median seconds} as JSON: {} without torch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("{}")
        return
    times = {case.name: measure_torch(case, threads, repeats)
             for case in selected_cases(pattern) if case.torch is not None}
    print(json.dumps(times))


def child(threads, repeats, pattern, torch_times):
    machine_limits(threads, repeats)
    for case in selected_cases(pattern):
        times = measure_ordo_and_numpy(case, repeats)
        if case.reference == "torch":
            times["torch"] = torch_times.get(case.name, float("nan"))
        ratio = times[case.reference] / times["ordo"]
        target = "" if case.target is None else f">= {case.target:.2f}x"
        met = "" if case.target is None else ("MET" if ratio >= case.target else "MISSED")
        numpy_threads = threads if case.numpy_threads_follow else 1
        torch_text = f"{torch_times[case.name] * 1e3:10.3f}" if case.name in torch_times else f"{'-':>10}"
        numpy_text = f"{times['numpy'] * 1e3:10.3f}" if "numpy" in times else f"{'-':>10}"
        print(f"{case.name:<44} {threads:>3} {numpy_threads:>3} {times['ordo'] * 1e3:10.3f} "
              f"{numpy_text} {torch_text} {ratio:7.2f}x {target:>9} {met}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--torch-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--torch-times", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("filter", nargs="?", default="", help="only cases whose name contains this")
    args = parser.parse_args()
    if args.child is not None:
        if args.torch_child:
            torch_child(args.child, args.repeats, args.filter)
        else:
            child(args.child, args.repeats, args.filter, json.loads(args.torch_times))
        return
    print(f"{'case':<44} {'thr':>3} {'np':>3} {'ordo ms':>10} {'numpy ms':>10} {'torch ms':>10} "
          f"{'ratio':>8} {'target':>9}")
    print("(thr: ordo's and torch's threads and OpenBLAS's; np: the threads numpy used; "
          "ratio: numpy ms / ordo ms, or torch ms / ordo ms where numpy has no form (conv);\n"
          " torch timed in a process of its own)")
    for threads in (int(t) for t in args.threads.split(",")):
        env = dict(os.environ, ORDO_NUM_DEVICES="1", ORDO_KERNEL_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   PYTHONPATH=str(ROOT / "python"))
        command = [sys.executable, __file__, "--child", str(threads), "--repeats", str(args.repeats), args.filter]
        torch_times = subprocess.run(command + ["--torch-child"], env=env, check=True,
                                     stdout=subprocess.PIPE, text=True).stdout
        subprocess.run(command + ["--torch-times", torch_times], env=env, check=True)


if __name__ == "__main__":
    main()
