"""Runs many programs: seeds first_seed, first_seed + 1, ...; stops at the
first failure, shrinks it and reports it with the seed to replay."""

import collections
import sys
import time

import ordo

from .generate import generate
from .run import FuzzFailure, check
from .shrink import restart, shrink


def kinds(program):
    """The ops a program exercises, for the coverage summary."""
    out = []
    for ins in program.instrs:
        name = ins.attrs.get("fn", ins.op) if ins.op in ("unary", "binary", "reduce", "full", "rand") else ins.op
        out.append(f"{name} (must fail)" if "error" in ins.attrs else name)
    if program.failing is not None:
        out.append("failing graph")
    if program.devices > 1:
        out.append("spmd program")
    if program.cuts:
        out.append("mark_step inside")
    return out


def report(failure, shrunk=None):
    text = [f"FUZZ FAILURE (seed {failure.program.seed})", str(failure)]
    if shrunk is not None and shrunk.program.instrs != failure.program.instrs:
        text += ["", "shrunk to:", str(shrunk)]
    return "\n".join(text)


def run_programs(first_seed, count, time_limit=None, progress=None, shrinking=True, seed_file=None):
    """Checks count programs (fewer if time_limit seconds pass first).
    Returns (programs checked, Counter of op kinds, failure report or None)."""
    covered = collections.Counter()
    start = time.monotonic()
    checked = 0
    for seed in range(first_seed, first_seed + count):
        if time_limit is not None and time.monotonic() - start > time_limit:
            break
        if seed_file:
            with open(seed_file, "w") as f:
                f.write(f"{seed}\n")
        program = generate(seed)
        covered.update(kinds(program))
        try:
            check(program)
        except FuzzFailure as failure:
            if program.devices > 1:
                restart()
            shrunk = None
            if shrinking:
                _, shrunk = shrink(program, failure, check)
            return checked, covered, report(failure, shrunk)
        checked += 1
        if progress and checked % progress == 0:
            print(f"  {checked} programs, {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return checked, covered, None


def start_runtime():
    ordo.init(4)
    ordo.set_collective_timeout(30.0, warn_seconds=10.0)
    ordo._C.set_current_device(0)
