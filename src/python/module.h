// The ordo._C extension: converts values and translates errors, nothing
// more. The Python API (python/ordo) is built on it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ordo/ordo.h"

namespace ordo::python {

namespace py = pybind11;

// The Caller the bindings pass to ops: no C++ line, since the user's line is
// the calling Python frame, which IR debug reads itself (source_lines.h).
inline constexpr Caller kPythonCaller{};

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_nn_ops(py::module_& m);
void bind_runtime(py::module_& m);
void bind_spawn(py::module_& m);
void bind_autograd(py::module_& m);
void bind_metrics(py::module_& m);
void bind_source_lines(py::module_& m);
void bind_trace(py::module_& m);

// numpy dtype <-> ordo dtype (for dtype arguments: no conversions).
// numpy has no bfloat16: its numpy_dtype is float32, in which .numpy()
// gives bfloat16 values (exactly).
DType dtype_from_numpy(const py::dtype& dtype);
py::dtype numpy_dtype(DType dtype);
// A dtype argument: a numpy dtype (or what numpy.dtype takes), or
// ordo.bfloat16 (also as the string "bfloat16").
DType dtype_argument(py::handle dtype);
// Tensor.dtype: the numpy dtype, or ordo.bfloat16.
py::object dtype_object(DType dtype);
void bind_dtypes(py::module_& m);

// ---- Python values as ordo values (conversions.cc); everything that takes
// a Python number or a numpy array goes through these. ----

// A copy of a numpy array on device: in native byte order, dense, and with
// numpy's integer types that ordo lacks widened to the ordo type holding
// every value (int8, int16, uint8, uint16 as int32; uint32 as int64; uint64
// as int64 when every value fits, else OutOfRange). Other dtypes (float16,
// complex, strings, objects) are a DTypeError naming the dtype.
Tensor tensor_from_array(const py::array& source, int device);

// A Python or numpy real number as a value of dtype, `what` naming the
// argument in errors: an int must fit an integer dtype (else OutOfRange, as
// numpy 2), a float is checked where it is stored; anything else is a
// DTypeError.
Scalar scalar_argument(std::string_view what, py::handle value, DType dtype);
// A Python or numpy integer that fits int64 (a depth, a count).
int64_t integer_argument(std::string_view what, py::handle value);

// How a number next to a tensor is checked: in arithmetic an int must fit
// the tensor's integer dtype (numpy 2: int32_tensor + 2**32 raises); in a
// comparison one that does not compares exactly in int64 instead.
enum class ScalarRule { kArithmetic, kComparison };

// A tensor as it is, a numpy array as a tensor on device; nothing else.
std::optional<Tensor> tensor_or_array(py::handle value, int device);
// The other operand of an operator of `like`: a tensor, a numpy array (on
// like's device) or a real number (a 0-d tensor of scalar_dtype's dtype);
// nothing for anything else (the operator returns NotImplemented).
std::optional<Tensor> operand_for(std::string_view what, py::handle value, const Tensor& like, ScalarRule rule);
// The two operands of an op function, by operand_for's rules: numbers next
// to the other operand, arrays on a tensor operand's device. At least one
// must be a tensor or an array, unless device says where numbers go alone
// (then each takes its own default dtype). Anything else is a DTypeError.
std::pair<Tensor, Tensor> operand_pair(std::string_view what, py::handle a, py::handle b, ScalarRule rule,
                                       std::optional<int> device = std::nullopt);
// numpy refuses integers to negative integer powers when traced: so does
// pow of an integer or bool base with a negative int exponent (a tensor
// exponent fails when it runs).
void check_integer_exponent(const Tensor& base, py::handle exponent);

}  // namespace ordo::python
