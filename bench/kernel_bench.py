"""ordo's kernels against numpy and PyTorch, one device.

    PYTHONPATH=python /usr/bin/python3 bench/kernel_bench.py [--threads 1,2] [--repeats 21] [filter]

Each thread count runs in child processes of its own, since the thread
counts are fixed when the libraries load: ordo with ORDO_NUM_DEVICES=1 and
ORDO_KERNEL_THREADS=N (its worker plus N-1 free cores), numpy's OpenBLAS
with OPENBLAS_NUM_THREADS=N, torch with set_num_threads(N). numpy's
elementwise functions and reductions use one thread whatever N is: the
figure says so.

torch runs in a child of its own beside ordo's: at two threads its OpenMP
team and ordo's workers share the two cores (measured: ordo's sum over 4M
floats at two threads took 0.98-1.18 ms with torch's calls between its
own and 0.48-0.51 without). The two children stay up and take each case
in turn, torch's first, so that the two figures of a row are seconds
apart (the VM's speed moves 2-3x within an hour). The torch child repeats
the other's pattern: torch on a copy of the inputs, in turn with numpy on
the arrays, so both children hold the same bytes and each library finds
the caches as the other does (torch alone on 16 MB kept them in L3 and
took 0.36 ms for the sum against 1.04-1.27 beside another 16 MB). numpy's
figure from each child is printed: it shows how far the machine moved
between the two, and the torch* column takes that move out (torch's
ratio times numpy's beside ordo over numpy's beside torch); a torch
target is judged on it. (One 1-thread run at 01:20: max over 4M floats,
ordo 1.304 ms and torch 0.883, numpy 1.417 beside ordo and 0.902 beside
torch: 0.68x as timed, 1.06x with the move out.)

A case (bench/kernel_cases/*.py, each module's CASES) gives the inputs and
one callable per library; every library gets the same inputs. ordo and
numpy run in turn, `repeats` times after a warm-up, and each figure is the
median time of one call. ordo's call traces the op, runs the step and waits for
it (inputs are device data beforehand), so its figure includes tracing and
the cache-hit compile: a case whose op is cheap chains `inner` ops in one
call on every library. The ratio is numpy's time over ordo's (above 1:
ordo is faster), or torch's for a case numpy has no form of (convolutions:
`reference="torch"`); the target is a minimum ratio. A case with a
`torch_target` also has torch's time over ordo's as a target."""

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
    torch_target: Optional[float] = None  # minimum torch_time / ordo_time, when numpy is the reference

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


def measure_torch_and_numpy(case, threads, repeats):
    import torch

    torch.set_num_threads(threads)
    arrays = inputs_of(case)
    tensors = [torch.tensor(a) for a in arrays]  # copies, as ordo.tensor makes
    runs = {"torch": lambda: case.torch(*tensors)}
    if case.numpy is not None:
        runs["numpy"] = lambda: case.numpy(*arrays)
    return median_call_seconds(runs, repeats)


def machine_limits(threads, repeats):
    """This machine's limits at `threads` (what the figures compare with),
    as a line: memcpy's bandwidth on one thread (bytes read + written per
    second, 64 MiB: past every cache) and the best float32 GFLOP/s of
    OpenBLAS's sgemm at 2048 (through numpy)."""
    import numpy as np

    source = np.ones(16 * 1024 * 1024, dtype=np.float32)
    target = np.empty_like(source)
    a = np.ones((2048, 2048), dtype=np.float32)
    times = median_call_seconds({"copy": lambda: np.copyto(target, source), "sgemm": lambda: a @ a},
                                max(3, repeats // 3))
    copy_gbs = 2 * source.nbytes / times["copy"] / 1e9
    gflops = 2 * 2048 ** 3 / times["sgemm"] / 1e9
    return (f"-- {threads} thread(s): memcpy {copy_gbs:.1f} GB/s (one thread, read + write), "
            f"sgemm 2048 {gflops:.0f} GFLOP/s (OpenBLAS, {threads} thread(s))")


def selected_cases(pattern):
    return [case for case in all_cases() if not pattern or pattern in case.name]


def serve(threads, repeats, library):
    """A child: reads requests on stdin, one a line, and answers each with
    a JSON line: "ready" once its library is loaded ({}), "limits" (the
    machine's, as a line of text), or a case's name (its median seconds;
    {} for a case it has no form of, or without torch). ordo's child loads
    ordo at its first case."""
    cases = {case.name: case for case in all_cases()}
    if library == "torch":
        try:
            importlib.import_module("torch")
        except ImportError:
            library = None
    for line in sys.stdin:
        request = line.rstrip("\n")
        if request == "ready":
            answer = {}
        elif request == "limits":
            answer = {"limits": machine_limits(threads, repeats)}
        elif library == "ordo":
            answer = measure_ordo_and_numpy(cases[request], repeats)
        elif library == "torch" and cases[request].torch is not None:
            answer = measure_torch_and_numpy(cases[request], threads, repeats)
        else:
            answer = {}
        print(json.dumps(answer), flush=True)


class Child:
    """A serving child process of one library at one thread count."""

    def __init__(self, threads, repeats, library):
        env = dict(os.environ, ORDO_NUM_DEVICES="1", ORDO_KERNEL_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   PYTHONPATH=str(ROOT / "python"))
        command = [sys.executable, __file__, "--serve", library, "--threads", str(threads),
                   "--repeats", str(repeats)]
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, request):
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"kernel_bench: a child ended at '{request}' (exit {self.process.wait()})")
        return json.loads(answer)

    def close(self):
        self.process.stdin.close()
        if self.process.wait() != 0:
            raise SystemExit(f"kernel_bench: a child failed (exit {self.process.returncode})")


def judged(ratio, target):
    """The target and whether the ratio meets it, as two columns."""
    if target is None:
        return f"{'':>9} {'':<6}"
    return f"{f'>= {target:.2f}x':>9} {'MET' if ratio >= target else 'MISSED':<6}"


def milliseconds(seconds):
    return f"{'-':>10}" if seconds is None else f"{seconds * 1e3:10.3f}"


def torch_ratios(times, beside_torch):
    """torch's time over ordo's as timed, and as timed with numpy's moves
    taken out: numpy ran the same call beside each of them, so the ratio of
    its two times is how far the machine moved between the two children."""
    torch_ratio = beside_torch.get("torch", float("nan")) / times["ordo"]
    if "numpy" in times and "numpy" in beside_torch:
        return torch_ratio, torch_ratio * times["numpy"] / beside_torch["numpy"]
    return torch_ratio, torch_ratio


def print_row(case, threads, times, beside_torch):
    torch_ratio, steadied = torch_ratios(times, beside_torch)
    ratio = times["numpy"] / times["ordo"] if case.reference == "numpy" else torch_ratio
    numpy_threads = threads if case.numpy_threads_follow else 1
    print(f"{case.name:<44} {threads:>3} {numpy_threads:>3} {milliseconds(times['ordo'])} "
          f"{milliseconds(times.get('numpy'))} {milliseconds(beside_torch.get('numpy'))} "
          f"{milliseconds(beside_torch.get('torch'))} {ratio:7.2f}x {judged(ratio, case.target)} "
          f"{torch_ratio:6.2f}x {steadied:7.2f}x {judged(steadied, case.torch_target)}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--serve", choices=("ordo", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("filter", nargs="?", default="", help="only cases whose name contains this")
    args = parser.parse_args()
    if args.serve:
        serve(int(args.threads), args.repeats, args.serve)
        return
    print(f"{'case':<44} {'thr':>3} {'np':>3} {'ordo ms':>10} {'numpy ms':>10} {'numpy ms':>10} {'torch ms':>10} "
          f"{'ratio':>8} {'target':>9} {'':<6} {'torch':>7} {'torch*':>8} {'target':>9}")
    print("(thr: ordo's and torch's threads and OpenBLAS's; np: the threads numpy used; "
          "ratio: numpy ms / ordo ms, or torch ms / ordo ms where numpy has no form (conv);\n"
          " torch: torch ms / ordo ms, torch timed in a process of its own, in turn with numpy (the second numpy ms);\n"
          " torch*: the same times numpy's two ms, the machine's move between the processes taken out)",
          flush=True)
    for threads in (int(t) for t in args.threads.split(",")):
        torch_child, ordo_child = Child(threads, args.repeats, "torch"), Child(threads, args.repeats, "ordo")
        torch_child.ask("ready")
        print(ordo_child.ask("limits")["limits"], flush=True)
        for case in selected_cases(args.filter):
            beside_torch = torch_child.ask(case.name)
            print_row(case, threads, ordo_child.ask(case.name), beside_torch)
        torch_child.close()
        ordo_child.close()


if __name__ == "__main__":
    main()
