"""Runs one instruction with ordo, through the call style it names: ordo._C
functions, the ordo module, Tensor methods or Python operators."""

import operator

import numpy as np

import ordo
from ordo import _C

OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
             "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge, "&": operator.and_, "|": operator.or_, "@": operator.matmul}
UNARY_OPERATORS = {"-": operator.neg, "abs": abs, "~": operator.invert}


def _unary(a, xs, device):
    x, = xs
    if a["style"] == "operator":
        return UNARY_OPERATORS[a["symbol"]](x)
    if a["style"] == "method":
        return getattr(x, a["fn"])()
    return getattr(_C, a["fn"])(x)


def _binary(a, xs, device):
    if "scalar" in a:
        x, = xs
        if a["style"] == "method":
            return getattr(x, a["fn"])(a["scalar"])
        op = OPERATORS[a["symbol"]]
        return op(a["scalar"], x) if a["scalar_first"] else op(x, a["scalar"])
    x, y = xs
    if a["style"] == "operator":
        return OPERATORS[a["symbol"]](x, y)
    if a["style"] == "method":
        return getattr(x, a["fn"])(y)
    return getattr(_C, a["fn"])(x, y)


def _reduce(a, xs, device):
    x, = xs
    if a["style"] == "method":
        return getattr(x, a["fn"])(dim=a["dims"], keepdim=a["keepdim"])
    dims = a["dims"] if a["dims"] is not None else []
    return getattr(_C, a["fn"])(x, [dims] if isinstance(dims, int) else dims, a["keepdim"])


def _reshape(a, xs, device):
    x, = xs
    style, shape = a["style"], a["shape"]
    if style == "method":
        return x.reshape(shape)
    if style == "varargs":
        return x.reshape(*shape)
    if style == "view":
        return x.view(shape)
    return _C.reshape(x, shape)


def _fresh_handles(xs):
    """New handles of the same values (a reshape to the same shape is a
    view): in-place collectives rebind the handles they get, and the
    program's values must keep theirs."""
    return [_C.reshape(x, list(x.shape)) for x in xs]


def _all_reduce_list(a, xs, device):
    handles = _fresh_handles(xs)
    return ordo.all_reduce(a["reduce"], handles, scale=a["scale"], groups=a["groups"])


def _collective_broadcast(a, xs, device):
    return ordo.collective_broadcast(_fresh_handles(xs), root_ordinal=a["root"], groups=a["groups"])


def _copy_into(a, xs, device):
    target = ordo.zeros(a["shape"], dtype=a["dtype"], device=device)
    return target.copy_(xs[0])


def _full(a, xs, device):
    if a["fn"] == "full":
        return ordo.full(a["shape"], a["value"], a["dtype"], device=device)
    return getattr(ordo, a["fn"])(a["shape"], a["dtype"], device=device)


def _style(method, fn):
    def run(a, xs, device):
        return method(a, xs) if a.get("style") == "method" else fn(a, xs)
    return run


APPLY = {
    "input": lambda a, xs, device: ordo.tensor(a["data"][device], device=device),
    "unary": _unary,
    "binary": _binary,
    "cast": _style(lambda a, xs: xs[0].astype(a["to"]), lambda a, xs: _C.cast(xs[0], np.dtype(a["to"]))),
    "where": lambda a, xs, device: (ordo.where if a["style"] == "module" else _C.where)(*xs),
    "reduce": _reduce,
    "matmul": lambda a, xs, device: (xs[0] @ xs[1] if a["style"] == "operator" else xs[0].matmul(xs[1])
                                     if a["style"] == "method" else _C.matmul(*xs)),
    "reshape": _reshape,
    "permute": _style(lambda a, xs: xs[0].permute(*a["dims"]), lambda a, xs: _C.permute(xs[0], a["dims"])),
    "transpose": _style(lambda a, xs: xs[0].transpose(a["dim0"], a["dim1"]),
                        lambda a, xs: _C.transpose(xs[0], a["dim0"], a["dim1"])),
    "slice": lambda a, xs, device: _C.slice(xs[0], a["axis"], a["start"], a["stop"], a["step"]),
    "getitem": lambda a, xs, device: xs[0][a["index"]],
    "concat": lambda a, xs, device: (ordo.cat(xs, dim=a["axis"]) if a["style"] == "module"
                                     else _C.concat(list(xs), a["axis"])),
    "broadcast_to": _style(lambda a, xs: xs[0].broadcast_to(a["shape"]),
                           lambda a, xs: _C.broadcast_to(xs[0], a["shape"])),
    "index_select": _style(lambda a, xs: xs[0].index_select(a["axis"], xs[1]),
                           lambda a, xs: _C.index_select(xs[0], a["axis"], xs[1])),
    "gather": _style(lambda a, xs: xs[0].gather(a["axis"], xs[1]), lambda a, xs: _C.gather(xs[0], a["axis"], xs[1])),
    "one_hot": lambda a, xs, device: (ordo.one_hot(xs[0], a["depth"]) if a["dtype"] is None
                                      else ordo.one_hot(xs[0], a["depth"], a["dtype"])),
    "copy_": _copy_into,
    "assign_": lambda a, xs, device: xs[0].copy_(xs[1]),
    "full": _full,
    "arange": lambda a, xs, device: ordo.arange(a["start"], a["stop"], a["step"], dtype=a["dtype"], device=device),
    "rand": lambda a, xs, device: getattr(ordo, a["fn"])(a["shape"], seed=a["seed"], dtype=a["dtype"],
                                                         device=device),
    "all_reduce": lambda a, xs, device: ordo.all_reduce(a["reduce"], xs[0], scale=a["scale"], groups=a["groups"]),
    "all_reduce_list": _all_reduce_list,
    "all_gather": lambda a, xs, device: ordo.all_gather(xs[0], dim=a["dim"], groups=a["groups"]),
    "reduce_scatter": lambda a, xs, device: ordo.reduce_scatter(a["reduce"], xs[0], a["scale"], a["dim"],
                                                                a["shard_count"], groups=a["groups"]),
    "all_to_all": lambda a, xs, device: ordo.all_to_all(xs[0], a["split"], a["concat"], a["count"],
                                                        groups=a["groups"]),
    "collective_permute": lambda a, xs, device: ordo.collective_permute(xs[0], a["pairs"]),
    "collective_broadcast": _collective_broadcast,
    "item": lambda a, xs, device: xs[0][a["index"]],
}


def apply(ins, xs, device):
    return APPLY[ins.op](ins.attrs, xs, device)
