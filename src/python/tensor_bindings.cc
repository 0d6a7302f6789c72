// The Tensor class: metadata, numpy in and out, operators.
#include <cstring>
#include <optional>

#include "python/module.h"
#include "python/waiting.h"

namespace ordo::python {
namespace {

Tensor from_numpy(const py::array& source, int device) {
  const DType dtype = dtype_from_numpy(source.dtype());
  // A C-contiguous array of exactly that dtype (copies only if needed).
  py::array array = py::array::ensure(source, py::array::c_style);
  if (!array) throw py::error_already_set();
  Shape shape(array.shape(), array.shape() + array.ndim());
  return from_host(array.data(), dtype, shape, device);
}

py::array to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(numpy_dtype(t.dtype()), shape);
  void* data = out.mutable_data();
  const size_t bytes = static_cast<size_t>(out.nbytes());
  // Reading may wait for a graph to run, and for its collectives' peers.
  wait_interruptibly(t.device(), "reading a value", [&] { t.copy_to_host(data, bytes); });
  return out;
}

// The other operand of a binary operator: a tensor, or a Python number made
// a 0-d tensor of a fitting dtype; nothing for anything else. One overload
// that dispatches by type is cheaper than letting pybind11 try an overload
// per kind of number.
std::optional<Tensor> operand(const py::handle& value, const Tensor& like) {
  PyObject* object = value.ptr();
  if (PyFloat_Check(object)) return scalar_like(PyFloat_AS_DOUBLE(object), like);
  if (PyBool_Check(object)) return scalar_like(object == Py_True, like);
  if (PyLong_Check(object)) return scalar_like(value.cast<int64_t>(), like);
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  if (PyNumber_Check(object) && !PyUnicode_Check(object)) {
    return scalar_like(value.cast<double>(), like);  // numpy scalars and the like
  }
  return std::nullopt;
}

// Python's protocol: NotImplemented lets the other operand try, then raises
// "unsupported operand type(s)".
template <Tensor (*Op)(const Tensor&, const Tensor&), bool kReflected>
py::object apply(const Tensor& self, const py::handle& other) {
  std::optional<Tensor> that = operand(other, self);
  if (!that) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(kReflected ? Op(*that, self) : Op(self, *that));
}

template <Tensor (*Op)(const Tensor&, const Tensor&)>
void bind_binary(py::class_<Tensor>& cls, const char* name, const char* reflected) {
  cls.def(name, &apply<Op, false>, py::is_operator());
  if (reflected != nullptr) cls.def(reflected, &apply<Op, true>, py::is_operator());
}

}  // namespace

DType dtype_from_numpy(const py::dtype& dtype) {
  switch (dtype.kind()) {
    case 'b':
      return DType::kBool;
    case 'f':
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
                           " has no ordo dtype (float32, float64, int32, int64, bool)"));
}

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
  }
  throw InternalError("numpy_dtype: unknown dtype");
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor");
  cls.def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return numpy_dtype(t.dtype()); })
      .def_property_readonly("_device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("is_pending", &Tensor::is_pending)
      .def("numpy", &to_numpy, "The value as a new numpy array; waits for it.")
      .def("_assign", &Tensor::assign)
      .def("__hash__", [](const Tensor& t) { return std::hash<const void*>()(t.impl().get()); })
      .def("__neg__", [](const Tensor& t) { return neg(t); })
      .def("__abs__", [](const Tensor& t) { return abs(t); })
      .def("__invert__", [](const Tensor& t) { return logical_not(t); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); });
  bind_binary<add>(cls, "__add__", "__radd__");
  bind_binary<sub>(cls, "__sub__", "__rsub__");
  bind_binary<mul>(cls, "__mul__", "__rmul__");
  bind_binary<div>(cls, "__truediv__", "__rtruediv__");
  bind_binary<pow>(cls, "__pow__", "__rpow__");
  bind_binary<logical_and>(cls, "__and__", "__rand__");
  bind_binary<logical_or>(cls, "__or__", "__ror__");
  bind_binary<eq>(cls, "__eq__", nullptr);
  bind_binary<ne>(cls, "__ne__", nullptr);
  bind_binary<lt>(cls, "__lt__", nullptr);
  bind_binary<le>(cls, "__le__", nullptr);
  bind_binary<gt>(cls, "__gt__", nullptr);
  bind_binary<ge>(cls, "__ge__", nullptr);
  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("device"));
}

}  // namespace ordo::python
