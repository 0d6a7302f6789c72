"""The expected value of an instruction and its check (reference.py says
what the checks mean), from the values ordo gave its operands on this
device and, for a collective, on every device."""

import numpy as np

from . import reference as R
from . import values as V
from .gen_spmd import WORLD


def scalar_operand(ins, x):
    value = ins.attrs["scalar"]
    return np.array(value, V.scalar_dtype(value, V.name(x.dtype)))


def operand_dtype(ins, args):
    dtypes = [V.name(a.dtype) for a in args]
    out = dtypes[0]
    for d in dtypes[1:]:
        out = V.promote(out, d)
    return out


def elementwise(ins, args):
    a = ins.attrs
    if ins.op == "unary":
        return R.unary(a["fn"], args[0], ins.dtype)
    if ins.op == "cast":
        return R.cast(args[0], a["to"]), "exact"
    if ins.op == "where":
        c, x, y = args
        dtype = V.promote(V.name(x.dtype), V.name(y.dtype))
        return np.where(R.cast(c, "bool"), R.cast(x, dtype), R.cast(y, dtype)), "exact"
    if "scalar" in a:
        s = scalar_operand(ins, args[0])
        args = [s, args[0]] if a["scalar_first"] else [args[0], s]
    return R.binary(a["fn"], args[0], args[1], operand_dtype(ins, args), ins.dtype)


def movement(ins, args):
    a = ins.attrs
    x = args[0]
    if ins.op == "reshape":
        return x.reshape(ins.shape), "bits"
    if ins.op == "permute":
        return np.transpose(x, [d % x.ndim for d in a["dims"]]), "bits"
    if ins.op == "transpose":
        return np.swapaxes(x, a["dim0"], a["dim1"]), "bits"
    if ins.op == "slice":
        axis = a["axis"] % x.ndim
        return x[(slice(None),) * axis + (slice(a["start"], a["stop"], a["step"]),)], "bits"
    if ins.op == "getitem":
        return np.asarray(x[a["index"]]), "bits"
    if ins.op == "concat":
        parts = [R.cast(p, ins.dtype) for p in args]
        same = all(V.name(p.dtype) == ins.dtype for p in args)
        return np.concatenate(parts, axis=a["axis"]), "bits" if same else "exact"
    if ins.op == "broadcast_to":
        return np.broadcast_to(x, ins.shape), "bits"
    if ins.op == "copy_":
        return np.broadcast_to(R.cast(x, ins.dtype), ins.shape), "exact"
    if ins.op == "assign_":
        return np.broadcast_to(R.cast(args[1], ins.dtype), ins.shape), "exact"
    if ins.op == "index_select":
        return np.take(x, args[1].astype(np.int64), axis=a["axis"]), "bits"
    if ins.op == "gather":
        index = args[1].astype(np.int64)
        axis = a["axis"] % x.ndim
        window = x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(index.shape))]
        return np.take_along_axis(window, index, axis), "bits"
    if ins.op == "one_hot":
        return (x[..., None] == np.arange(a["depth"])).astype(ins.dtype), "exact"
    return None


def creation(ins):
    a = ins.attrs
    if ins.op == "full":
        value = {"zeros": 0, "ones": 1}.get(a["fn"], a.get("value"))
        return np.full(ins.shape, R.full_value(value, ins.dtype)), "exact"
    if ins.op == "arange":
        return R.arange(a["start"], a["step"], ins.shape[0], ins.dtype), "exact"
    if ins.op == "rand":
        return R.rand(a["fn"], a["seed"], ins.shape, ins.dtype)
    return None


# ---- Collectives. ----

def group_of(groups, device):
    if groups is None:
        return list(range(WORLD))
    return next(list(g) for g in groups if device in g)


def fold(reduce, values):
    def combine(acc, v):
        if reduce in ("min", "max"):
            better = (v < acc) if reduce == "min" else (v > acc)
            return np.where(better | R.isnan(v), v, acc)
        if acc.dtype == np.bool_:
            return (acc | v) if reduce in ("sum", "or") else (acc & v)
        return {"sum": np.add, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or}[reduce](acc, v)
    acc = values[0]
    with np.errstate(all="ignore"):
        for v in values[1:]:
            acc = combine(acc, v)
    return acc


def scaled(acc, scale):
    """data_movement.cc apply_scale: static_cast<T>(x * scale) in double."""
    if scale == 1.0 or acc.dtype == np.bool_:
        return acc
    with np.errstate(all="ignore"):
        product = acc.astype(np.float64) * scale
    return R.cast(product, V.name(acc.dtype)) if acc.dtype.kind == "i" else product.astype(acc.dtype)


def reduced(a, operands_of, device, k=0):
    group = group_of(a["groups"], device)
    return scaled(fold(a["reduce"], [operands_of(q)[k] for q in group]), a["scale"])


def collective(ins, operands_of, device):
    a = ins.attrs
    group = group_of(a.get("groups"), device)
    rank = group.index(device)
    if ins.op == "all_reduce":
        return reduced(a, operands_of, device), "exact"
    if ins.op == "all_reduce_list":
        return [(reduced(a, operands_of, device, k), "exact") for k in range(len(ins.args))]
    if ins.op == "all_gather":
        return np.concatenate([operands_of(q)[0] for q in group], axis=a["dim"]), "bits"
    if ins.op == "reduce_scatter":
        whole = reduced(a, operands_of, device)
        return np.split(whole, len(group), axis=a["dim"])[rank], "exact"
    if ins.op == "all_to_all":
        pieces = [np.split(operands_of(q)[0], len(group), axis=a["split"])[rank] for q in group]
        return np.concatenate(pieces, axis=a["concat"]), "bits"
    if ins.op == "collective_permute":
        sources = [s for s, t in a["pairs"] if t == device]
        x = operands_of(device)[0]
        return (operands_of(sources[0])[0] if sources else np.zeros_like(x)), "bits"
    if ins.op == "collective_broadcast":
        root = a["root"]
        mine = operands_of(device)
        if root in group:
            return [(v, "bits") for v in operands_of(root)]
        return [(np.zeros_like(v), "bits") for v in mine]
    return None


def expected(ins, args, operands_of, device):
    """(value, check) of ins, or a list of them for an op with a list of
    results. args are this device's operand values; operands_of(d) gives
    device d's."""
    if ins.op in ("unary", "binary", "cast", "where"):
        return elementwise(ins, args)
    if ins.op == "reduce":
        a = ins.attrs
        return R.reduction(a["fn"], args[0], a["dims"], a["keepdim"], ins.dtype, ins.shape)
    if ins.op == "matmul":
        return R.matmul(args[0], args[1], ins.dtype)
    for result in (movement(ins, args) if args else None, creation(ins) if not args else None,
                   collective(ins, operands_of, device) if "groups" in ins.attrs or "pairs" in ins.attrs else None):
        if result is not None:
            return result
    raise AssertionError(f"no reference for {ins.op}")
