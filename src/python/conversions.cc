// How Python values become ordo values, in one place: numpy arrays become
// tensors (native byte order, dense, integer types ordo lacks widened),
// Python and numpy numbers become scalars with numpy 2's range checks, and
// the operands of operators and op functions become tensors by one rule.
#include <bit>
#include <limits>

#include "python/module.h"
#include "runtime/runtime.h"

namespace ordo::python {
namespace {

// ---- numpy arrays ----

// The ordo dtype an array's values are stored in: its own, or for an
// integer type ordo lacks the ordo type that holds every value of it
// (uint64 as int64, checked by the caller).
DType array_dtype(const py::dtype& dtype) {
  const auto size = dtype.itemsize();
  switch (dtype.kind()) {
    case 'b':
      return DType::kBool;
    case 'i':
      return size <= 4 ? DType::kInt32 : DType::kInt64;
    case 'u':
      return size <= 2 ? DType::kInt32 : DType::kInt64;
    case 'f':
      if (size == 2) return DType::kFloat16;
      if (size == 4) return DType::kFloat32;
      if (size == 8) return DType::kFloat64;
      break;
    default:
      break;
  }
  throw DTypeError(str_cat("ordo has no dtype for numpy ", py::str(py::handle(dtype)).cast<std::string>(),
                           ": its dtypes are float16, float32, float64, int32, int64 and bool (and bfloat16, "
                           "which numpy lacks; arrays of numpy's other integer types are converted to int32 "
                           "or int64)"));
}

bool native_byte_order(const py::dtype& dtype) {
  constexpr char kNative = std::endian::native == std::endian::little ? '<' : '>';
  const char order = dtype.byteorder();
  return order == '=' || order == '|' || order == kNative;
}

// Ints beyond 4300 digits have no str() by default in Python 3.11.
std::string integer_text(const py::object& integer) {
  PyObject* text = PyObject_Str(integer.ptr());
  if (text != nullptr) return py::reinterpret_steal<py::str>(text).cast<std::string>();
  PyErr_Clear();
  return str_cat("of ", integer.attr("bit_length")().cast<int64_t>(), " bits");
}

// uint64 arrays are stored as int64: a value above 2^63 - 1 would wrap.
void check_uint64_fits_int64(const py::array& array) {
  if (array.size() == 0) return;
  const py::int_ largest(array.attr("max")());
  if (largest > py::int_(std::numeric_limits<int64_t>::max())) {
    throw OutOfRange(str_cat("numpy uint64 value ", integer_text(largest),
                             " out of bounds for int64 (ordo stores uint64 arrays as int64)"));
  }
}

// ---- numbers ----

// A real number given from Python: a bool, an int (Python's, numpy's, or
// anything with __index__) or a float (Python's, numpy's, or anything else
// with __float__ that is not complex).
struct Number {
  enum class Kind { kBool, kInt, kFloat } kind;
  Scalar value;        // for a wide int, 0 (use `integer`)
  bool wide = false;   // an int outside int64
  py::object integer;  // the int itself, for wide values and messages
  const char* type_name;
};

Number integer_number(py::object integer, const char* type_name) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
  if (overflow == 0 && v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return {Number::Kind::kInt, Scalar(static_cast<int64_t>(overflow == 0 ? v : 0)), overflow != 0,
          std::move(integer), type_name};
}

Number float_number(py::handle value) {
  const double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return {Number::Kind::kFloat, Scalar(v), false, {}, Py_TYPE(value.ptr())->tp_name};
}

Number index_number(py::handle value) {
  PyObject* integer = PyNumber_Index(value.ptr());
  if (integer == nullptr) throw py::error_already_set();
  return integer_number(py::reinterpret_steal<py::object>(integer), Py_TYPE(value.ptr())->tp_name);
}

bool is_numpy_scalar(py::handle value) {
  static PyObject* const generic = py::object(py::module_::import("numpy").attr("generic")).release().ptr();
  const int result = PyObject_IsInstance(value.ptr(), generic);
  if (result < 0) throw py::error_already_set();
  return result == 1;
}

std::optional<Number> real_number(py::handle value) {
  PyObject* object = value.ptr();
  const char* const name = Py_TYPE(object)->tp_name;
  if (PyFloat_Check(object)) return Number{Number::Kind::kFloat, Scalar(PyFloat_AS_DOUBLE(object)), false, {}, name};
  if (PyBool_Check(object)) return Number{Number::Kind::kBool, Scalar(object == Py_True), false, {}, name};
  if (PyLong_Check(object)) {
    return integer_number(py::reinterpret_borrow<py::object>(value),
                          PyLong_CheckExact(object) ? "Python integer" : name);
  }
  if (py::isinstance<Tensor>(value) || py::isinstance<py::array>(value) || PyComplex_Check(object)) {
    return std::nullopt;
  }
  if (is_numpy_scalar(value)) {
    const py::object dtype = value.attr("dtype");
    switch (py::reinterpret_borrow<py::dtype>(dtype).kind()) {
      case 'b':
        return Number{Number::Kind::kBool, Scalar(PyObject_IsTrue(object) == 1), false, {}, name};
      case 'i':
      case 'u':
        return index_number(value);
      case 'f':
        return float_number(value);
      default:
        return std::nullopt;  // complex, dates, strings, objects
    }
  }
  if (PyIndex_Check(object)) return index_number(value);
  const PyNumberMethods* number = Py_TYPE(object)->tp_as_number;
  if (number != nullptr && number->nb_float != nullptr) return float_number(value);
  return std::nullopt;
}

std::string type_name(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// n as a value of dtype, checked as numpy 2 checks Python ints: an int
// beyond int64 becomes a float for a float dtype; any int must fit an
// integer dtype. Floats are checked where they are stored (ordo::full).
Scalar scalar_for(std::string_view what, const Number& n, DType dtype) {
  if (n.kind != Number::Kind::kInt) return n.value;
  if (!n.wide && n.value.fits(dtype)) return n.value;
  if (n.wide && dtype == DType::kBool) return Scalar(true);  // a wide int is not 0
  if (n.wide && is_floating(dtype)) {
    const double v = PyLong_AsDouble(n.integer.ptr());
    if (!(v == -1.0 && PyErr_Occurred())) return Scalar(v);
    PyErr_Clear();  // beyond the largest double
  }
  throw OutOfRange(str_cat(what, ": ", n.type_name, " ", integer_text(n.integer), " out of bounds for ",
                           dtype_name(dtype)));
}

// n as a 0-d tensor on device: next to `like` it takes the dtype
// scalar_dtype gives (a float tensor makes an int a float), alone its own
// default dtype. Compared with an integer tensor, an int that does not fit
// its dtype compares exactly in int64 instead (numpy 2: int32 == 2**40 is
// false, not an error).
Tensor number_tensor(std::string_view what, const Number& n, const Tensor* like, int device, ScalarRule rule) {
  DType dtype = like != nullptr ? scalar_dtype(n.value, like->dtype()) : n.value.default_dtype();
  if (rule == ScalarRule::kComparison && n.kind == Number::Kind::kInt && is_integral(dtype) &&
      (n.wide || !n.value.fits(dtype))) {
    dtype = DType::kInt64;
  }
  return full({}, scalar_for(what, n, dtype), dtype, device, kPythonCaller);
}

[[noreturn]] void throw_not_an_operand(std::string_view what, py::handle value) {
  throw DTypeError(str_cat(what, ": cannot take an operand of type ", type_name(value),
                           "; expected an ordo.Tensor, a numpy array or a real number"));
}

// numpy has no bfloat16: ordo.bfloat16 is this class's one instance.
struct BFloat16DType {};

}  // namespace

void bind_dtypes(py::module_& m) {
  py::class_<BFloat16DType>(m, "BFloat16DType", "ordo.bfloat16: numpy has no bfloat16 dtype.")
      .def_property_readonly("name", [](const BFloat16DType&) { return "bfloat16"; })
      .def_property_readonly("itemsize", [](const BFloat16DType&) { return 2; })
      .def_property_readonly("kind", [](const BFloat16DType&) { return "f"; })
      .def("__repr__", [](const BFloat16DType&) { return "ordo.bfloat16"; })
      .def("__str__", [](const BFloat16DType&) { return "bfloat16"; })
      .def("__eq__", [](const BFloat16DType&, py::handle other) {
        return py::isinstance<BFloat16DType>(other) || (py::isinstance<py::str>(other) && other.cast<std::string>() == "bfloat16");
      })
      .def("__hash__", [](const BFloat16DType&) { return py::hash(py::str("bfloat16")); });
  m.attr("bfloat16") = BFloat16DType{};
}

DType dtype_argument(py::handle dtype) {
  if (py::isinstance<BFloat16DType>(dtype)) return DType::kBFloat16;
  if (py::isinstance<py::str>(dtype) && dtype.cast<std::string>() == "bfloat16") return DType::kBFloat16;
  return dtype_from_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype)));
}

py::object dtype_object(DType dtype) {
  if (dtype == DType::kBFloat16) return py::module_::import("ordo._C").attr("bfloat16");
  return numpy_dtype(dtype);
}

DType dtype_from_numpy(const py::dtype& dtype) {
  switch (dtype.kind()) {
    case 'b':
      return DType::kBool;
    case 'f':
      if (dtype.itemsize() == 2) return DType::kFloat16;
      if (dtype.itemsize() == 4) return DType::kFloat32;
      if (dtype.itemsize() == 8) return DType::kFloat64;
      break;
    case 'i':
      if (dtype.itemsize() == 4) return DType::kInt32;
      if (dtype.itemsize() == 8) return DType::kInt64;
      break;
    default:
      break;
  }
  throw DTypeError(str_cat("numpy dtype ", py::str(py::handle(dtype)).cast<std::string>(),
                           " has no ordo dtype (float16, float32, float64, int32, int64, bool; bfloat16 is ordo.bfloat16)"));
}

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
    case DType::kFloat16: return py::dtype("float16");
    // Held as float32 on the numpy side (exact): numpy has no bfloat16.
    case DType::kBFloat16: return py::dtype::of<float>();
  }
  throw InternalError("numpy_dtype: unknown dtype");
}

Tensor tensor_from_array(const py::array& source, int device) {
  const py::dtype given = source.dtype();
  const DType dtype = array_dtype(given);
  if (given.kind() == 'u' && given.itemsize() == 8) check_uint64_fits_int64(source);
  const py::dtype stored = numpy_dtype(dtype);
  py::array array = source;
  if (given.kind() != stored.kind() || given.itemsize() != stored.itemsize() || !native_byte_order(given) ||
      !(source.flags() & py::array::c_style)) {
    // astype, not ascontiguousarray, which makes a 0-d array 1-d.
    array = py::array(source.attr("astype")(stored, py::arg("order") = "C"));
  }
  Shape shape(array.shape(), array.shape() + array.ndim());
  return from_host(array.data(), dtype, shape, device, kPythonCaller);
}

Scalar scalar_argument(std::string_view what, py::handle value, DType dtype) {
  const std::optional<Number> n = real_number(value);
  if (!n) throw DTypeError(str_cat(what, ": expected a real number, got ", type_name(value)));
  return scalar_for(what, *n, dtype);
}

int64_t integer_argument(std::string_view what, py::handle value) {
  const std::optional<Number> n = real_number(value);
  if (!n || n->kind != Number::Kind::kInt) {
    throw DTypeError(str_cat(what, ": expected an integer, got ", type_name(value)));
  }
  return scalar_for(what, *n, DType::kInt64).to_int();
}

std::optional<Tensor> tensor_or_array(py::handle value, int device) {
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  if (py::isinstance<py::array>(value)) return tensor_from_array(py::reinterpret_borrow<py::array>(value), device);
  return std::nullopt;
}

std::optional<Tensor> operand_for(std::string_view what, py::handle value, const Tensor& like, ScalarRule rule) {
  // Numbers first: t * 2.0 is the common case.
  if (const std::optional<Number> n = real_number(value)) return number_tensor(what, *n, &like, like.device(), rule);
  if (std::optional<Tensor> tensor = tensor_or_array(value, like.device())) return tensor;
  // A numpy scalar would defer back to the tensor (__array_priority__) and
  // Python would raise naming no op: say what is wrong here.
  if (is_numpy_scalar(value)) throw_not_an_operand(what, value);
  return std::nullopt;
}

std::pair<Tensor, Tensor> operand_pair(std::string_view what, py::handle a, py::handle b, ScalarRule rule,
                                       std::optional<int> device) {
  // Arrays go where a tensor operand is.
  if (py::isinstance<Tensor>(a)) {
    device = a.cast<const Tensor&>().device();
  } else if (py::isinstance<Tensor>(b)) {
    device = b.cast<const Tensor&>().device();
  }
  std::optional<Tensor> ta = tensor_or_array(a, device.value_or(runtime::kCurrentDevice));
  std::optional<Tensor> tb = tensor_or_array(b, device.value_or(runtime::kCurrentDevice));
  if (!ta && !tb && !device) {
    throw DTypeError(str_cat(what, ": expected an ordo.Tensor or a numpy array among the operands, got ",
                             type_name(a), " and ", type_name(b)));
  }
  const int on = ta ? ta->device() : tb ? tb->device() : *device;
  if (!ta) {
    const std::optional<Number> n = real_number(a);
    if (!n) throw_not_an_operand(what, a);
    ta = number_tensor(what, *n, tb ? &*tb : nullptr, on, rule);
  }
  if (!tb) {
    const std::optional<Number> n = real_number(b);
    if (!n) throw_not_an_operand(what, b);
    tb = number_tensor(what, *n, &*ta, on, rule);
  }
  return {std::move(*ta), std::move(*tb)};
}

void check_integer_exponent(const Tensor& base, py::handle exponent) {
  if (is_floating(base.dtype())) return;
  const std::optional<Number> n = real_number(exponent);
  if (n && n->kind == Number::Kind::kInt && (n->wide ? n->integer < py::int_(0) : n->value.to_int() < 0)) {
    throw InvalidArgument(str_cat("pow: integers to negative integer powers are not allowed (exponent ",
                                  integer_text(n->integer), "); cast to a float dtype first"));
  }
}

}  // namespace ordo::python
