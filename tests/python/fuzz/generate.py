"""Random programs from a seed: the generator's state, shapes, inputs, and
the choice of ops. The ops themselves are in gen_ops.py (tensor ops) and
gen_spmd.py (collectives, and calls that must fail when traced).

The generator predicts every value's dtype and shape from README's rules
(numpy broadcasting, torch-like promotion), independently of ordo; the
runner checks ordo's dtype and shape against it."""

import math
import random

import numpy as np

from . import values as V
from .program import Instr, Program

SPMD_FRACTION = 0.08     # of programs: every device runs it, with collectives
FAILING_FRACTION = 0.03  # of single-device programs: an index out of range
CUT_FRACTION = 0.15      # of programs: graphs cut in the middle (mark_step, or reading a value)
WORLD = 4                # devices of an SPMD program (the runtime's default)
MAX_NUMEL = 4096         # per value: programs stay fast
SMALL_DIMS = (2, 3, 4, 5, 7, 8, 9, 16, 17)
# Rows near fusion's minimum row (128) and its tile (1024), and lengths
# whose vectorized loops end in a scalar tail.
LONG_DIMS = (127, 128, 129, 130, 255, 256, 1023, 1024, 1025, 1031, 2049)


def numel(shape):
    return int(np.prod(shape, dtype=np.int64))


def broadcast(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


class Generator:
    def __init__(self, seed, devices):
        self.rng = random.Random(seed)
        self.seed = seed
        self.devices = devices
        self.instrs = []
        self.reassigned = set()  # handles an assign_ rebound: their old value is gone
        self.profile = self.rng.choices(("plain", "special", "nans"), weights=(4, 4, 2))[0]
        self.long_dims = self.rng.random() < 0.3

    # ---- Values. ----

    def add(self, op, args=(), attrs=None, dtype=None, shape=None):
        self.instrs.append(Instr(op, tuple(args), attrs or {}, dtype, shape))
        return len(self.instrs) - 1

    def dtype_of(self, i):
        return self.instrs[i].dtype

    def shape_of(self, i):
        return self.instrs[i].shape

    def values(self, accept=None, operands=True):
        """The values accept takes; as operands only those of at most
        MAX_NUMEL elements (not the large all_reduce's)."""
        return [i for i, ins in enumerate(self.instrs)
                if ins.dtype is not None and not ins.is_list and (not operands or numel(ins.shape) <= MAX_NUMEL)
                and i not in self.reassigned and (accept is None or accept(ins))]

    def pick(self, accept=None, make=None):
        """An earlier value (recent ones first, so that ops form chains, as
        fusion groups them) that accept takes, else a fresh one from make
        (default: a fresh input)."""
        candidates = self.values(accept)
        if candidates and self.rng.random() < 0.85:
            if self.rng.random() < 0.6:
                return self.rng.choice(candidates[-3:])
            return self.rng.choice(candidates)
        if make is not None:
            return make()
        return self.input(self.rng.choice(V.DTYPES), self.shape())

    def input(self, dtype, shape, profile=None):
        if profile is None:
            profile = self.profile if self.rng.random() < 0.7 else "plain"
        data = [V.random_data(self.rng, dtype, shape, profile) for _ in range(self.devices)]
        return self.add("input", attrs={"data": data}, dtype=dtype, shape=tuple(shape))

    def index_input(self, dtype, shape, size, low=None):
        """Indices into an axis of `size`, Python-style (negative ones count
        from the end) unless low says otherwise."""
        low = -size if low is None else low
        assert size > low or numel(shape) == 0, "no index fits"
        draw = np.random.default_rng(self.rng.getrandbits(63))
        data = [draw.integers(low, max(size, low + 1), size=shape).astype(dtype) for _ in range(self.devices)]
        return self.add("input", attrs={"data": data}, dtype=dtype, shape=tuple(shape))

    # ---- Shapes. ----

    def dim(self):
        r = self.rng.random()
        if r < 0.07:
            return 0
        if r < 0.3:
            return 1
        return self.rng.choice(SMALL_DIMS)

    def shape(self, rank=None):
        if rank is None:
            rank = self.rng.choices((0, 1, 2, 3, 4), weights=(2, 4, 4, 2, 1))[0]
        dims = [self.dim() for _ in range(rank)]
        if self.long_dims and rank and self.rng.random() < 0.6:
            dims[self.rng.randrange(rank)] = self.rng.choice(LONG_DIMS)
        return self.fit(dims)

    def fit(self, dims):
        """dims, with the largest halved until the shape holds at most
        MAX_NUMEL elements."""
        dims = list(dims)
        while numel(dims) > MAX_NUMEL:
            k = dims.index(max(dims))
            dims[k] //= 2
        return tuple(dims)

    def partner(self, shape, grow=True):
        """A shape that broadcasts with shape: leading dims dropped, dims
        set to 1, and unless grow is false, leading 1s added or a 1 of
        shape widened."""
        drop = self.rng.randint(0, len(shape))
        out = []
        for d in shape[drop:]:
            r = self.rng.random()
            if r < 0.3:
                out.append(1)
            elif d == 1 and r < 0.45 and grow:
                out.append(self.rng.choice((2, 3)))
            else:
                out.append(d)
        if self.rng.random() < 0.15 and grow:
            out = [1] * self.rng.randint(1, 2) + out
        if numel(broadcast(shape, tuple(out))) > MAX_NUMEL:
            return tuple(shape)
        return tuple(out)

    def axis(self, rank):
        a = self.rng.randrange(rank)
        return a - rank if self.rng.random() < 0.3 else a

    # ---- Programs. ----

    def op(self):
        from . import gen_ops, gen_spmd
        table = list(gen_ops.WEIGHTS.items())
        if self.devices > 1:
            table += list(gen_spmd.COLLECTIVE_WEIGHTS.items())
        table.append((gen_spmd.bad_call, 3))
        make, = self.rng.choices([m for m, _ in table], weights=[w for _, w in table])
        for _ in range(10):
            if make(self) is not None:
                return
        gen_ops.unary(self)

    def outputs(self):
        used = set()
        for ins in self.instrs:
            used.update(ins.args)
        values = self.values(operands=False)
        sinks = [i for i in values if i not in used]
        others = [i for i in values if i in used and self.rng.random() < 0.25]
        return sorted(set(sinks + others)) or values[-1:]


def generate(seed):
    """The program of a seed: the same seed gives the same program."""
    rng = random.Random(seed)
    devices = WORLD if rng.random() < SPMD_FRACTION else 1
    failing = devices == 1 and rng.random() < FAILING_FRACTION
    g = Generator(rng.getrandbits(64), devices)
    for _ in range(1 + int(rng.expovariate(1 / 6))):
        g.op()
    if not g.values():
        g.input("float32", (3,))
    failing_op = None
    if failing:
        from . import gen_ops
        failing_op = gen_ops.poisoned_index_op(g)
    outputs = g.outputs()
    if failing_op is not None and failing_op not in outputs:
        outputs = sorted(outputs + [failing_op])
    cuts = []
    if not failing and len(g.instrs) > 2 and rng.random() < CUT_FRACTION:
        cuts = sorted({rng.randrange(len(g.instrs) - 1) for _ in range(rng.randint(1, 3))})
    return Program(seed, g.instrs, outputs, cuts, devices, failing_op)


def arange_length(start, stop, step):
    span = (float(stop) - float(start)) / float(step)
    return int(math.ceil(span)) if span > 0 else 0
