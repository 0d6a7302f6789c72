"""How Python values become ordo values (issue #11, "wrong values and
misleading messages"): numpy arrays in any byte order and layout, numpy's
other integer types, Python ints checked as numpy 2 checks them, numpy
arrays and numbers as operands of operators and op functions, integer
powers, device and scale arguments, and negative indices."""

import fractions
import operator

import numpy as np
import pytest

import ordo
from cases import params


def check(tensor, expected):
    """tensor is an ordo tensor holding exactly expected (shape, dtype, values)."""
    expected = np.asarray(expected)
    assert isinstance(tensor, ordo.Tensor), type(tensor)
    assert (tensor.shape, tensor.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_array_equal(tensor.numpy(), expected)


def refused(call, error, fragment):
    """call raises error matching fragment and records nothing."""
    before = ordo._C.dump_pending_graph()
    with pytest.raises(error, match=fragment):
        call()
    assert ordo._C.dump_pending_graph() == before


# ---- numpy arrays: byte order, layout, dtypes. ----

VALUES = np.array([[1.5, -2.5, 3.0], [0.0, 7.25, -8.0]])


@pytest.mark.parametrize("code", ["f4", "f8", "i4", "i8", "i2", "u2", "u4", "b1"])
@pytest.mark.parametrize("order", ["<", ">"])
def test_arrays_of_either_byte_order_read_as_their_values(order, code):
    array = VALUES.astype(order + code)
    native = array.astype(array.dtype.newbyteorder("="))
    expected = native.astype({"i2": np.int32, "u2": np.int32, "u4": np.int64}.get(code, native.dtype))
    check(ordo.tensor(array), expected)
    check(ordo._C.from_numpy(array, -1), expected)


def test_the_issue_reproducer_big_endian_float32():
    check(ordo.tensor(np.array([1.5, 2.5, -3], ">f4")), np.array([1.5, 2.5, -3], np.float32))


LAYOUTS = [
    ("transposed", lambda a: a.T),
    ("negative stride", lambda a: a[::-1]),
    ("negative stride, step 2", lambda a: a[:, ::-2]),
    ("both axes reversed", lambda a: a[::-1, ::-1]),
    ("Fortran order", np.asfortranarray),
    ("a broadcast view (stride 0)", lambda a: np.broadcast_to(a[:1], a.shape)),
    ("big-endian and reversed", lambda a: a.astype(">f8")[::-1, ::-2]),
    ("0-d big-endian", lambda a: np.array(a[1, 1], ">f8")),
    ("zero-size big-endian", lambda a: a.astype(">i4")[:, :0]),
]


@pytest.mark.parametrize("layout", params(LAYOUTS))
def test_any_layout_reads_as_its_values(layout):
    array = layout(VALUES)
    expected = array.astype(array.dtype.newbyteorder("="), order="C")
    check(ordo.tensor(array), expected)


WIDENED = [
    # (id, numpy dtype, values, ordo dtype)
    ("int8", np.int8, [-128, 0, 127], np.int32),
    ("int16", np.int16, [-32768, 1, 32767], np.int32),
    ("uint8", np.uint8, [0, 1, 255], np.int32),
    ("uint16", np.uint16, [0, 1, 65535], np.int32),
    ("uint32", np.uint32, [0, 1, 2**32 - 1], np.int64),
    ("uint64 within int64", np.uint64, [0, 1, 2**63 - 1], np.int64),
]


@pytest.mark.parametrize("numpy_dtype, values, ordo_dtype", params(WIDENED))
def test_integer_types_ordo_lacks_are_widened_exactly(numpy_dtype, values, ordo_dtype):
    check(ordo.tensor(np.array(values, numpy_dtype)), np.array(values, ordo_dtype))
    # The same array as an operand: widened the same way, then promoted.
    check(ordo.zeros(3, dtype=ordo.int64) + np.array(values, numpy_dtype), np.array(values, np.int64))


UNSUPPORTED = [
    # (id, array, message fragment naming the dtype)
    ("float128", np.ones(2, np.longdouble), "float128"),
    ("complex64", np.ones(2, np.complex64), "complex64"),
    ("complex128", np.ones(2, np.complex128), "complex128"),
    ("object", np.array([1, "a"], object), "object"),
    ("unicode strings", np.array(["ab"]), "<U2"),
    ("byte strings", np.array([b"ab"]), "S2"),
    ("datetime64", np.array(["2024-01-01"], "datetime64[D]"), "datetime64"),
    ("structured", np.zeros(2, [("a", "f4")]), "no dtype"),
]


@pytest.mark.parametrize("array, fragment", params(UNSUPPORTED))
def test_dtypes_ordo_has_no_type_for_are_a_type_error_naming_them(array, fragment):
    refused(lambda: ordo.tensor(array), TypeError, fragment)
    refused(lambda: ordo.ones(2) + array, TypeError, fragment)


def test_uint64_values_past_int64_do_not_wrap():
    refused(lambda: ordo.tensor(np.array([1, 2**63], np.uint64)), OverflowError,
            "9223372036854775808 out of bounds for int64")
    refused(lambda: ordo.tensor([2**63]), OverflowError, "Python integer 9223372036854775808 out of bounds for int64")
    refused(lambda: ordo.tensor([1, 2**70]), OverflowError, "Python integer 1180591620717411303424 out of bounds")
    check(ordo.tensor([2**70], dtype=ordo.float32), np.array([2.0**70], np.float32))


# ---- Python numbers: numpy 2's checks. ----

I32 = np.array([0, 1, -2], np.int32)

OUT_OF_BOUNDS = [
    # (id, call, exception, message fragment)
    ("int32 + 2**32", lambda t: t + 2**32, OverflowError, "Python integer 4294967296 out of bounds for int32"),
    ("2**32 + int32", lambda t: 2**32 + t, OverflowError, "4294967296 out of bounds for int32"),
    ("int32 - 2**31", lambda t: t - 2**31, OverflowError, "2147483648 out of bounds for int32"),
    ("int32 * (-2**31 - 1)", lambda t: t * (-2**31 - 1), OverflowError, "-2147483649 out of bounds for int32"),
    ("int64 + 2**63", lambda t: t.astype(ordo.int64) + 2**63, OverflowError, "out of bounds for int64"),
    ("bool + 2**63", lambda t: (t > 0) + 2**63, OverflowError, "out of bounds for int64"),
    ("int32 + 2**70", lambda t: t + 2**70, OverflowError, "1180591620717411303424 out of bounds for int32"),
    ("int32 == 2**70", lambda t: t == 2**70, OverflowError, "out of bounds for int64"),
    ("numpy int64 into int32", lambda t: t + np.int64(2**40), OverflowError, "numpy.int64 1099511627776 out of"),
    ("numpy uint64 into int64", lambda t: t.astype(ordo.int64) * np.uint64(2**64 - 1), OverflowError,
     "18446744073709551615 out of bounds for int64"),
    ("maximum", lambda t: ordo.maximum(t, 2**32), OverflowError, "maximum: Python integer 4294967296"),
    ("minimum reflected", lambda t: ordo.minimum(-2**40, t), OverflowError, "-1099511627776 out of bounds"),
    ("where", lambda t: ordo.where(t > 0, t, 2**31), OverflowError, "where: Python integer 2147483648"),
    ("full int32", lambda t: ordo.full([2], 2**31, dtype=ordo.int32), OverflowError,
     "Python integer 2147483648 out of bounds for int32"),
    ("full int64", lambda t: ordo.full([2], 2**70, dtype=ordo.int64), OverflowError,
     "1180591620717411303424 out of bounds for int64"),
    ("full NaN int32", lambda t: ordo.full([2], float("nan"), dtype=ordo.int32), ValueError, "NaN"),
    ("full inf int64", lambda t: ordo.full([2], float("inf"), dtype=ordo.int64), OverflowError, "inf"),
    ("full -inf int32", lambda t: ordo.full([2], -float("inf"), dtype=ordo.int32), OverflowError, "-inf"),
    ("full 1e10 int32", lambda t: ordo.full([2], 1e10, dtype=ordo.int32), OverflowError, "1e\\+10 out of bounds"),
    ("full past float64", lambda t: ordo.full([2], 2**1100, dtype=ordo.float64), OverflowError,
     "out of bounds for float64"),
    ("zeros_like copy_", lambda t: t.copy_(2**40), OverflowError, "1099511627776 out of bounds for int32"),
    ("tensor list int32", lambda t: ordo.tensor([1, 2**40], dtype=ordo.int32), OverflowError,
     "Python integer 1099511627776 out of bounds for int32"),
    ("tensor NaN int32", lambda t: ordo.tensor([1.0, float("nan")], dtype=ordo.int32), ValueError, "NaN"),
    ("tensor inf int64", lambda t: ordo.tensor([float("inf")], dtype=ordo.int64), OverflowError, "infinity"),
    ("tensor 1e20 int64", lambda t: ordo.tensor([1e20], dtype=ordo.int64), OverflowError, "out of bounds"),
    ("arange int32 past the end", lambda t: ordo.arange(2**31 - 2, 2**31 + 1, dtype=ordo.int32), OverflowError,
     "2147483648 out of bounds for int32"),
    ("arange start int32", lambda t: ordo.arange(-2**31 - 1, 0, dtype=ordo.int32), OverflowError,
     "-2147483649 out of bounds"),
    ("arange 2**70", lambda t: ordo.arange(2**70), OverflowError, "1180591620717411303424 out of bounds for int64"),
    ("one_hot depth 2**70", lambda t: ordo.one_hot(t, 2**70), OverflowError, "depth: Python integer"),
    ("one_hot depth 2.5", lambda t: ordo.one_hot(t, 2.5), TypeError, "depth: expected an integer, got float"),
    ("full of a complex", lambda t: ordo.full([2], 1j), TypeError, "expected a real number, got complex"),
]


@pytest.mark.parametrize("call, error, fragment", params(OUT_OF_BOUNDS))
def test_numbers_that_do_not_fit_raise_as_in_numpy_2(call, error, fragment):
    t = ordo.tensor(I32)
    refused(lambda: call(t), error, fragment)


def test_numbers_at_the_bounds_fit():
    t = ordo.tensor(I32)
    check(t * (2**31 - 1) + (-2**31), I32 * np.int32(2**31 - 1) + np.int32(-2**31))  # wraps, as numpy
    check(ordo.full([2], -2**31, dtype=ordo.int32), np.full(2, -2**31, np.int32))
    check(ordo.full([2], 2**63 - 1, dtype=ordo.int64), np.full(2, 2**63 - 1, np.int64))
    check(ordo.full([2], 2.75, dtype=ordo.int32), np.full(2, 2, np.int32))  # floats truncate, as numpy
    check(ordo.full([2], -2147483648.9, dtype=ordo.int32), np.full(2, -2**31, np.int32))
    check(ordo.full([2], float("nan"), dtype=ordo.bool_), np.full(2, True))
    check(ordo.full([2], 2**70, dtype=ordo.bool_), np.full(2, True))
    check(ordo.tensor([1.7, -1.7], dtype=ordo.int32), np.array([1, -1], np.int32))
    check(ordo.arange(0, 2**31, 2**30, dtype=ordo.int32), np.array([0, 2**30], np.int32))
    check(ordo.arange(2**31 - 2, 2**31, dtype=ordo.int32), np.array([2**31 - 2, 2**31 - 1], np.int32))
    # An explicit dtype casts an array the way numpy's astype does.
    check(ordo.tensor(np.array([2**32 + 5]), dtype=ordo.int32), np.array([5], np.int32))


def test_a_float_tensor_takes_any_python_int_as_a_float():
    """numpy 2: float32_array + 2**70 is float32(2**70); ordo too."""
    t = ordo.tensor([1.0, 2.0])
    check(t + 2**70, np.array([1.0, 2.0], np.float32) + np.float32(2.0**70))
    check(ordo.full([2], 2**70, dtype=ordo.float32), np.full(2, 2.0**70, np.float32))
    check(ordo.tensor([1.0], dtype=ordo.float64) * 2**80, np.array([2.0**80]))


COMPARISONS = [("==", operator.eq), ("!=", operator.ne), ("<", operator.lt), ("<=", operator.le),
               (">", operator.gt), (">=", operator.ge)]


@pytest.mark.parametrize("op", params(COMPARISONS))
@pytest.mark.parametrize("value", [2**32, 2**31, -2**31 - 1, -2**40, 2**63 - 1])
def test_comparisons_with_ints_past_the_dtype_are_exact(op, value):
    """numpy 2 compares int32_array == 2**32 exactly (all False); ordo wrapped
    2**32 to 0 before, so 0 == 2**32 was True."""
    t = ordo.tensor(I32)
    expected = op(I32.astype(object), value).astype(bool)
    check(op(t, value), expected)
    check(op(value, t), op(value, I32.astype(object)).astype(bool))


def test_numpy_scalars_are_numbers_of_their_kind():
    """Like Python numbers (as torch takes them): they take the tensor's
    dtype when their kind fits. ordo made every numpy int a float before."""
    ti = ordo.tensor(I32)
    check(ti + np.int64(5), I32 + 5)
    check(np.int16(5) * ti, I32 * 5)
    check(ti + np.bool_(True), I32 + 1)
    check(ti + np.float32(0.5), I32.astype(np.float32) + 0.5)
    check(ordo.tensor([1.0, 2.0]) * np.float64(0.5), np.array([0.5, 1.0], np.float32))
    check(np.float32(0.5) * ordo.tensor([1.0, 2.0]), np.array([0.5, 1.0], np.float32))
    check(ti + fractions.Fraction(1, 2), I32.astype(np.float32) + 0.5)


# ---- Operands: numpy arrays work as tensors, other types are named. ----

A = np.array([[1.0, 2.0], [3.0, 0.5]], np.float32)
BINARY = [("+", operator.add), ("-", operator.sub), ("*", operator.mul), ("/", operator.truediv),
          ("**", operator.pow), ("<", operator.lt), ("==", operator.eq), ("&", operator.and_),
          ("@", operator.matmul)]


@pytest.mark.parametrize("op", params(BINARY))
@pytest.mark.parametrize("array", [np.array([[2.0, 0.5], [1.0, 4.0]], np.float32),
                                   np.array([[2.0, 0.5], [1.0, 4.0]], ">f4"),
                                   np.array([[2.0, 0.5], [1.0, 4.0]])[::-1, ::-1]],
                         ids=["float32", "big-endian", "float64 reversed"])
def test_a_numpy_array_operand_works_as_a_tensor_on_either_side(op, array):
    left, right = (A > 0, array > 1) if op is operator.and_ else (A, array)
    native = right.astype(right.dtype.newbyteorder("="))
    check(op(ordo.tensor(left), right), op(left, native))
    check(op(right, ordo.tensor(left)), op(native, left))  # numpy defers to the tensor


def test_numpy_functions_still_take_a_tensor_as_an_array():
    """As with torch: only numpy's operators defer to the tensor."""
    t = ordo.tensor(A)
    result = np.add(A, t)
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, A + A)
    array = A.copy()
    array += t  # in place, in numpy
    np.testing.assert_array_equal(array, A + A)


def test_the_issue_reproducer_numpy_operand():
    check(ordo.tensor([1.0, 2.0]) + np.array([1.0, 2.0], np.float32), np.array([2.0, 4.0], np.float32))


def test_array_operands_go_to_the_tensor_operands_device():
    t = ordo.ones(2, device=2)
    for result in (t + np.ones(2), np.ones(2) * t, ordo.maximum(np.zeros(2), t), ordo.where(np.ones(2) > 0, t, 0.0),
                   t.index_select(0, np.array([1]))):
        assert result.device == ordo.Device(2)
        result.numpy()


OP_FUNCTIONS = [
    # (id, ordo call, numpy reference) over T (float32) and C (bool)
    ("maximum(t, 0.1)", lambda t, c: ordo.maximum(t, 0.1), lambda a, c: np.maximum(a, np.float32(0.1))),
    ("minimum(0.1, t)", lambda t, c: ordo.minimum(0.1, t), lambda a, c: np.minimum(np.float32(0.1), a)),
    ("t.maximum(0.1)", lambda t, c: t.maximum(0.1), lambda a, c: np.maximum(a, np.float32(0.1))),
    ("t.minimum(array)", lambda t, c: t.minimum(np.full(2, 0.5)), lambda a, c: np.minimum(a, np.full(2, 0.5))),
    ("maximum(array, t)", lambda t, c: ordo.maximum(np.zeros(2, np.float32), t), lambda a, c: np.maximum(0, a)),
    ("where(c, t, 0.1)", lambda t, c: ordo.where(c, t, 0.1), lambda a, c: np.where(c, a, np.float32(0.1))),
    ("where(c, 0.1, t)", lambda t, c: ordo.where(c, 0.1, t), lambda a, c: np.where(c, np.float32(0.1), a)),
    ("where(c, 1.0, 0)", lambda t, c: ordo.where(c, 1.0, 0), lambda a, c: np.where(c, 1.0, 0.0).astype(np.float32)),
    ("where(array c, t, 0)", lambda t, c: ordo.where(np.array([[True], [False]]), t, 0),
     lambda a, c: np.where([[True], [False]], a, 0).astype(np.float32)),
    ("add(2, t)", lambda t, c: ordo._C.add(2, t), lambda a, c: 2 + a),
    ("pow(t, 2)", lambda t, c: ordo._C.pow(t, 2), lambda a, c: a**2),
    ("ge(t, array)", lambda t, c: ordo._C.ge(t, np.ones((2, 1))), lambda a, c: a >= np.ones((2, 1))),
    ("logical_or(c, True)", lambda t, c: ordo._C.logical_or(c, False), lambda a, c: c),
    ("matmul(t, array)", lambda t, c: ordo.matmul(t, np.eye(2, dtype=np.float32)), lambda a, c: a),
]


@pytest.mark.parametrize("call, reference", params(OP_FUNCTIONS))
def test_op_functions_take_numbers_and_arrays_as_the_operators_do(call, reference):
    condition = A > 0
    check(call(ordo.tensor(A), ordo.tensor(condition)), reference(A, condition))


BAD_OPERANDS = [
    # (id, call, message fragment naming the operand's type)
    ("t + 1j", lambda t: t + 1j, "'complex'"),
    ("1j * t", lambda t: 1j * t, "'complex'"),
    ("t + 'x'", lambda t: t + "x", "'str'"),
    ("t + object()", lambda t: t + object(), "'object'"),
    ("t + None", lambda t: t + None, "'NoneType'"),
    ("t + a list", lambda t: t + [1.0, 2.0], "'list'"),
    ("t < 'x'", lambda t: t < "x", "'str'"),
    ("t + numpy complex", lambda t: t + np.complex64(1j), "numpy.complex64"),
    ("numpy complex * t", lambda t: np.complex128(1j) * t, "complex"),
    ("maximum(t, 1j)", lambda t: ordo.maximum(t, 1j), "maximum: cannot take an operand of type complex"),
    ("minimum('x', t)", lambda t: ordo.minimum("x", t), "minimum: cannot take an operand of type str"),
    ("where(c, t, None)", lambda t: ordo.where(t > 0, t, None), "where: cannot take an operand of type NoneType"),
    ("where with a number condition", lambda t: ordo.where(True, t, t), "condition must be an ordo.Tensor"),
    ("maximum of two numbers", lambda t: ordo.maximum(1.0, 2.0), "expected an ordo.Tensor or a numpy array"),
    ("index_select by a list", lambda t: t.index_select(0, [0]), "indices must be an ordo.Tensor or a numpy"),
]


@pytest.mark.parametrize("call, fragment", params(BAD_OPERANDS))
def test_operands_of_no_ordo_type_are_a_type_error_naming_the_type(call, fragment):
    refused(lambda: call(ordo.tensor([1.0, 2.0])), TypeError, fragment)


# ---- Integer powers. ----

NEGATIVE_POWERS = [
    ("int32 ** -1", lambda t: t ** -1),
    ("pow(int32, -2)", lambda t: ordo._C.pow(t, -2)),
    ("int32 ** numpy -1", lambda t: t ** np.int64(-1)),
    ("bool ** -1", lambda t: (t > 0) ** -1),
    ("int32 ** -2**70", lambda t: t ** -2**70),
]


@pytest.mark.parametrize("call", params(NEGATIVE_POWERS))
def test_integers_to_negative_integer_scalar_powers_raise_when_traced(call):
    refused(lambda: call(ordo.tensor([1, 2], dtype=ordo.int32)), ValueError,
            "integers to negative integer powers are not allowed")


def test_integer_powers_that_are_defined_still_work():
    t = ordo.tensor([1, 2, -3], dtype=ordo.int32)
    check(t ** 0, np.ones(3, np.int32))
    check(t ** 3, np.array([1, 8, -27], np.int32))
    check(t ** -1.0, np.array([1, 0.5, -1 / 3], np.float32))
    check(2 ** ordo.tensor([0, 3]), np.array([1, 8]))


@pytest.mark.parametrize("fuse", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("base, exponent", [([2, 3], [1, -1]), ([1, 1], [0, -1]), (2, [3, -2])],
                         ids=["tensor ** tensor", "1 ** -1 (torch gives 1)", "2 ** tensor"])
def test_a_negative_exponent_at_run_time_fails_the_graph(fuse, base, exponent):
    """Before, 2 ** -1 was 0 and 1 ** -1 was 1. Fused and unfused plans fail
    alike (the same row function runs in both)."""
    ordo._C.set_schedule(0, "default", fuse_elementwise=fuse)
    try:
        exponents = ordo.tensor(exponent, dtype=ordo.int32)
        bases = ordo.tensor(base, dtype=ordo.int32) if isinstance(base, list) else base
        bad = ((bases ** exponents) + 1) * 2  # an elementwise chain: one fused group
        with pytest.raises(ordo.ExecutionError, match=r"integers to negative integer powers are not allowed "
                                                      r"\(\d \*\* -\d\)") as info:
            bad.numpy()
        assert str(info.value).startswith("3 fused elementwise ops" if fuse else "pow (node")
        del bad
        check(exponents * 2, np.array(exponent, np.int32) * 2)  # the device goes on
    finally:
        ordo._C.set_schedule(0, "default")


# ---- Negative indices: numpy-like, documented. ----

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_negative_indices_count_from_the_end():
    x = ordo.tensor(X)
    check(x.index_select(0, ordo.tensor([-1, 0, -3])), np.take(X, [-1, 0, -3], axis=0))
    check(x.index_select(1, np.array([-4, 3], np.int32)), np.take(X, [-4, 3], axis=1))
    index = np.array([[-1, 0, 1, -3]])
    check(x.gather(0, ordo.tensor(index)), np.take_along_axis(X, index % 3, axis=0))
    assert "count from the end" in ordo.Tensor.index_select.__doc__
    assert "count from the end" in ordo.Tensor.gather.__doc__


@pytest.mark.parametrize("select", [
    lambda x, i: x.index_select(0, i),
    lambda x, i: x.gather(0, i.reshape(1, 1).broadcast_to((1, 4))),
], ids=["index_select", "gather"])
def test_negative_indices_past_the_start_fail_clearly(select):
    x = ordo.tensor(X)
    bad = select(x, ordo.tensor([-4]))
    with pytest.raises(ordo.ExecutionError, match="index -4 is out of range for axis 0 of size 3"):
        bad.numpy()
    del bad
    check(x + 1.0, X + 1)  # the device goes on


# ---- Device and scale arguments. ----

DEVICE_CALLS = [
    ("tensor", lambda d: ordo.tensor([1.0], device=d)),
    ("full", lambda d: ordo.full([2], 1.0, device=d)),
    ("zeros", lambda d: ordo.zeros(2, device=d)),
    ("ones", lambda d: ordo.ones(2, device=d)),
    ("arange", lambda d: ordo.arange(3, device=d)),
    ("rand", lambda d: ordo.rand(2, device=d)),
    ("randn", lambda d: ordo.randn(2, device=d)),
    ("set_device", lambda d: ordo.set_device(d)),
    ("bind_thread_to_device", lambda d: ordo.bind_thread_to_device(d)),
    ("drop_pending_graph", lambda d: ordo.drop_pending_graph(d)),
    ("wait_device_ops", lambda d: ordo.wait_device_ops([d])),
]


@pytest.mark.parametrize("device", [-5, -1, ordo.Device(-5), "ordo:-1", 4])
@pytest.mark.parametrize("call", params(DEVICE_CALLS))
def test_device_arguments_that_name_no_device_are_refused(call, device):
    """Only None means the calling thread's device; -5 used to be device 0."""
    refused(lambda: call(device), ValueError, r"does not exist: this runtime has 4 devices, 0 to 3|is not a device")
    assert ordo.get_ordinal() == 0


def test_the_core_refuses_negative_devices_but_minus_one():
    for call in (lambda: ordo._C.mark_step(-5), lambda: ordo._C.full([1], 1.0, np.dtype(np.float32), -2),
                 lambda: ordo._C.from_numpy(np.ones(1), -7)):
        refused(call, ValueError, r"device -\d does not exist: this runtime has 4 devices, 0 to 3 \(-1 is")


def test_device_arguments_of_every_spelling_still_work():
    for device in (3, np.int64(3), ordo.Device(3), "ordo:3"):
        assert ordo.zeros(1, device=device).device == ordo.Device(3)
    refused(lambda: ordo.zeros(1, device=True), TypeError, "expected an ordo.Device")
    refused(lambda: ordo.zeros(1, device="ordo:x"), ValueError, "'ordo:x' is not a device")


@pytest.mark.parametrize("world", [1], indirect=True)
@pytest.mark.parametrize("scale", ["2", True, np.bool_(True), None, 1j, [2.0]],
                         ids=["a string", "True", "numpy True", "None", "complex", "a list"])
def test_a_scale_that_is_no_real_number_is_a_type_error(world, scale):
    x = ordo.tensor([1.0, 2.0])
    refused(lambda: ordo.all_reduce(ordo.REDUCE_SUM, x, scale=scale), TypeError, "scale must be a real number")
    refused(lambda: ordo.all_reduce(ordo.REDUCE_SUM, [x], scale=scale), TypeError, "scale must be a real number")
    refused(lambda: ordo.reduce_scatter(ordo.REDUCE_SUM, x, scale, 0, 1), TypeError, "scale must be a real number")


@pytest.mark.parametrize("world", [1], indirect=True)
def test_real_scales_of_every_kind_work(world):
    x = ordo.tensor([1.0, 2.0])
    for scale in (2, 2.0, np.float32(2), np.int64(2), fractions.Fraction(2)):
        check(ordo.all_reduce(ordo.REDUCE_SUM, x, scale=scale), np.array([2.0, 4.0], np.float32))
