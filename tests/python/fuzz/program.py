"""A fuzz program: a list of instructions, each making one value from
earlier ones, and its listing (what a failure prints, to replay it)."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Instr:
    """One value of the program. op names the ordo call (see apply.py);
    args are indices of earlier instructions; dtype and shape are what the
    generator predicts ordo gives (a tuple of each for an op that returns a
    list). An instruction with dtype None is a call that must fail when
    traced and leaves no value."""
    op: str
    args: tuple = ()
    attrs: dict = dataclasses.field(default_factory=dict)
    dtype: object = None
    shape: object = None

    @property
    def is_list(self):
        return isinstance(self.dtype, tuple)


@dataclasses.dataclass
class Program:
    seed: int
    instrs: list
    outputs: list          # the values the program keeps (the others are temporaries)
    cuts: list = dataclasses.field(default_factory=list)  # mark_step after these
    devices: int = 1       # above 1: every device runs it (SPMD) on its own data
    failing: int = None    # an instruction that must fail when the graph runs

    def users(self):
        used = set()
        for ins in self.instrs:
            used.update(ins.args)
        return used


def _array_text(a):
    if a.size <= 12:
        return np.array2string(a, separator=", ", threshold=12).replace("\n", "")
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f":
            finite = a[np.isfinite(a)]
            span = f"{finite.min():.3g}..{finite.max():.3g}" if finite.size else "none finite"
            return f"<{a.size} values, {span}, {int(np.isnan(a).sum())} nan, {int(np.isinf(a).sum())} inf>"
        return f"<{a.size} values, {a.min()}..{a.max()}>"


def _call(ins, names):
    a = ins.attrs
    x = [names[i] for i in ins.args]
    style = a.get("style", "fn")
    op = ins.op
    if op == "input":
        data = a["data"]
        shown = _array_text(data[0]) if len(data) == 1 else "per device: " + " | ".join(_array_text(d) for d in data)
        return f"ordo.tensor({shown}, dtype={ins.dtype})  # shape {ins.shape}"
    if op in ("unary", "binary", "where"):
        fn = a["fn"]
        operands = list(x)
        if "scalar" in a:
            shown = repr(a["scalar"])
            operands.insert(0 if a["scalar_first"] else 1, f"({shown})" if shown.startswith("-") else shown)
        if style == "operator":
            if len(operands) == 1:
                return f"{a['symbol']}({operands[0]})" if a["symbol"] == "abs" else f"{a['symbol']}{operands[0]}"
            return f"{operands[0]} {a['symbol']} {operands[1]}"
        if style == "method":
            return f"{operands[0]}.{fn}({', '.join(operands[1:])})"
        return f"ordo._C.{fn}({', '.join(operands)})"
    if op == "item":
        return f"{x[0]}[{a['index']}]"
    details = ", ".join(f"{k}={v!r}" for k, v in a.items() if k not in ("style", "error", "data"))
    suffix = f"  # must raise {a['error'].__name__}" if "error" in a else ""
    return f"{op}({', '.join(x + ([details] if details else []))}){suffix}"


def listing(program):
    """The program as readable, numbered lines, with each value's dtype and
    shape and where the steps are cut."""
    kind = f"SPMD on {program.devices} devices" if program.devices > 1 else "1 device"
    lines = [f"program seed={program.seed} ({kind}), outputs "
             + ", ".join(f"v{i}" for i in program.outputs)]
    if program.failing is not None:
        lines.append(f"  v{program.failing} must fail when the graph runs (an index out of range)")
    names = {i: f"v{i}" for i in range(len(program.instrs))}
    for i, ins in enumerate(program.instrs):
        lhs = f"v{i} = " if ins.dtype is not None else "      "
        typ = f"  -> {ins.dtype} {ins.shape}" if ins.dtype is not None and ins.op != "input" else ""
        lines.append(f"  {lhs}{_call(ins, names)}{typ}")
        if i in program.cuts:
            lines.append("  ordo.mark_step()")
    return "\n".join(lines)


def ancestors(program, roots):
    keep, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        if i in keep:
            continue
        keep.add(i)
        stack.extend(program.instrs[i].args)
    return keep


def restrict(program, keep):
    """The program of the instructions in keep (closed under args), with
    indices renumbered."""
    order = sorted(keep)
    new_index = {old: new for new, old in enumerate(order)}
    instrs = [dataclasses.replace(program.instrs[i], args=tuple(new_index[a] for a in program.instrs[i].args))
              for i in order]
    return dataclasses.replace(
        program, instrs=instrs,
        outputs=[new_index[i] for i in program.outputs if i in new_index],
        cuts=[new_index[i] for i in program.cuts if i in new_index],
        failing=new_index.get(program.failing) if program.failing is not None else None)
