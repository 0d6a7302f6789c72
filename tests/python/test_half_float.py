"""bfloat16 and float16 (issue 37): conversions bitwise equal to torch 1.13's
over every 16-bit pattern and a dense float32 sample; ops computed in
float32 and rounded once, within one 16-bit rounding step of torch's
float32 result; reductions and matmul the same whatever the thread count;
collectives summed in float32 in rank order and rounded once; numpy
interop (numpy has no bfloat16: .numpy() gives float32)."""

import numpy as np
import pytest
import torch

import ordo
from kernel_threads import digests_with_kernel_threads

HALVES = {"bfloat16": (ordo.bfloat16, torch.bfloat16), "float16": (ordo.float16, torch.float16)}


def every_pattern():
    return np.arange(65536, dtype=np.uint32).astype(np.uint16)


def float_sample():
    """Every high half with the low bits that decide rounding to bfloat16
    and float16 (ties, their neighbours, all ones), and random patterns:
    NaNs, infinities, subnormals and zeros of both signs among them."""
    high = np.arange(65536, dtype=np.uint32) << 16
    lows = np.array([0, 0x7fff, 0x8000, 0x8001, 0xffff, 0x0fff, 0x1000, 0x1001, 0x3000], dtype=np.uint32)
    dense = (high[:, None] | lows[None, :]).ravel()
    rng = np.random.default_rng(37)
    return np.concatenate([dense, rng.integers(0, 2**32, 1 << 18, dtype=np.uint32)]).view(np.float32)


def torch_bits(values, torch_dtype):
    return torch.from_numpy(values).to(torch_dtype).view(torch.int16).numpy().view(np.uint16)


def ordo_bits(t):
    return t._raw_bits()


@pytest.mark.parametrize("name", HALVES)
def test_narrowing_float32_matches_torch_bitwise(name):
    ordo_dtype, torch_dtype = HALVES[name]
    sample = float_sample()
    got = ordo_bits(ordo.tensor(sample).astype(ordo_dtype))
    np.testing.assert_array_equal(got, torch_bits(sample, torch_dtype))


@pytest.mark.parametrize("name", HALVES)
def test_widening_every_pattern_matches_torch_bitwise(name):
    ordo_dtype, torch_dtype = HALVES[name]
    patterns = every_pattern()
    x = ordo._C._from_raw_bits(patterns, ordo_dtype, 0)
    want = torch.from_numpy(patterns.view(np.int16)).view(torch_dtype).float().numpy()
    np.testing.assert_array_equal(x.astype(np.float32).numpy().view(np.uint32), want.view(np.uint32))
    # Back from float32: every pattern but a NaN is its own round trip.
    back = ordo_bits(x.astype(np.float32).astype(ordo_dtype))
    np.testing.assert_array_equal(back, torch_bits(want, torch_dtype))


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("other", [np.float64, np.int32, np.int64, np.bool_])
def test_casts_through_float32_match_torch(name, other):
    ordo_dtype, torch_dtype = HALVES[name]
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.standard_normal(5000) * 1e3, [0.0, -0.0, 65519.9, 65520.0, 2.0**-25, 3 * 2.0**-26]])
    if other == np.float64:
        values = np.concatenate([values, [1e40, -1e40, 3.0000001, 1 + 2.0**-8 + 2.0**-30]])  # double rounding
    if other != np.bool_ and other != np.float64:
        values = np.concatenate([values, [2**24 + 1, -(2**24 + 3), 2**31 - 1 if other == np.int32 else 2**40 + 1]])
    values = values.astype(other)
    got = ordo_bits(ordo.tensor(values).astype(ordo_dtype))
    np.testing.assert_array_equal(got, torch_bits(values, torch_dtype))
    if other == np.float64 or other == np.bool_:
        return
    # To integers: finite values in range truncate toward zero, as torch.
    finite = np.clip(values.astype(np.float32), -3e4, 3e4)
    half = ordo.tensor(finite).astype(ordo_dtype)
    want = torch.from_numpy(finite).to(torch_dtype).to(torch.int64).numpy()
    np.testing.assert_array_equal(half.astype(other).numpy(), want.astype(other))


def bf16_step(reference, torch_dtype):
    """The spacing of torch_dtype's values at each reference value: the
    largest error one rounding may make, twice over."""
    ref = torch.from_numpy(np.atleast_1d(np.abs(reference)).astype(np.float32))
    rounded = ref.to(torch_dtype).float()
    eps = torch.finfo(torch_dtype).eps
    tiny = torch.finfo(torch_dtype).tiny
    return (torch.maximum(rounded, ref) * eps + tiny).numpy()


UNARY = {
    "exp": (ordo.exp, torch.exp), "tanh": (ordo.tanh, torch.tanh), "sigmoid": (ordo.sigmoid, torch.sigmoid),
    "relu": (ordo.relu, torch.relu), "sqrt": (lambda x: ordo.sqrt(ordo.abs(x)), lambda x: torch.sqrt(x.abs())),
    "neg": (lambda x: -x, lambda x: -x),
}


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_are_within_one_rounding_of_torch_float32(name, op):
    ordo_dtype, torch_dtype = HALVES[name]
    x32 = np.random.default_rng(2).standard_normal(3000).astype(np.float32) * 3
    x = ordo.tensor(x32).astype(ordo_dtype)
    exact = torch.from_numpy(x32).to(torch_dtype).float()  # the inputs as the 16-bit type holds them
    ordo_fn, torch_fn = UNARY[op]
    got = ordo_fn(x)
    assert got.dtype == ordo_dtype
    want = torch_fn(exact).numpy()
    np.testing.assert_array_less(np.abs(got.astype(np.float32).numpy() - want), bf16_step(want, torch_dtype) * 1.01)


@pytest.mark.parametrize("name", HALVES)
def test_a_chain_of_ops_is_rounded_once(name):
    ordo_dtype, torch_dtype = HALVES[name]
    x32 = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    x = ordo.tensor(x32).astype(ordo_dtype)
    y = ordo.tanh(x * 3.0 + 1.0) / 7.0 - x
    exact = torch.from_numpy(x32).to(torch_dtype).float()
    want = (torch.tanh(exact * 3.0 + 1.0) / 7.0 - exact).to(torch_dtype)
    # Bitwise: float32 inside, one rounding at the end (torch's own bf16
    # ops would round after every op).
    np.testing.assert_array_equal(ordo_bits(y), want.view(torch.int16).numpy().view(np.uint16))


@pytest.mark.parametrize("name", HALVES)
def test_binary_ops_and_promotion(name):
    ordo_dtype, torch_dtype = HALVES[name]
    a32, b32 = np.random.default_rng(4).standard_normal((2, 64, 65)).astype(np.float32)
    a, b = ordo.tensor(a32).astype(ordo_dtype), ordo.tensor(b32).astype(ordo_dtype)
    ta, tb = torch.from_numpy(a32).to(torch_dtype), torch.from_numpy(b32).to(torch_dtype)
    for got, want in [(a + b, ta + tb), (a * b, ta * tb), (a / b, ta / tb), (a - b[0], ta - tb[0]),
                      (ordo.maximum(a, b), torch.maximum(ta, tb)), (a * 2, ta * 2),
                      # A Python number is a value of the tensor's dtype, as torch's.
                      (a * 0.1, ta * 0.1), (0.3 - a, 0.3 - ta)]:
        assert got.dtype == ordo_dtype
        np.testing.assert_array_equal(ordo_bits(got), want.view(torch.int16).numpy().view(np.uint16))
    np.testing.assert_array_equal((a < b).numpy(), (ta < tb).numpy())
    assert (a + ordo.tensor(a32)).dtype == np.float32
    assert (a + ordo.tensor(np.ones(65, np.int64))).dtype == ordo_dtype
    other = ordo.float16 if ordo_dtype == ordo.bfloat16 else ordo.bfloat16
    assert (a + b.astype(other)).dtype == np.float32


@pytest.mark.parametrize("name", HALVES)
def test_reductions_accumulate_in_float32(name):
    ordo_dtype, torch_dtype = HALVES[name]
    x32 = np.random.default_rng(5).random((100, 700)).astype(np.float32) * 0.5  # the sum fits float16
    x = ordo.tensor(x32).astype(ordo_dtype)
    exact = torch.from_numpy(x32).to(torch_dtype).double()
    for got, want in [(x.sum(), exact.sum()), (x.sum(1), exact.sum(1)), (x.mean(0), exact.mean(0)),
                      (x.max(1), exact.amax(1)), (x.min(), exact.min())]:
        assert got.dtype == ordo_dtype
        want = want.numpy()
        # One rounding to the 16-bit type, with room for float32's
        # reordered sums (far below it).
        np.testing.assert_array_less(np.abs(got.astype(np.float64).numpy() - want), bf16_step(want, torch_dtype))
    np.testing.assert_array_equal(x.argmax(1).numpy(), exact.argmax(1).numpy())


@pytest.mark.parametrize("name", HALVES)
def test_matmul_accumulates_in_float32(name):
    ordo_dtype, torch_dtype = HALVES[name]
    a32, b32 = np.random.default_rng(6).standard_normal((2, 96, 96)).astype(np.float32)
    a, b = ordo.tensor(a32).astype(ordo_dtype), ordo.tensor(b32).astype(ordo_dtype)
    exact = torch.from_numpy(a32).to(torch_dtype).double() @ torch.from_numpy(b32).to(torch_dtype).double()
    got = a @ b
    assert got.dtype == ordo_dtype
    want = exact.numpy()
    np.testing.assert_array_less(np.abs(got.astype(np.float64).numpy() - want), bf16_step(want, torch_dtype) + 1e-4)


def test_bfloat16_matmul_and_sum_are_the_same_whatever_the_thread_count():
    script = """
import hashlib, numpy as np, ordo
rng = np.random.default_rng(7)
a = ordo.tensor(rng.standard_normal((512, 384)).astype(np.float32)).astype(ordo.bfloat16)
b = ordo.tensor(rng.standard_normal((384, 520)).astype(np.float32)).astype(ordo.bfloat16)
x = ordo.tensor(rng.standard_normal((1 << 20) + 3).astype(np.float32)).astype(ordo.bfloat16)
c = a @ b
parts = [c._raw_bits(), x.sum()._raw_bits(), c.sum(0)._raw_bits(), (x * 3.0).max()._raw_bits()]
print(hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest())
"""
    one, two = digests_with_kernel_threads(script)
    assert one == two


def test_numpy_interop():
    h = np.array([1.5, -2.25, 65504.0, np.inf], np.float16)
    t = ordo.tensor(h)
    assert t.dtype == np.float16 and t.dtype == ordo.float16
    np.testing.assert_array_equal(t.numpy(), h)
    assert t.numpy().dtype == np.float16
    b = ordo.tensor([1.0, 2.5, 1.0 / 3], dtype=ordo.bfloat16)
    assert b.dtype == ordo.bfloat16 and str(b.dtype) == "bfloat16" and repr(b.dtype) == "ordo.bfloat16"
    out = b.numpy()  # numpy has no bfloat16: float32, exactly the values
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1.0, 2.5, 0.333984375])
    assert b.to(ordo.float32).dtype == np.float32 and b.astype("bfloat16").dtype == ordo.bfloat16
    np.testing.assert_array_equal(ordo.zeros([2], dtype=ordo.bfloat16).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(ordo.full([3], 1.0 / 3, dtype=ordo.float16).numpy(), np.full(3, 1 / 3, np.float16))
    np.testing.assert_array_equal(ordo.arange(0, 3, 0.5, dtype=ordo.bfloat16).numpy(), np.arange(0, 3, 0.5))
    assert ordo.rand([5], dtype=ordo.bfloat16).dtype == ordo.bfloat16
    with pytest.raises(TypeError, match="bfloat16"):
        ordo.tensor(np.zeros(3, np.complex64))


def test_movement_ops_keep_the_bits():
    patterns = every_pattern().reshape(256, 256)
    x = ordo._C._from_raw_bits(patterns, ordo.bfloat16, 0)
    np.testing.assert_array_equal(x.transpose(0, 1)._raw_bits(), patterns.T)
    np.testing.assert_array_equal(x[3:9, 1:200:7]._raw_bits(), patterns[3:9, 1:200:7])
    np.testing.assert_array_equal(ordo.cat([x, x], 1)._raw_bits(), np.concatenate([patterns, patterns], 1))
    index = ordo.tensor(np.array([5, 0, 255], np.int64))
    np.testing.assert_array_equal(x.index_select(0, index)._raw_bits(), patterns[[5, 0, 255]])


def test_gradients_flow_through_bfloat16():
    x32 = np.random.default_rng(8).standard_normal((8, 16)).astype(np.float32)
    x = ordo.tensor(x32, dtype=ordo.bfloat16, requires_grad=True)
    (ordo.tanh(x) * x).sum().backward()
    assert x.grad.dtype == ordo.bfloat16
    exact = torch.from_numpy(x32).to(torch.bfloat16).float().requires_grad_()
    (torch.tanh(exact) * exact).sum().backward()
    want = exact.grad.numpy()
    np.testing.assert_array_less(np.abs(x.grad.numpy() - want), bf16_step(want, torch.bfloat16) * 2)


def rank_order_reference(inputs, torch_dtype, scale, fold=np.add):
    """What a collective over 16-bit floats gives: the inputs widened, folded
    in float32 in rank order, scaled as float32 is, rounded once."""
    total = inputs[0].astype(np.float32)
    for x in inputs[1:]:
        total = fold(total, x.astype(np.float32))
    if scale != 1.0:
        total = (total.astype(np.float64) * scale).astype(np.float32)
    return torch_bits(total, torch_dtype)


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("reduce_type, scale", [(ordo.REDUCE_SUM, 1.0), (ordo.REDUCE_SUM, 0.1),
                                                (ordo.REDUCE_MAX, 1.0)])
def test_all_reduce_sums_in_float32_in_rank_order(world, name, reduce_type, scale):
    ordo_dtype, torch_dtype = HALVES[name]
    rng = np.random.default_rng(world)
    # Values whose float32 sum differs from any bf16-by-bf16 sum, and a
    # length past one reduction chunk with a tail.
    inputs = [(rng.standard_normal(1500) * 100).astype(np.float32) for _ in range(world)]
    halves = [torch.from_numpy(x).to(torch_dtype).float().numpy() for x in inputs]

    def step(index):
        x = ordo.tensor(halves[index]).astype(ordo_dtype)
        return ordo.all_reduce(reduce_type, x, scale=scale)._raw_bits()

    results = ordo.spawn(step)
    fold = np.add if reduce_type == ordo.REDUCE_SUM else np.maximum
    want = rank_order_reference(halves, torch_dtype, scale, fold)
    for result in results:
        np.testing.assert_array_equal(result, want)


@pytest.mark.parametrize("name", HALVES)
def test_reduce_scatter_and_all_gather_of_16_bit_floats(world, name):
    ordo_dtype, torch_dtype = HALVES[name]
    rng = np.random.default_rng(10 + world)
    inputs = [torch.from_numpy(rng.standard_normal((world * 3, 70)).astype(np.float32)).to(torch_dtype).float().numpy()
              for _ in range(world)]

    def step(index):
        x = ordo.tensor(inputs[index]).astype(ordo_dtype)
        shard = ordo.reduce_scatter(ordo.REDUCE_SUM, x, 1.0, 0, world)
        gathered = ordo.all_gather(x, dim=1)
        return shard._raw_bits(), gathered._raw_bits()

    want = rank_order_reference(inputs, torch_dtype, 1.0)
    for index, (shard, gathered) in enumerate(ordo.spawn(step)):
        np.testing.assert_array_equal(shard, want[index * 3:(index + 1) * 3])
        np.testing.assert_array_equal(gathered, np.concatenate([torch_bits(x, torch_dtype) for x in inputs], 1))


def test_checkpoints_keep_16_bit_floats_bitwise(tmp_path):
    patterns = every_pattern()
    state = {"b": ordo._C._from_raw_bits(patterns, ordo.bfloat16, 0),
             "h": ordo._C._from_raw_bits(patterns, ordo.float16, 0)}
    ordo.save(state, tmp_path / "half.ordo")
    loaded = ordo.load(tmp_path / "half.ordo")
    assert loaded["b"].dtype == ordo.bfloat16 and loaded["h"].dtype == ordo.float16
    np.testing.assert_array_equal(loaded["b"]._raw_bits(), patterns)
    np.testing.assert_array_equal(loaded["h"]._raw_bits(), patterns)


def test_a_bfloat16_layer_trains():
    layer = ordo.nn.Linear(8, 4).to(ordo.bfloat16)
    assert layer.weight.dtype == ordo.bfloat16 and layer.weight.dtype.kind == "f"
    before = layer.weight._raw_bits().copy()
    x = ordo.rand([3, 8]).astype(ordo.bfloat16)
    out = layer(x)
    assert out.dtype == ordo.bfloat16
    out.sum().backward()
    assert layer.weight.grad.dtype == ordo.bfloat16
    optimizer = ordo.optim.SGD(layer.parameters(), lr=0.5, momentum=0.9)
    optimizer.step()
    ordo.mark_step()
    assert layer.weight.dtype == ordo.bfloat16
    assert (layer.weight._raw_bits() != before).any()


@pytest.mark.parametrize("name", HALVES)
def test_fusion_and_schedule_change_no_bit(name):
    ordo_dtype, _ = HALVES[name]
    x32 = np.random.default_rng(9).standard_normal((300, 700)).astype(np.float32)

    def run(mode, fuse):
        ordo._C.set_schedule(0, mode, 5, fuse)
        try:
            x = ordo.tensor(x32).astype(ordo_dtype)
            y = ordo.sigmoid(x * 1.5 - 0.25) * x + ordo.exp(-ordo.abs(x)) / 3.0
            return [y._raw_bits(), (y * 2.0).sum(1)._raw_bits()]
        finally:
            ordo._C.set_schedule(0, "default", 0, True)

    fused = run("default", True)
    for got in (run("default", False), run("random", True)):
        for a, b in zip(got, fused):
            np.testing.assert_array_equal(a, b)
