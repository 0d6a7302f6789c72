"""Generators of the tensor ops: each adds one instruction (and any fresh
inputs it needs) to the generator g and returns its index, or None when it
does not fit the values at hand. Every op ordo has is here (op_list.def):
elementwise (through functions, methods and Python operators, with
broadcasting, promotion and Python scalars), reductions, matmul, movement,
indexing, creation."""

import numpy as np

from . import values as V
from .generate import LONG_DIMS, MAX_NUMEL, arange_length, broadcast, numel

FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf")
NUMERIC_UNARY = ("neg", "abs", "relu")
UNARY_SYMBOL = {"neg": "-", "abs": "abs", "logical_not": "~"}
ARITHMETIC = ("add", "sub", "mul", "pow")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("logical_and", "logical_or")
SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "eq": "==", "ne": "!=", "lt": "<",
          "le": "<=", "gt": ">", "ge": ">=", "logical_and": "&", "logical_or": "|"}
REDUCTIONS = ("sum", "mean", "max", "min", "argmax")


def unary(g, x=None):
    x = g.pick() if x is None else x
    dtype = g.dtype_of(x)
    fn = g.rng.choice(FLOAT_UNARY + ("logical_not",) + (NUMERIC_UNARY if dtype != "bool" else ()))
    if fn in NUMERIC_UNARY:
        out = dtype
    elif fn == "logical_not":
        out = "bool"
    else:
        out = dtype if dtype in V.FLOATS else "float32"
    styles = ("fn", "method") + (("operator",) if fn in UNARY_SYMBOL else ())
    attrs = {"fn": fn, "style": g.rng.choice(styles), "symbol": UNARY_SYMBOL.get(fn)}
    return g.add("unary", (x,), attrs, out, g.shape_of(x))


def cast(g):
    x = g.pick()
    dtype = g.rng.choice(V.DTYPES)
    return g.add("cast", (x,), {"to": dtype, "style": g.rng.choice(("fn", "method"))}, dtype, g.shape_of(x))


# numpy scalars act like Python numbers of their kind (README), whatever
# their width: np.int64(5) next to an int32 tensor is an int32 5.
NUMPY_SCALAR_TYPES = {bool: (np.bool_,), int: (np.int16, np.int32, np.int64, np.uint8),
                      float: (np.float32, np.float64)}


def python_scalar(g, tensor_dtype):
    value = plain_scalar(g, tensor_dtype)
    if g.rng.random() < 0.15:
        make = g.rng.choice(NUMPY_SCALAR_TYPES[type(value)])
        if not isinstance(value, int) or isinstance(value, bool) or V.fits(value, make):
            return make(value)
    return value


def plain_scalar(g, tensor_dtype):
    r = g.rng.random()
    if r < 0.15:
        return g.rng.random() < 0.5
    if r < 0.18 and tensor_dtype in V.FLOATS:
        return g.rng.choice((2**70, -2**100, 2**63))  # README: a float tensor takes any int as a float
    if r < 0.55 and tensor_dtype in V.FLOATS:
        return V.random_float_scalar(g.rng, tensor_dtype)
    if r < 0.55 or tensor_dtype in V.INTS:
        if tensor_dtype in V.INTS and g.rng.random() < 0.1:
            return int(g.rng.choice(V.int_extremes(tensor_dtype)))
        return g.rng.randint(-5, 5)
    return V.random_float_scalar(g.rng, "float32")


def past_int32(g):
    """An int past int32's range but within int64's: compared with an int32
    tensor, it compares exactly (README). One past int64 is an
    OverflowError (gen_spmd.bad_number)."""
    return g.rng.choice((2**31, -2**31 - 1, 2**40, -2**40, 2**63 - 1))


def exponent_input(g, dtype, shape):
    """A fresh input for an integer exponent: non-negative values (x < 0
    becomes ~x = -x - 1, so that the extremes stay), since a negative one
    fails the graph (README: integer pow)."""
    i = g.input(dtype, shape)
    data = g.instrs[i].attrs["data"]
    g.instrs[i].attrs["data"] = [np.where(d < 0, ~d, d) for d in data]
    return i


def binary_fns(operand_dtype):
    fns = ("div", "maximum", "minimum") + COMPARISONS + LOGICAL
    return fns + (ARITHMETIC if operand_dtype != "bool" else ())


def binary_out(fn, operand_dtype):
    if fn in COMPARISONS or fn in LOGICAL:
        return "bool"
    if fn == "div":
        return operand_dtype if operand_dtype in V.FLOATS else "float32"
    return operand_dtype


def tensor_operand(g, shape, dtype):
    """A value of shape (an earlier one or a fresh input), of dtype unless
    an earlier value of that shape and another dtype is picked."""
    def accept(ins):
        return ins.shape == shape and (ins.dtype == dtype or g.rng.random() < 0.2)
    return g.pick(accept, lambda: g.input(dtype, shape))


def binary(g, a=None):
    a = g.pick() if a is None else a
    adt, ashape = g.dtype_of(a), g.shape_of(a)
    rng = g.rng
    if rng.random() < 0.3:
        return scalar_binary(g, a)
    r = rng.random()
    shape = ashape if r < 0.4 else g.partner(ashape) if r < 0.9 else ()
    dtype = adt if rng.random() < 0.6 else rng.choice(V.DTYPES)
    b = tensor_operand(g, shape, dtype)
    if rng.random() < 0.3:
        a, b = b, a
    operand = V.promote(g.dtype_of(a), g.dtype_of(b))
    fn = rng.choice(binary_fns(operand))
    if fn == "pow" and operand in V.INTS and g.dtype_of(b) in V.INTS:
        b = exponent_input(g, g.dtype_of(b), g.shape_of(b))
    styles = ("fn",) + (("operator",) if fn in SYMBOL else ()) + (("method",) if fn in ("maximum", "minimum") else ())
    attrs = {"fn": fn, "style": rng.choice(styles), "symbol": SYMBOL.get(fn)}
    if attrs["style"] == "operator" and rng.random() < 0.15:
        # A numpy array operand works as a tensor on either side (README),
        # in any byte order: an input's data goes in as the array.
        k = rng.choice([k for k, x in enumerate((a, b)) if g.instrs[x].op == "input"] or [None])
        if k is not None:
            attrs["numpy_operand"] = k
            attrs["byte_order"] = rng.choice(("=", ">"))
    return g.add("binary", (a, b), attrs, binary_out(fn, operand), broadcast(g.shape_of(a), g.shape_of(b)))


def scalar_binary(g, a):
    """a with a Python (or numpy) number, on either side."""
    adt, ashape = g.dtype_of(a), g.shape_of(a)
    rng = g.rng
    value = python_scalar(g, adt)
    operand = V.promote(adt, V.scalar_dtype(value, adt))
    fn = rng.choice(binary_fns(operand))
    if fn in COMPARISONS and adt == "int32" and rng.random() < 0.1:
        value = past_int32(g)
    first = fn in SYMBOL and rng.random() < 0.3
    number = V.python_number(value)
    if fn == "pow" and operand in V.INTS:
        if first and adt in V.INTS:
            a = exponent_input(g, adt, ashape)  # the tensor is the exponent
        elif not first and not isinstance(number, bool) and number < 0:
            if rng.random() < 0.5:
                return bad_integer_power(g, a, value)
            value = type(value)(~number)
    style = "operator" if fn in SYMBOL else "method"  # maximum and minimum
    attrs = {"fn": fn, "style": style, "symbol": SYMBOL.get(fn), "scalar": value, "scalar_first": first}
    return g.add("binary", (a,), attrs, binary_out(fn, operand), ashape)


def bad_integer_power(g, a, exponent):
    """An integer or bool tensor to a negative integer power: no value, a
    ValueError when traced (README: integer pow)."""
    attrs = {"fn": "pow", "style": "operator", "symbol": "**", "scalar": exponent, "scalar_first": False,
             "error": ValueError, "expect": "pow: integers to negative integer powers are not allowed"}
    return g.add("binary", (a,), attrs)


def chain(g):
    """A run of elementwise ops on one shape, each on the last one's result
    and a scalar, a row, a column or a value of the same shape: what fusion
    groups, and splits into rows where an operand broadcasts."""
    x = g.pick(lambda ins: len(ins.shape) >= 1 and numel(ins.shape) >= 128,
               lambda: g.input(g.rng.choice(V.FLOATS), g.fit((g.rng.choice((1, 2, 3, 4)), g.rng.choice(LONG_DIMS)))))
    for _ in range(g.rng.randint(2, 6)):
        shape = g.shape_of(x)
        step = binary(g, x) if g.rng.random() < 0.7 else unary(g, x)
        if step is None or g.shape_of(step) != shape:
            break
        x = step
    return x


def where(g):
    c = g.pick()
    cshape = g.shape_of(c)
    a = tensor_operand(g, g.partner(cshape), g.rng.choice(V.DTYPES))
    so_far = broadcast(cshape, g.shape_of(a))
    b = tensor_operand(g, g.partner(so_far), g.dtype_of(a) if g.rng.random() < 0.5 else g.rng.choice(V.DTYPES))
    shape = broadcast(cshape, g.shape_of(a), g.shape_of(b))
    if numel(shape) > MAX_NUMEL:
        return None
    attrs = {"fn": "where", "style": g.rng.choice(("fn", "module"))}
    return g.add("where", (c, a, b), attrs, V.promote(g.dtype_of(a), g.dtype_of(b)), shape)


def reduced_shape(shape, axes, keepdim):
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdim or d not in axes)


def reduction(g):
    x = g.pick()
    shape, dtype = g.shape_of(x), g.dtype_of(x)
    rank = len(shape)
    fn = g.rng.choice(REDUCTIONS)
    if rank == 0 or g.rng.random() < 0.25:
        axes, dims = list(range(rank)), None
    else:
        chosen = sorted(g.rng.sample(range(rank), g.rng.randint(1, rank)))
        dims = [d - rank if g.rng.random() < 0.3 else d for d in chosen]
        axes = chosen
    if fn in ("max", "min", "argmax") and any(shape[d] == 0 for d in axes):
        fn = g.rng.choice(("sum", "mean"))
    keepdim = g.rng.random() < 0.4
    out = {"sum": dtype if dtype in V.FLOATS else "int64", "mean": dtype if dtype in V.FLOATS else "float32",
           "max": dtype, "min": dtype, "argmax": "int64"}[fn]
    style = g.rng.choice(("fn", "method"))
    if style == "method" and dims is not None and len(dims) == 1 and g.rng.random() < 0.5:
        dims = dims[0]
    attrs = {"fn": fn, "dims": dims, "keepdim": keepdim, "style": style}
    return g.add("reduce", (x,), attrs, out, reduced_shape(shape, axes, keepdim))


def matmul_shape(a, b):
    batch = broadcast(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
    return tuple(batch) + ((a[-2],) if len(a) > 1 else ()) + ((b[-1],) if len(b) > 1 else ())


def matmul(g):
    rng = g.rng
    a = g.pick(lambda ins: len(ins.shape) >= 1 and ins.shape[-1] <= 64 and ins.dtype != "bool",
               lambda: g.input(rng.choice(V.NUMERIC), g.fit(g.shape(rng.randint(1, 3))[:-1] + (rng.randint(0, 9),))))
    ashape = g.shape_of(a)
    k, n = ashape[-1], rng.choice((0, 1, 2, 3, 5, 8))
    if len(ashape) <= 2:
        bshape = rng.choice(((k,), (k, n), (rng.randint(1, 3), k, n)))
    elif rng.random() < 0.4:
        bshape = rng.choice(((k,), (k, n)))
    else:
        bshape = g.partner(ashape[:-2]) + (k, n)
    bdtype = g.dtype_of(a) if rng.random() < 0.6 else rng.choice(V.NUMERIC)
    b = tensor_operand(g, tuple(bshape), bdtype)
    shape = matmul_shape(g.shape_of(a), g.shape_of(b))
    if numel(shape) > MAX_NUMEL:
        return None
    attrs = {"style": rng.choice(("fn", "operator", "method")), "symbol": "@"}
    return g.add("matmul", (a, b), attrs, V.promote(g.dtype_of(a), g.dtype_of(b)), shape)


def factor_shape(g, count):
    if count == 0:
        dims = [g.rng.choice((0, 1, 2, 3)) for _ in range(g.rng.randint(1, 4))]
        dims[g.rng.randrange(len(dims))] = 0
        return dims
    rank = g.rng.randint(0 if count == 1 else 1, 4)
    dims = [1] * max(rank, 1)
    n, p = count, 2
    while n > 1:
        while n % p == 0:
            dims[g.rng.randrange(len(dims))] *= p
            n //= p
        p += 1
        if p * p > n and n > 1:
            dims[g.rng.randrange(len(dims))] *= n
            n = 1
    return dims if rank else []


def reshape(g):
    x = g.pick()
    dims = factor_shape(g, numel(g.shape_of(x)))
    shown = list(dims)
    if dims and numel(dims) != 0 and g.rng.random() < 0.3:
        shown[g.rng.randrange(len(dims))] = -1
    style = g.rng.choice(("fn", "method", "varargs", "view"))
    return g.add("reshape", (x,), {"shape": shown, "style": style}, g.dtype_of(x), tuple(dims))


def permute(g):
    x = g.pick()
    shape = g.shape_of(x)
    rank = len(shape)
    perm = list(range(rank))
    g.rng.shuffle(perm)
    dims = [d - rank if g.rng.random() < 0.3 else d for d in perm]
    return g.add("permute", (x,), {"dims": dims, "style": g.rng.choice(("fn", "method"))}, g.dtype_of(x),
                 tuple(shape[d] for d in perm))


def ranked(g):
    """A value of rank 1 or more and its shape as a list, or (None, None)."""
    x = g.pick(lambda ins: len(ins.shape) >= 1)
    shape = list(g.shape_of(x))
    return (x, shape) if shape else (None, None)


def transpose(g):
    x, shape = ranked(g)
    if x is None:
        return None
    d0, d1 = g.axis(len(shape)), g.axis(len(shape))
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return g.add("transpose", (x,), {"dim0": d0, "dim1": d1, "style": g.rng.choice(("fn", "method"))},
                 g.dtype_of(x), tuple(shape))


def slice_(g):
    x, shape = ranked(g)
    if x is None:
        return None
    axis = g.axis(len(shape))
    size = shape[axis]
    start, stop = (g.rng.randint(-size - 2, size + 2) for _ in range(2))
    step = g.rng.choice((1, 1, 2, 3))
    shape[axis] = len(range(*slice(start, stop, step).indices(size)))
    return g.add("slice", (x,), {"axis": axis, "start": start, "stop": stop, "step": step}, g.dtype_of(x),
                 tuple(shape))


def random_index(g, shape):
    """Integers and slices for a prefix of the dims, sometimes an Ellipsis
    and more for a suffix."""
    def one(size):
        if g.rng.random() < 0.3 and size > 0:
            return g.rng.randrange(-size, size)
        bounds = [g.rng.choice((None, g.rng.randint(-size - 1, size + 1))) for _ in range(2)]
        return slice(bounds[0], bounds[1], g.rng.choice((None, 1, 2, 3)))
    rank = len(shape)
    prefix = g.rng.randint(0, rank)
    index = [one(shape[d]) for d in range(prefix)]
    if g.rng.random() < 0.2:
        suffix = g.rng.randint(0, rank - prefix)
        index += [Ellipsis] + [one(shape[d]) for d in range(rank - suffix, rank)]
    return tuple(index) if len(index) != 1 or g.rng.random() < 0.5 else index[0]


def getitem(g):
    x, shape = ranked(g)
    if x is None:
        return None
    shape = tuple(shape)
    index = random_index(g, shape)
    out = np.zeros(shape, np.int8)[index].shape
    return g.add("getitem", (x,), {"index": index}, g.dtype_of(x), tuple(out))


def concat(g):
    x, shape = ranked(g)
    if x is None:
        return None
    axis = g.axis(len(shape))
    parts, dtype = [x], g.dtype_of(x)
    for _ in range(g.rng.randint(0, 2)):
        if g.rng.random() < 0.25:
            parts.append(x)
            continue
        other = list(shape)
        other[axis] = g.rng.choice((0, 1, 2, 3))
        parts.append(tensor_operand(g, g.fit(other), dtype if g.rng.random() < 0.6 else g.rng.choice(V.DTYPES)))
        if g.shape_of(parts[-1]) != tuple(other):
            parts.pop()
    out = list(shape)
    out[axis] = sum(g.shape_of(p)[axis] for p in parts)
    if numel(out) > MAX_NUMEL:
        return None
    for p in parts:
        dtype = V.promote(dtype, g.dtype_of(p))
    return g.add("concat", parts, {"axis": axis, "style": g.rng.choice(("fn", "module"))}, dtype, tuple(out))


def broadcast_to(g):
    x = g.pick()
    shape = g.shape_of(x)
    target = [g.rng.choice((1, 2, 3)) for _ in range(g.rng.randint(0, 2))]
    target += [g.rng.choice((0, 1, 2, 4)) if d == 1 and g.rng.random() < 0.6 else d for d in shape]
    if numel(target) > MAX_NUMEL:
        return None
    return g.add("broadcast_to", (x,), {"shape": target, "style": g.rng.choice(("fn", "method"))}, g.dtype_of(x),
                 tuple(target))


def index_select(g):
    x, shape = ranked(g)
    if x is None:
        return None
    axis = g.axis(len(shape))
    size = shape[axis]
    length = g.rng.randint(0, 6) if size else 0
    shape[axis] = length
    if numel(shape) > MAX_NUMEL:
        return None
    index = g.index_input(g.rng.choice(V.INTS), (length,), size)
    return g.add("index_select", (x, index), {"axis": axis, "style": g.rng.choice(("fn", "method"))},
                 g.dtype_of(x), tuple(shape))


def gather(g):
    x, shape = ranked(g)
    if x is None:
        return None
    shape = tuple(shape)
    axis = g.axis(len(shape))
    size = shape[axis]
    index_shape = tuple((g.rng.randint(0, 5) if size else 0) if d == axis % len(shape) else g.rng.randint(0, n)
                        for d, n in enumerate(shape))
    index = g.index_input(g.rng.choice(V.INTS), index_shape, size)
    return g.add("gather", (x, index), {"axis": axis, "style": g.rng.choice(("fn", "method"))}, g.dtype_of(x),
                 index_shape)


def one_hot(g):
    depth = g.rng.randint(0, 6)
    shape = g.shape(g.rng.randint(0, 2))
    if depth == 0:
        shape = shape[:-1] + (0,) if shape else (0,)
    if numel(shape) * depth > MAX_NUMEL:
        return None
    indices = g.index_input(g.rng.choice(V.INTS), shape, depth, low=0)
    dtype = g.rng.choice(V.DTYPES + (None,))
    return g.add("one_hot", (indices,), {"depth": depth, "dtype": dtype}, dtype or "int64", shape + (depth,))


def copy_into(g):
    """t = ordo.zeros(shape, dtype); t.copy_(x): a cast and a broadcast."""
    x = g.pick()
    shape = g.shape_of(x)
    target = tuple(g.rng.choice((1, 3)) for _ in range(g.rng.randint(0, 1))) + shape
    dtype = g.rng.choice(V.DTYPES)
    return g.add("copy_", (x,), {"shape": target, "dtype": dtype}, dtype, target)


def assign(g):
    """x.copy_(y) on a value x of the program: x's handle now holds y cast
    and broadcast to x's dtype and shape (in place, as torch_xla programs
    update parameters). x's old value is gone: no later op reads it."""
    x = g.pick()
    y = tensor_operand(g, g.partner(g.shape_of(x), grow=False), g.rng.choice(V.DTYPES))
    if y == x:
        return None
    root = alias_root(g.instrs, x)
    g.reassigned.update(i for i in g.values(operands=False) if alias_root(g.instrs, i) == root)
    return g.add("assign_", (x, y), {}, g.dtype_of(x), g.shape_of(x))


def alias_root(instrs, i):
    """The value whose handle value i shares: a cast to its own dtype and
    x[()] return their operand's handle, as torch's x.to(x.dtype) returns
    x, and so does x.copy_(y); every other op makes a new one."""
    ins = instrs[i]
    if ins.op == "cast" and ins.attrs["to"] == instrs[ins.args[0]].dtype or \
            ins.op == "getitem" and ins.attrs["index"] == () or ins.op == "assign_":
        return alias_root(instrs, ins.args[0])
    return i


def full(g):
    dtype = g.rng.choice(V.DTYPES)
    r = g.rng.random()
    if dtype in V.FLOATS:
        value = V.random_float_scalar(g.rng, dtype) if r < 0.8 else g.rng.randint(-3, 3)
    elif dtype == "bool":
        value = g.rng.choice((True, False, 0, 1, 0.5, 0.0))
    else:
        value = g.rng.randint(-7, 7) if r < 0.7 else int(g.rng.choice(V.int_extremes(dtype)))
    fn = g.rng.choice(("full", "full", "zeros", "ones"))
    attrs = {"fn": fn, "shape": list(g.shape()), "dtype": dtype}
    if fn == "full":
        attrs["value"] = value
    return g.add("full", (), attrs, dtype, tuple(attrs["shape"]))


def arange(g):
    rng = g.rng
    integral = rng.random() < 0.6
    if integral:
        start, step = rng.randint(-10, 10), rng.choice((1, 2, 3, -1, -2))
    else:
        start, step = rng.choice((0.0, -1.5, 2.25, 0.1)), rng.choice((0.5, -0.25, 0.3, 1.0, 0.1))
    stop = start + step * rng.randint(-2, 40) + (rng.choice((0, 0.5)) if not integral else 0)
    dtype = rng.choice((None, "float32", "float64") + (("int32", "int64") if integral else ()))
    out = dtype or ("int64" if integral else "float32")
    return g.add("arange", (), {"start": start, "stop": stop, "step": step, "dtype": dtype}, out,
                 (arange_length(start, stop, step),))


def rand(g):
    fn = g.rng.choice(("rand", "randn"))
    dtype = g.rng.choice(V.FLOATS)
    attrs = {"fn": fn, "shape": list(g.shape()), "seed": g.rng.randrange(1 << 32), "dtype": dtype}
    return g.add("rand", (), attrs, dtype, tuple(attrs["shape"]))


def poisoned_index_op(g):
    """An index_select, gather or one_hot whose index is out of range, or an
    integer pow with a negative exponent: its graph must fail when it runs,
    whatever the schedule."""
    kind = g.rng.choice(("index_select", "gather", "one_hot", "pow"))
    if kind == "pow":  # a negative exponent inside an integer tensor (README: integer pow)
        dtype = g.rng.choice(V.INTS)
        base = g.input(dtype, (g.rng.randint(1, 5),))
        exponent = exponent_input(g, dtype, g.shape_of(base))
        flat = g.instrs[exponent].attrs["data"][0]
        flat[g.rng.randrange(flat.size)] = g.rng.choice((-1, -2, np.iinfo(dtype).min))
        attrs = {"fn": "pow", "style": g.rng.choice(("fn", "operator")), "symbol": "**"}
        return g.add("binary", (base, exponent), attrs, dtype, g.shape_of(base))
    if kind == "one_hot":
        depth = g.rng.randint(1, 5)
        indices = g.index_input("int64", (g.rng.randint(1, 5),), depth, low=0)
        g.instrs[indices].attrs["data"][0][g.rng.randrange(g.shape_of(indices)[0])] = g.rng.choice((depth, -1))
        return g.add("one_hot", (indices,), {"depth": depth, "dtype": None}, "int64",
                     g.shape_of(indices) + (depth,))
    x = g.input("float32", (3, g.rng.randint(1, 4)))
    size = g.shape_of(x)[0]
    index_shape = (g.rng.randint(1, 4),) if kind == "index_select" else (g.rng.randint(1, 4), g.shape_of(x)[1])
    index = g.index_input(g.rng.choice(V.INTS), index_shape, size)
    flat = g.instrs[index].attrs["data"][0].reshape(-1)
    flat[g.rng.randrange(flat.size)] = g.rng.choice((size, size + 7, -size - 1))
    out = index_shape if kind == "gather" else (index_shape[0], g.shape_of(x)[1])
    return g.add(kind, (x, index), {"axis": 0, "style": "fn"}, "float32", out)


WEIGHTS = {
    chain: 8, unary: 14, cast: 5, binary: 26, where: 5, reduction: 9, matmul: 4, reshape: 5, permute: 3, transpose: 2,
    slice_: 3, getitem: 3, concat: 3, broadcast_to: 3, index_select: 2, gather: 2, one_hot: 1, copy_into: 2, assign: 2,
    full: 2, arange: 1, rand: 1,
}
assert all(d < MAX_NUMEL for d in LONG_DIMS)
