"""Generators of collectives (SPMD programs: every device runs the same
program on its own data) and of calls that must fail when traced (a clear
ValueError or TypeError naming the op, and nothing recorded)."""

import numpy as np

from . import values as V
from .generate import MAX_NUMEL, WORLD, numel

# Replica groups: every device, reordered ranks, pairs, and groups of one.
GROUPS = (None, [list(range(WORLD))], [list(reversed(range(WORLD)))], [[0, 1], [2, 3]], [[0, 2], [1, 3]],
          [[1, 0], [3, 2]], [[d] for d in range(WORLD)])


def group_size(groups):
    return WORLD if groups is None else len(groups[0])


def reduce_types(dtype):
    if dtype == "bool":
        return ("and", "or")
    if dtype in V.FLOATS:
        return ("sum", "mul", "min", "max")
    return ("sum", "mul", "min", "max", "and", "or")


def scaled(g, x, reduce):
    """A scale for reducing x, and the value to reduce. Integers are scaled
    in double and converted back, saturating (as a cast does): half the
    time on a small fresh input, whose results stay in range."""
    dtype = g.dtype_of(x)
    if reduce in ("and", "or") or dtype == "bool" or g.rng.random() < 0.5:
        return 1.0, x
    if dtype in V.INTS and g.rng.random() < 0.5:
        x = g.input(dtype, g.shape_of(x), "small")
    return g.rng.choice((0.5, 2.0, -1.0, 0.25, 1 / 3, 3.0e9)), x


def all_reduce(g):
    x = g.pick()
    reduce = g.rng.choice(reduce_types(g.dtype_of(x)))
    scale, x = scaled(g, x, reduce)
    groups = g.rng.choice(GROUPS)
    if g.rng.random() < 0.3:
        kind = "bool" if g.dtype_of(x) == "bool" else "float" if g.dtype_of(x) in V.FLOATS else "int"
        y = g.pick(lambda ins: (ins.dtype == "bool") == (kind == "bool") and (ins.dtype in V.FLOATS) == (kind == "float"),
                   lambda: g.input(g.dtype_of(x), g.shape()))
        if reduce in ("and", "or") and g.dtype_of(y) in V.FLOATS:
            return None
        attrs = {"reduce": reduce, "scale": scale, "groups": groups}
        listed = g.add("all_reduce_list", (x, y), attrs, (g.dtype_of(x), g.dtype_of(y)), (g.shape_of(x), g.shape_of(y)))
        for k in range(2):
            g.add("item", (listed,), {"index": k}, g.dtype_of(listed)[k], g.shape_of(listed)[k])
        return listed
    return g.add("all_reduce", (x,), {"reduce": reduce, "scale": scale, "groups": groups}, g.dtype_of(x),
                 g.shape_of(x))


def large_all_reduce(g):
    """An all_reduce of more than 8 MiB: outputs that large are streamed,
    and float sums take their own loop (data_movement.cc). No other op
    takes it as an operand (Generator.values)."""
    dtype = g.rng.choice(("float32", "float32", "float64", "int32"))
    count = (8 << 20) // np.dtype(dtype).itemsize + g.rng.choice((0, 1, 7, 16, 33))
    x = g.input(dtype, (count,), "small" if dtype == "int32" else None)
    reduce = g.rng.choice(("sum", "sum", "max", "mul"))
    scale = 1.0 if g.rng.random() < 0.5 else g.rng.choice((0.5, -1.0, 1 / 3))
    attrs = {"reduce": reduce, "scale": scale, "groups": g.rng.choice(GROUPS)}
    return g.add("all_reduce", (x,), attrs, dtype, (count,))


def all_gather(g):
    x = g.pick(lambda ins: len(ins.shape) >= 1)
    shape = list(g.shape_of(x))
    if not shape:
        return None
    groups = g.rng.choice(GROUPS)
    dim = g.axis(len(shape))
    shape[dim] *= group_size(groups)
    if numel(shape) > MAX_NUMEL:
        return None
    return g.add("all_gather", (x,), {"dim": dim, "groups": groups}, g.dtype_of(x), tuple(shape))


def splittable(g, parts):
    """A value whose dim splits into parts, and that dim."""
    def fresh():
        shape = list(g.shape(g.rng.randint(1, 3)))
        shape[g.rng.randrange(len(shape))] = parts * g.rng.randint(0, 3)
        return g.input(g.rng.choice(V.DTYPES), g.fit(shape))
    x = g.pick(lambda ins: any(d % parts == 0 for d in ins.shape), fresh)
    dims = [d for d, n in enumerate(g.shape_of(x)) if n % parts == 0]
    return x, g.rng.choice(dims)


def reduce_scatter(g):
    groups = g.rng.choice(GROUPS)
    parts = group_size(groups)
    x, dim = splittable(g, parts)
    reduce = g.rng.choice(reduce_types(g.dtype_of(x)))
    scale, x = scaled(g, x, reduce)
    shape = list(g.shape_of(x))
    shape[dim] //= parts
    attrs = {"reduce": reduce, "scale": scale, "dim": dim, "shard_count": parts, "groups": groups}
    return g.add("reduce_scatter", (x,), attrs, g.dtype_of(x), tuple(shape))


def all_to_all(g):
    groups = g.rng.choice(GROUPS)
    parts = group_size(groups)
    x, split = splittable(g, parts)
    shape = list(g.shape_of(x))
    concat = g.rng.randrange(len(shape))
    shape[split] //= parts
    shape[concat] *= parts
    attrs = {"split": split, "concat": concat, "count": parts, "groups": groups}
    return g.add("all_to_all", (x,), attrs, g.dtype_of(x), tuple(shape))


def collective_permute(g):
    x = g.pick()
    targets = g.rng.sample(range(WORLD), g.rng.randint(0, WORLD))
    pairs = [[g.rng.randrange(WORLD), t] for t in targets]
    return g.add("collective_permute", (x,), {"pairs": pairs}, g.dtype_of(x), g.shape_of(x))


def collective_broadcast(g):
    xs = [g.pick() for _ in range(g.rng.randint(1, 2))]
    attrs = {"root": g.rng.randrange(WORLD), "groups": g.rng.choice(GROUPS)}
    listed = g.add("collective_broadcast", xs, attrs, tuple(g.dtype_of(x) for x in xs),
                   tuple(g.shape_of(x) for x in xs))
    for k in range(len(xs)):
        g.add("item", (listed,), {"index": k}, g.dtype_of(listed)[k], g.shape_of(listed)[k])
    return listed


COLLECTIVE_WEIGHTS = {all_reduce: 8, large_all_reduce: 0.2, all_gather: 3, reduce_scatter: 3, all_to_all: 2, collective_permute: 2,
                      collective_broadcast: 2}


# ---- Calls that must fail when traced. ----

def _bad(g, op, args, attrs, error, expect):
    attrs = dict(attrs, error=error, expect=expect)
    return g.add(op, args, attrs)


def _any_rank(g, rank):
    return g.pick(lambda ins: len(ins.shape) >= rank, lambda: g.input(g.rng.choice(V.DTYPES), g.shape(rank)))


def bad_broadcast(g):
    x = g.pick(lambda ins: any(d >= 2 for d in ins.shape), lambda: g.input("float32", (2, 3)))
    shape = list(g.shape_of(x))
    d = max(k for k, n in enumerate(shape) if n >= 2)
    shape[d] += 1
    y = g.input(g.rng.choice(V.NUMERIC), shape[d:])
    fn = g.rng.choice(("add", "mul", "eq", "maximum"))
    return _bad(g, "binary", (x, y), {"fn": fn, "style": "fn"}, ValueError, "do not broadcast")


def bad_bool_arithmetic(g):
    x = g.pick(lambda ins: ins.dtype == "bool", lambda: g.input("bool", g.shape()))
    if g.rng.random() < 0.5:
        fn = g.rng.choice(("neg", "abs", "relu"))
        return _bad(g, "unary", (x,), {"fn": fn, "style": "fn"}, TypeError, fn)
    y = g.input("bool", g.shape_of(x))
    fn = g.rng.choice(("add", "sub", "mul", "pow"))
    return _bad(g, "binary", (x, y), {"fn": fn, "style": "fn"}, TypeError, "bool")


def bad_reshape(g):
    x = g.pick()
    if g.rng.random() < 0.5:
        return _bad(g, "reshape", (x,), {"shape": [numel(g.shape_of(x)) + 1], "style": "fn"}, ValueError, "reshape")
    return _bad(g, "reshape", (x,), {"shape": [-1, -1], "style": "fn"}, ValueError, "reshape")


def bad_axes(g):
    x = _any_rank(g, 1)
    rank = len(g.shape_of(x))
    if g.rng.random() < 0.3:
        dims = list(range(rank)) + [0]
        return _bad(g, "permute", (x,), {"dims": dims, "style": "fn"}, ValueError, "permute")
    fn = g.rng.choice(("sum", "mean", "max", "argmax"))
    dims = [0, -rank] if g.rng.random() < 0.5 else [rank]
    return _bad(g, "reduce", (x,), {"fn": fn, "dims": dims, "keepdim": False, "style": "fn"}, ValueError, fn)


def bad_empty_reduction(g):
    x = g.pick(lambda ins: 0 in ins.shape, lambda: g.input("float32", (0, 3)))
    axis = g.shape_of(x).index(0)
    fn = g.rng.choice(("max", "min", "argmax"))
    return _bad(g, "reduce", (x,), {"fn": fn, "dims": [axis], "keepdim": False, "style": "fn"}, ValueError, fn)


def bad_indexing(g):
    x = _any_rank(g, 1)
    r = g.rng.random()
    if r < 0.25:
        return _bad(g, "slice", (x,), {"axis": 0, "start": 0, "stop": 1, "step": g.rng.choice((0, -1))}, ValueError,
                    "step")
    if r < 0.5:
        index = g.input(g.rng.choice(("float32", "bool")), (2,))
        return _bad(g, "index_select", (x, index), {"axis": 0, "style": "fn"}, TypeError, "index_select")
    if r < 0.75:
        index = g.input("int64", (1, 1))
        return _bad(g, "index_select", (x, index), {"axis": 0, "style": "fn"}, ValueError, "index_select")
    index = g.input("int64", (1,) * (len(g.shape_of(x)) + 1))
    return _bad(g, "gather", (x, index), {"axis": 0, "style": "fn"}, ValueError, "gather")


def bad_getitem(g):
    x = _any_rank(g, 1)
    shape = g.shape_of(x)
    r = g.rng.random()
    if r < 0.4:
        return _bad(g, "getitem", (x,), {"index": (0,) * (len(shape) + 1)}, IndexError, "too many indices")
    if r < 0.7:
        return _bad(g, "getitem", (x,), {"index": shape[0]}, IndexError, "out of range")
    return _bad(g, "getitem", (x,), {"index": slice(None, None, -1)}, ValueError, "negative step")


def bad_matmul(g):
    r = g.rng.random()
    if r < 0.4:
        a, b = g.input("float32", (2, 3)), g.input("float32", (4, 2))
        return _bad(g, "matmul", (a, b), {"style": "fn"}, ValueError, "matmul")
    if r < 0.7:
        a, b = g.input("float32", ()), g.input("float32", (3,))
        return _bad(g, "matmul", (a, b), {"style": "fn"}, ValueError, "matmul")
    a, b = g.input("bool", (2, 2)), g.input("bool", (2, 2))
    return _bad(g, "matmul", (a, b), {"style": "fn"}, TypeError, "matmul")


def bad_shapes(g):
    x = _any_rank(g, 1)
    r = g.rng.random()
    if r < 0.4:
        y = g.input(g.dtype_of(x), g.shape_of(x) + (1,))
        return _bad(g, "concat", (x, y), {"axis": 0, "style": "fn"}, ValueError, "concat")
    shape = list(g.shape_of(x))
    if r < 0.7 and any(d >= 2 for d in shape):
        shape[shape.index(max(shape))] += 1
        return _bad(g, "broadcast_to", (x,), {"shape": shape, "style": "fn"}, ValueError, "broadcast_to")
    return _bad(g, "broadcast_to", (x,), {"shape": [-1] + shape, "style": "fn"}, ValueError, "broadcast_to")


def bad_creation(g):
    r = g.rng.random()
    if r < 0.3:
        indices = g.input("int64", (2,))
        return _bad(g, "one_hot", (indices,), {"depth": -1, "dtype": None}, ValueError, "one_hot")
    if r < 0.5:
        indices = g.input("float32", (2,))
        return _bad(g, "one_hot", (indices,), {"depth": 3, "dtype": None}, TypeError, "one_hot")
    if r < 0.7:
        return _bad(g, "arange", (), {"start": 0, "stop": 4, "step": 0, "dtype": None}, ValueError, "arange")
    if r < 0.85:
        return _bad(g, "arange", (), {"start": 0, "stop": 4, "step": 0.5, "dtype": "int64"}, ValueError, "arange")
    return _bad(g, "arange", (), {"start": 0, "stop": 4, "step": 1, "dtype": "bool"}, TypeError, "arange")


def bad_collective(g):
    x = _any_rank(g, 1)
    r = g.rng.random()
    if r < 0.3:
        y = g.input(g.rng.choice(V.FLOATS), g.shape_of(x))
        attrs = {"reduce": g.rng.choice(("and", "or")), "scale": 1.0, "groups": None}
        return _bad(g, "all_reduce", (y,), attrs, TypeError, "all_reduce")
    if r < 0.5:
        attrs = {"reduce": "sum", "scale": float("nan"), "groups": None}
        return _bad(g, "all_reduce", (g.input("float32", (2,)),), attrs, ValueError, "scale")
    if r < 0.7:
        y = g.input("float32", (WORLD + 1,))
        attrs = {"reduce": "sum", "scale": 1.0, "dim": 0, "shard_count": WORLD, "groups": None}
        return _bad(g, "reduce_scatter", (y,), attrs, ValueError, "reduce_scatter")
    if r < 0.85:
        return _bad(g, "all_gather", (g.input("float32", ()),), {"dim": 0, "groups": None}, ValueError, "all_gather")
    return _bad(g, "collective_permute", (x,), {"pairs": [[0, 1], [2, 1]]}, ValueError, "collective_permute")


BAD_CALLS = (bad_broadcast, bad_bool_arithmetic, bad_reshape, bad_axes, bad_empty_reduction, bad_indexing,
             bad_getitem, bad_matmul, bad_shapes, bad_creation)


def bad_call(g):
    calls = BAD_CALLS + ((bad_collective,) if g.devices > 1 else ())
    return g.rng.choice(calls)(g)
