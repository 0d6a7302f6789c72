"""A long training-like loop on 4 devices, watching the process's memory.

    PYTHONPATH=python /usr/bin/python3 bench/soak.py [--program P] [--steps N] [--bound-mib M]

(scripts/soak.sh runs both programs after a build.)
- training: each device runs, per step, what issue 11's user ran: a
  matmul, an add, a coalesced all_reduce of a list and mark_step; every
  100 steps it also reads a value back, as a loop that logs its loss does.
  The state is carried from step to step (x becomes the mean of the
  reduced sums), so each graph reads the last one's results.
- run-ahead: issue 39's loop, g = w @ ones + 1, all_reduce of [g],
  w.copy_(w - g * 1e-6), mark_step, in which only device 0 reads a value,
  at step 2,000 and at the last: nothing but mark_step's bound on running
  ahead (ordo.set_max_steps_ahead) keeps the devices' queued steps, and so
  the memory, from growing (before the bound: +42-46 MiB over 30,000 steps).

At checkpoint steps, device 0 waits for its device and prints the resident
set size (VmRSS of /proc/self/status) and glibc's heap figures (mallinfo2:
bytes in use and bytes free inside the heap). It fails (exit status 1) when
the RSS grew more than --bound-mib after step 1,000, the warm-up."""

import argparse
import ctypes
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import ordo  # noqa: E402

WARMUP_STEPS = 1000
DEFAULT_CHECKPOINTS = (1000, 10000, 40000, 100000)
READ_EVERY = 100
MIB = 1 << 20


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap_figures():
    """(bytes in use, bytes free) in glibc's heaps (main and thread arenas),
    or None where mallinfo2 is missing (glibc before 2.33)."""
    libc = ctypes.CDLL(None)
    mallinfo2 = getattr(libc, "mallinfo2", None)
    if mallinfo2 is None:
        return None
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd, info.fordblks


def rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def report(step, started, rows):
    rss = rss_bytes()
    heap = heap_figures()
    rows.append((step, rss))
    heap_text = "" if heap is None else f"  heap in use {heap[0] / MIB:7.2f} MiB, free {heap[1] / MIB:6.2f} MiB"
    print(f"step {step:>7}: RSS {rss / MIB:7.2f} MiB{heap_text}  ({time.monotonic() - started:6.1f} s)",
          flush=True)


def train(index, steps, size, checkpoints, started, rows):
    world = ordo.world_size()
    # A contraction (spectral radius about 0.5) keeps x bounded however many
    # steps run.
    w = ordo.randn([size, size], seed=index) * (0.5 / size ** 0.5)
    b = ordo.randn([size, size], seed=100 + index)
    x = ordo.randn([size, size], seed=200 + index)
    for step in range(1, steps + 1):
        y = ordo.matmul(w, x)
        z = y + b
        reduced = ordo.all_reduce(ordo.REDUCE_SUM, [y, z], scale=1.0 / world)
        x = reduced[1]
        ordo.mark_step()
        if step % READ_EVERY == 0:
            loss = float(x.numpy()[0, 0])
            if loss != loss:
                raise RuntimeError(f"step {step}: x became NaN")
        if index == 0 and step in checkpoints:
            ordo.wait_device_ops([index])
            report(step, started, rows)


RUN_AHEAD_READS = (2000,)


def run_ahead(index, steps, size, checkpoints, started, rows):
    w = ordo.randn([size, size], seed=index) * 0.01
    ones = ordo.ones([size, 1])
    for step in range(1, steps + 1):
        g = ordo.matmul(w, ones) + 1
        ordo.all_reduce(ordo.REDUCE_SUM, [g])
        w.copy_(w - g * 1e-6)
        ordo.mark_step()
        if index == 0 and (step in RUN_AHEAD_READS or step == steps):
            value = float(w.numpy()[0, 0])
            if value != value:
                raise RuntimeError(f"step {step}: w became NaN")
        if index == 0 and step in checkpoints:
            report(step, started, rows)  # no wait: the bound alone holds the queue


PROGRAMS = {"training": train, "run-ahead": run_ahead}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=DEFAULT_CHECKPOINTS[-1])
    parser.add_argument("--size", type=int, default=64, help="the matrices are size x size float32")
    parser.add_argument("--bound-mib", type=float, default=5.0, help="allowed RSS growth after the warm-up")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--program", choices=sorted(PROGRAMS), default="training")
    args = parser.parse_args()
    if args.steps < WARMUP_STEPS:
        parser.error(f"--steps must be at least the warm-up, {WARMUP_STEPS}")

    checkpoints = {s for s in DEFAULT_CHECKPOINTS if s <= args.steps} | {args.steps}
    ordo.init(num_devices=args.devices)
    print(f"soak ({args.program}): {args.steps} steps on {args.devices} devices, {args.size}x{args.size} float32, "
          f"bound {args.bound_mib} MiB after step {WARMUP_STEPS}", flush=True)
    rows = []
    started = time.monotonic()
    ordo.spawn(PROGRAMS[args.program], args=(args.steps, args.size, checkpoints, started, rows))
    ordo.shutdown()

    warm = dict(rows)[WARMUP_STEPS]
    last_step, last = rows[-1]
    growth = (last - warm) / MIB
    verdict = "within" if growth <= args.bound_mib else "OVER"
    print(f"growth from step {WARMUP_STEPS} to {last_step}: {growth:+.2f} MiB "
          f"({verdict} the bound of {args.bound_mib} MiB)")
    return 0 if growth <= args.bound_mib else 1


if __name__ == "__main__":
    sys.exit(main())
