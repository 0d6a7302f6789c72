"""Tensors on one device, against numpy: creation, metadata, operators,
methods, indexing, in-place copy, laziness and bad arguments."""

import math
import operator

import numpy as np
import pytest

import ordo
from cases import params

# Every case computes the same thing in ordo and in numpy. `A` is float32
# without ties (so max/min/argmax have one answer) and positive (so log,
# sqrt and fractional powers are defined).
A = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.37 % 5 + 0.25).astype(np.float32)
B = np.linspace(0.5, 2.0, 4, dtype=np.float32)  # broadcasts against A


def check(tensor, expected, exact=False):
    """tensor holds expected: same shape, same dtype, same values."""
    expected = np.asarray(expected)
    assert isinstance(tensor, ordo.Tensor)
    assert tensor.shape == expected.shape
    assert tensor.dtype == expected.dtype
    if exact or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(tensor.numpy(), expected)
    else:
        np.testing.assert_allclose(tensor.numpy(), expected, rtol=2e-6, atol=1e-6)


# ---- Creation. ----

CREATION_CASES = [
    # (id, data, dtype, expected)
    ("float lists make float32", [[1.0, 2.0], [3.0, 4.5]], None, np.array([[1, 2], [3, 4.5]], np.float32)),
    ("int lists make int64", [1, 2, 3], None, np.array([1, 2, 3], np.int64)),
    ("bool lists make bool", [True, False], None, np.array([True, False])),
    ("float scalar is 0-d float32", 2.5, None, np.array(2.5, np.float32)),
    ("int scalar is 0-d int64", 7, None, np.array(7, np.int64)),
    ("numpy int32 kept", np.arange(6, dtype=np.int32).reshape(2, 3), None,
     np.arange(6, dtype=np.int32).reshape(2, 3)),
    ("numpy float64 kept", np.linspace(0, 1, 5), None, np.linspace(0, 1, 5)),
    ("numpy scalar", np.int32(5), None, np.array(5, np.int32)),
    ("non-contiguous array", np.arange(6).reshape(2, 3).T, None, np.arange(6).reshape(2, 3).T),
    ("zero-size", np.ones((2, 0, 3), np.float32), None, np.ones((2, 0, 3), np.float32)),
    ("dtype= casts up", [1, 2], ordo.float64, np.array([1.0, 2.0])),
    ("dtype= casts down", [1.5, -2.5], ordo.int32, np.array([1, -2], np.int32)),
    ("dtype= by name", [1, 0], "bool", np.array([True, False])),
]


@pytest.mark.parametrize("data, dtype, expected", params(CREATION_CASES))
def test_tensor_from_python_and_numpy(data, dtype, expected):
    t = ordo.tensor(data, dtype=dtype)
    assert type(t.shape) is tuple
    assert isinstance(t.dtype, np.dtype)
    check(t, expected, exact=True)


def test_tensor_copies_its_data_and_numpy_returns_a_copy():
    original = np.array([1.0, 2.0, 3.0], np.float32)
    source = original.copy()
    t = ordo.tensor(source)
    source[0] = 100.0
    out = t.numpy()
    out[1] = 200.0
    check(t, original, exact=True)
    assert t.numpy() is not t.numpy()
    check(ordo.tensor(t), original, exact=True)  # a tensor from a tensor is a copy too


@pytest.mark.parametrize("device", [2, ordo.Device(2), "ordo:2"], ids=["ordinal", "Device", "name"])
def test_tensor_on_a_given_device(device):
    t = ordo.tensor([1, 2], device=device)
    assert t.device == ordo.Device(2)
    assert repr(t.device) == "ordo:2"
    check(ordo.zeros(3, device=device) + 1.0, np.ones(3, np.float32))
    assert ordo.ones(3, device=device).device == ordo.Device(2)


def test_tensors_default_to_the_calling_threads_device():
    assert ordo.tensor([1.0]).device == ordo.xla_device() == ordo.Device(0)
    ordo.set_device(3)
    try:
        assert ordo.tensor([1.0]).device == ordo.Device(3)
        assert ordo.arange(4).device == ordo.Device(3)
    finally:
        ordo.set_device(0)


FACTORY_CASES = [
    # (id, ordo call, numpy reference)
    ("zeros", lambda: ordo.zeros((2, 3)), np.zeros((2, 3), np.float32)),
    ("zeros of an int shape", lambda: ordo.zeros(3), np.zeros(3, np.float32)),
    ("zeros zero-size", lambda: ordo.zeros((0, 3)), np.zeros((0, 3), np.float32)),
    ("ones int32", lambda: ordo.ones(4, dtype=ordo.int32), np.ones(4, np.int32)),
    ("full float", lambda: ordo.full((2, 2), 7.5), np.full((2, 2), 7.5, np.float32)),
    ("full int64", lambda: ordo.full((3,), -4, dtype=ordo.int64), np.full(3, -4, np.int64)),
    ("full bool", lambda: ordo.full((2,), True, dtype=ordo.bool_), np.full(2, True)),
    ("full 0-d", lambda: ordo.full((), 3.0), np.array(3.0, np.float32)),
    ("arange stop", lambda: ordo.arange(5), np.arange(5)),
    ("arange start stop step", lambda: ordo.arange(2, 11, 3), np.arange(2, 11, 3)),
    ("arange negative step", lambda: ordo.arange(5, 0, -2), np.arange(5, 0, -2)),
    ("arange float", lambda: ordo.arange(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=np.float32)),
    ("arange dtype", lambda: ordo.arange(4, dtype=ordo.float64), np.arange(4, dtype=np.float64)),
    ("arange empty", lambda: ordo.arange(3, 3), np.arange(3, 3)),
]


@pytest.mark.parametrize("make, expected", params(FACTORY_CASES))
def test_factories(make, expected):
    check(make(), expected, exact=True)


@pytest.mark.parametrize("dtype", [ordo.float32, ordo.float64])
def test_rand_is_seeded_and_uniform_in_0_1(dtype):
    a = ordo.rand((1000,), seed=7, dtype=dtype).numpy()
    assert a.dtype == dtype and a.shape == (1000,)
    np.testing.assert_array_equal(a, ordo.rand((1000,), seed=7, dtype=dtype).numpy())
    assert not np.array_equal(a, ordo.rand((1000,), seed=8, dtype=dtype).numpy())
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.05


def test_randn_is_seeded_and_standard_normal():
    a = ordo.randn((4000,), seed=3).numpy()
    np.testing.assert_array_equal(a, ordo.randn((4000,), seed=3).numpy())
    assert abs(a.mean()) < 0.1 and abs(a.std() - 1.0) < 0.1


def test_metadata_and_conversions():
    t = ordo.tensor(A)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24
    assert len(t) == 2 and t.size() == (2, 3, 4) and t.size(1) == 3
    assert t.dtype == np.dtype(np.float32)
    np.testing.assert_array_equal(np.asarray(t), A)
    assert t.tolist() == A.tolist()
    assert ordo.tensor([[3.5]]).item() == 3.5
    assert float(ordo.tensor(2.5)) == 2.5 and int(ordo.tensor(4)) == 4
    assert bool(ordo.tensor(True)) and not bool(ordo.tensor(0))
    assert repr(t) == "ordo.Tensor(shape=(2, 3, 4), dtype=float32, device=ordo:0)"


# ---- Operators. ----

ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "**": operator.pow}
COMPARISON = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
              ">": operator.gt, ">=": operator.ge}
# (id, left operand, right operand): "A"/"B" are the arrays above as tensors,
# numbers are Python scalars (the right operand first: the reflected form).
OPERANDS = [("tensor-tensor", "A", "A"), ("broadcast", "A", "B"), ("tensor-float", "A", 1.5),
            ("float-tensor", 1.5, "A"), ("tensor-int", "A", 2), ("int-tensor", 2, "A")]


def _operand(spec, as_tensor):
    arrays = {"A": A, "B": B}
    if isinstance(spec, str):
        return ordo.tensor(arrays[spec]) if as_tensor else arrays[spec]
    return spec


@pytest.mark.parametrize("operands", OPERANDS, ids=[o[0] for o in OPERANDS])
@pytest.mark.parametrize("symbol", list(ARITHMETIC) + list(COMPARISON))
def test_binary_operators_match_numpy(symbol, operands):
    op = {**ARITHMETIC, **COMPARISON}[symbol]
    _, left, right = operands
    expected = op(_operand(left, False), _operand(right, False))
    check(op(_operand(left, True), _operand(right, True)), expected)


PROMOTION_CASES = [
    # (id, ordo expression over int32 / int64 / float32 / bool tensors, dtype)
    # A Python scalar takes the tensor's dtype when its kind fits, as in torch.
    ("int32 + int", lambda i32, i64, f32, b: i32 + 2, np.int32),
    ("int + int32", lambda i32, i64, f32, b: 2 + i32, np.int32),
    ("int32 + float", lambda i32, i64, f32, b: i32 + 2.5, np.float32),
    ("int32 + int64", lambda i32, i64, f32, b: i32 + i64, np.int64),
    ("int64 * float32", lambda i32, i64, f32, b: i64 * f32, np.float32),
    ("int64 / int is float32", lambda i32, i64, f32, b: i64 / 2, np.float32),
    ("int / int64 is float32", lambda i32, i64, f32, b: 2 / i64, np.float32),
    ("float32 + int", lambda i32, i64, f32, b: f32 + 3, np.float32),
    ("int64 ** int", lambda i32, i64, f32, b: i64 ** 2, np.int64),
    ("bool & bool", lambda i32, i64, f32, b: b & True, np.bool_),
    ("bool | bool", lambda i32, i64, f32, b: False | b, np.bool_),
    ("bool + int32", lambda i32, i64, f32, b: b + i32, np.int32),
    ("int32 == int", lambda i32, i64, f32, b: i32 == 2, np.bool_),
    ("float32 < int64", lambda i32, i64, f32, b: f32 < i64, np.bool_),
]


@pytest.mark.parametrize("expression, dtype", params(PROMOTION_CASES))
def test_dtype_promotion_like_torch(expression, dtype):
    arrays = [np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int64),
              np.array([0.5, 2.0, 3.5], np.float32), np.array([True, False, True])]
    result = expression(*[ordo.tensor(a) for a in arrays])
    assert result.dtype == np.dtype(dtype)
    # numpy computes in its own dtype; the values agree once cast.
    np.testing.assert_allclose(result.numpy(), expression(*arrays).astype(dtype), rtol=1e-6)


def test_unary_operators():
    check(-ordo.tensor(A), -A)
    check(abs(ordo.tensor(A - 2.0)), np.abs(A - 2.0))
    check(~ordo.tensor([True, False]), np.array([False, True]))


MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4, 5)), ((3, 4), (4,)), ((4,), (4, 2)), ((2, 3, 4), (4, 5)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3))]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_operator_and_function(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    check(ordo.tensor(a) @ ordo.tensor(b), a @ b)
    check(ordo.matmul(ordo.tensor(a), ordo.tensor(b)), a @ b)


# ---- Methods. ----

UNARY = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "relu": lambda a: np.maximum(a, 0),
         "sqrt": np.sqrt, "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "abs": np.abs}
POSITIVE_ONLY = ("log", "sqrt")


def unary_case(name):
    """(input tensor, numpy reference) of a unary op; A - 1 has negatives."""
    a = A if name in POSITIVE_ONLY else A - 1.0
    reference = np.negative if name == "neg" else UNARY[name]
    return ordo.tensor(a), reference(a).astype(np.float32)


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions(name):
    x, expected = unary_case(name)
    check(getattr(ordo, name)(x), expected)


@pytest.mark.parametrize("name", [*UNARY, "neg"])
def test_unary_methods(name):
    x, expected = unary_case(name)
    check(getattr(x, name)(), expected)


REDUCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}
DIMS = [None, 0, 1, -1, (0, 2)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=[str(d) for d in DIMS])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, dim, keepdim):
    result = getattr(ordo.tensor(A), name)(dim=dim, keepdim=keepdim)
    check(result, REDUCTIONS[name](A, axis=dim, keepdims=keepdim))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_argmax(dim, keepdim):
    check(ordo.tensor(A).argmax(dim=dim, keepdim=keepdim), np.argmax(A, axis=dim, keepdims=keepdim))


def test_reductions_of_integers_and_defaults():
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(ordo.tensor(ints).sum(), np.int64(15))  # integers sum to int64, as in torch
    check(ordo.tensor(ints).sum(dim=1), np.array([3, 12], np.int64))
    check(ordo.tensor(ints).max(dim=0), np.array([3, 4, 5], np.int32))
    check(ordo.tensor(A).sum(), np.sum(A))


MOVEMENT_CASES = [
    # (id, ordo method call, numpy reference), on A of shape (2, 3, 4)
    ("reshape varargs", lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
    ("reshape tuple", lambda t: t.reshape((4, 6)), lambda a: a.reshape(4, 6)),
    ("reshape -1", lambda t: t.reshape(-1, 3), lambda a: a.reshape(-1, 3)),
    ("reshape flat", lambda t: t.reshape(24), lambda a: a.reshape(24)),
    ("view", lambda t: t.view(2, 12), lambda a: a.reshape(2, 12)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose negative", lambda t: t.transpose(-1, -2), lambda a: a.swapaxes(-1, -2)),
    ("permute varargs", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute list", lambda t: t.permute([1, 2, 0]), lambda a: a.transpose(1, 2, 0)),
    ("transpose then reshape", lambda t: t.transpose(0, 1).reshape(3, 8),
     lambda a: a.swapaxes(0, 1).reshape(3, 8)),
]


@pytest.mark.parametrize("move, reference", params(MOVEMENT_CASES))
def test_movement(move, reference):
    check(move(ordo.tensor(A)), reference(A), exact=True)


class _Index:
    """INDEX_CASES[i] is `_Index[...]`: the index expression itself."""

    def __class_getitem__(cls, index):
        return index


INDEX_CASES = [_Index[1], _Index[-1], _Index[0, 2], _Index[1, -1, 3], _Index[:, 1:], _Index[::2],
               _Index[:, ::2, 1], _Index[..., 2], _Index[0, ..., 1:3], _Index[1:1], _Index[5:],
               _Index[-5:], _Index[:, -2:, :-1], _Index[1, :, 0:4:3]]


@pytest.mark.parametrize("index", INDEX_CASES, ids=[repr(i) for i in INDEX_CASES])
def test_indexing_with_ints_and_slices(index):
    check(ordo.tensor(A)[index], A[index], exact=True)


@pytest.mark.parametrize("index, error", [
    (2, IndexError), (-3, IndexError), ((0, 0, 0, 0), IndexError), (1.0, TypeError),
    (slice(None, None, -1), ValueError),
], ids=["past the end", "before the start", "too many", "float", "negative step"])
def test_bad_indices(index, error):
    with pytest.raises(error):
        ordo.tensor(A)[index]


# ---- copy_ and laziness. ----

def test_copy_replaces_the_value_in_place_broadcasting_and_casting():
    x = ordo.ones((2, 3))
    assert x.copy_(ordo.tensor([1, 2, 3])) is x  # int64 into float32, broadcast
    check(x, np.array([[1, 2, 3], [1, 2, 3]], np.float32))
    x.copy_([[7, 8, 9], [1, 2, 3]])
    check(x, np.array([[7, 8, 9], [1, 2, 3]], np.float32))
    x.copy_(0.5)
    check(x, np.full((2, 3), 0.5, np.float32))


def test_copy_does_not_change_values_traced_from_the_old_value():
    x = ordo.ones(3)
    doubled = x * 2.0
    x.copy_(ordo.full(3, 5.0))
    also = x * 2.0
    ordo.mark_step()
    check(doubled, np.full(3, 2.0, np.float32))
    check(also, np.full(3, 10.0, np.float32))


def test_ops_are_traced_until_mark_step():
    x = ordo.ones(3) * 5.0
    assert x.is_pending()
    ordo.mark_step(wait=True)
    assert not x.is_pending()
    check(x, np.full(3, 5.0, np.float32))
    y = x + 1.0
    assert ordo.mark_step() is None  # wait=False: submitted, not waited for
    ordo.wait_device_ops()
    ordo.wait_device_ops([0, ordo.Device(1)])
    check(y, np.full(3, 6.0, np.float32))


def test_reading_a_pending_value_runs_its_graph():
    y = ordo.tanh(ordo.tensor(A)) * 2.0
    assert y.is_pending()
    check(y, np.tanh(A) * 2.0)


def test_the_same_step_twice_reuses_the_compiled_graph():
    def step(value):
        return (ordo.tensor(np.full(8, value, np.float32)) * 2.0 + 1.0).sum()

    step(1).numpy()
    before = ordo.compile_cache_stats()
    step(2).numpy()
    after = ordo.compile_cache_stats()
    assert after["hits"] == before["hits"] + 1
    assert after["misses"] == before["misses"]


def test_fused_and_unfused_plans_give_bitwise_the_same_values():
    def step():
        x = ordo.tensor(A)
        return ordo.sigmoid(ordo.tanh(x * 1.5 - 0.25) + x) / 3.0

    results = []
    for fuse in (False, True):
        ordo._C.set_schedule(0, "default", fuse_elementwise=fuse)
        results.append(step().numpy())
    ordo._C.set_schedule(0, "default")
    assert results[0].tobytes() == results[1].tobytes()
    np.testing.assert_allclose(results[1], 1 / (1 + np.exp(-(np.tanh(A * 1.5 - 0.25) + A))) / 3.0, rtol=1e-6)


def test_a_failure_at_run_time_is_an_execution_error_naming_the_op():
    x = ordo.ones(3)
    ordo.mark_step()
    bad = x.index_select(0, ordo.tensor([5]))  # traced fine: the index is data
    with pytest.raises(ordo.ExecutionError, match=r"index_select .*index 5 is out of range") as info:
        bad.numpy()
    assert isinstance(info.value, RuntimeError)
    del bad
    check(x * 2.0, np.full(3, 2.0, np.float32))  # the device goes on


# ---- Bad arguments: errors when the op is called, nothing recorded. ----

BAD_TENSOR_CALLS = [
    # (id, call, exception, message fragment)
    ("shapes do not broadcast", lambda: ordo.ones(3) + ordo.ones(2), ValueError, "do not broadcast"),
    ("devices differ", lambda: ordo.ones(2, device=1) + ordo.ones(2), ValueError, "devices 1 and 0"),
    ("matmul inner dimensions", lambda: ordo.ones((2, 3)) @ ordo.ones((2, 3)), ValueError, "inner dimensions"),
    ("reshape element count", lambda: ordo.ones(3).reshape(2, 2), ValueError, "4 elements"),
    ("transpose axis", lambda: ordo.ones(3).transpose(0, 2), ValueError, "out of range"),
    ("permute length", lambda: ordo.ones((2, 3)).permute(0), ValueError, "permute"),
    ("sum axis", lambda: ordo.ones(3).sum(dim=1), ValueError, "out of range"),
    ("bool + bool", lambda: ordo.tensor([True]) + True, TypeError, "both operands are bool"),
    ("float128", lambda: ordo.tensor(np.ones(2, np.longdouble)), TypeError, "float128"),
    ("complex", lambda: ordo.tensor(np.ones(2, np.complex64)), TypeError, "complex64"),
    ("strings", lambda: ordo.tensor(["a"]), TypeError, "no dtype"),
    ("cast to int16", lambda: ordo.ones(2).astype(np.int16), TypeError, "int16"),
    ("a string operand", lambda: ordo.ones(2) + "a", TypeError, "unsupported operand"),
    ("a device name", lambda: ordo.tensor([1.0], device="cuda:0"), TypeError, "ordo.Device"),
    ("a missing device", lambda: ordo.tensor([1.0], device=9), ValueError, "device 9 does not exist"),
    ("arange step 0", lambda: ordo.arange(0, 3, 0), ValueError, "step"),
    ("full of a string", lambda: ordo.full((2,), "a"), TypeError, "expected a real number"),
    ("copy_ shape", lambda: ordo.ones((2, 3)).copy_(ordo.ones(2)), ValueError, "do not broadcast"),
    ("copy_ device", lambda: ordo.ones(3).copy_(ordo.ones(3, device=1)), ValueError, "devices"),
]


@pytest.mark.parametrize("call, error, fragment", params(BAD_TENSOR_CALLS))
def test_bad_arguments_raise_at_call_time(call, error, fragment):
    before = ordo._C.dump_pending_graph()
    with pytest.raises(error, match=fragment):
        call()
    assert ordo._C.dump_pending_graph() == before
    assert math.isclose(float((ordo.ones(2) + 1.0).sum()), 4.0)  # the device goes on
