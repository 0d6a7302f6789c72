"""Shrinks a failing program to a smaller one that still fails: keep only
what the failing value depends on, drop the mark_step cuts, and replace
values by inputs holding what ordo computed for them (so that the data
reaching the failing op stays the same)."""

import dataclasses

import ordo

from .program import Instr, ancestors, restrict
from .run import FuzzFailure


def restart():
    """A fresh runtime: a failed SPMD program leaves its devices failed."""
    ordo.shutdown()
    ordo.init(4)


def failure_of(program, check):
    try:
        check(program)
    except FuzzFailure as failure:
        return failure
    finally:
        if program.devices > 1:
            restart()
    return None


def _focused(program, index):
    outputs = [index] if program.instrs[index].dtype is not None and not program.instrs[index].is_list else []
    keep = ancestors(program, [index] + ([program.failing] if program.failing is not None else []))
    return restrict(dataclasses.replace(program, outputs=outputs or program.outputs), keep)


def _as_input(program, i, values):
    ins = program.instrs[i]
    data = [values[d][i] for d in range(len(values))]
    instrs = list(program.instrs)
    instrs[i] = Instr("input", (), {"data": data}, ins.dtype, ins.shape)
    candidate = dataclasses.replace(program, instrs=instrs)
    return restrict(candidate, ancestors(candidate, candidate.outputs + [k for k, x in enumerate(instrs)
                                                                        if "error" in x.attrs]))


def candidates(program, failure):
    if failure.index is not None and failure.index < len(program.instrs):
        yield _focused(program, failure.index)
    if program.cuts:
        yield dataclasses.replace(program, cuts=[])
    if len(program.outputs) > 1:
        for i in program.outputs:
            yield restrict(dataclasses.replace(program, outputs=[i]), ancestors(program, [i]))
    values = failure.values
    if values:
        for i in reversed(range(len(program.instrs))):
            ins = program.instrs[i]
            if ins.op != "input" and ins.dtype is not None and not ins.is_list and all(i in v for v in values) \
                    and i != program.failing:
                yield _as_input(program, i, values)


def size(program):
    return sum(1 for ins in program.instrs if ins.op != "input"), len(program.instrs)


def shrink(program, failure, check, budget=200):
    """The smallest failing program found within budget checks, and its
    failure."""
    attempts = 0
    progress = True
    while progress and attempts < budget:
        progress = False
        for candidate in candidates(program, failure):
            if size(candidate) >= size(program):
                continue
            attempts += 1
            found = failure_of(candidate, check)
            if found is not None:
                program, failure, progress = candidate, found, True
                break
            if attempts >= budget:
                break
    return program, failure
