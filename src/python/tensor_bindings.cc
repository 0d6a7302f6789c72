// The Tensor class: metadata, numpy in and out, operators.
#include <cstring>
#include <optional>

#include "core/half_float.h"
#include "python/module.h"
#include "python/waiting.h"

namespace ordo::python {
namespace {


// numpy has no bfloat16: its values come as float32, widened exactly.
py::array to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(numpy_dtype(t.dtype()), shape);
  void* data = out.mutable_data();
  const bool widened = t.dtype() == DType::kBFloat16;
  std::vector<uint16_t> bits(widened ? static_cast<size_t>(t.numel()) : 0);
  const size_t bytes = widened ? bits.size() * sizeof(uint16_t) : static_cast<size_t>(out.nbytes());
  // Reading may wait for a graph to run, and for its collectives' peers.
  wait_interruptibly(t.device(), "reading a value", [&] { t.copy_to_host(widened ? bits.data() : data, bytes); });
  if (widened) widen_rows(DType::kBFloat16, static_cast<float*>(data), bits.data(), t.numel());
  return out;
}

py::array raw_bits(const Tensor& t) {
  ORDO_DTYPE_CHECK(is_half_float(t.dtype()), "_raw_bits: needs a bfloat16 or float16 tensor, got ",
                   dtype_name(t.dtype()));
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(py::dtype::of<uint16_t>(), shape);
  void* data = out.mutable_data();
  const auto bytes = static_cast<size_t>(out.nbytes());
  wait_interruptibly(t.device(), "reading a value", [&] { t.copy_to_host(data, bytes); });
  return out;
}

Tensor from_raw_bits(const py::array& bits, const py::object& dtype, int device) {
  const DType type = dtype_argument(dtype);
  ORDO_DTYPE_CHECK(is_half_float(type), "_from_raw_bits: dtype must be bfloat16 or float16, got ", dtype_name(type));
  ORDO_DTYPE_CHECK(bits.dtype().kind() == 'u' && bits.dtype().itemsize() == 2, "_from_raw_bits: bits must be a uint16 array");
  const auto dense = py::array::ensure(bits, py::array::c_style);
  Shape shape(dense.shape(), dense.shape() + dense.ndim());
  return from_host(dense.data(), type, shape, device, kPythonCaller);
}

// Python's protocol: NotImplemented lets the other operand try, then raises
// "unsupported operand type(s)" naming both types.
template <Tensor (*Op)(const Tensor&, const Tensor&, Caller), bool kReflected, ScalarRule kRule>
py::object apply(const char* what, const Tensor& self, py::handle other) {
  // Not `if constexpr`: GCC 12 with -fsanitize=undefined holds the comparison
  // of two functions' addresses to be no constant expression.
  if (Op == &pow && !kReflected) check_integer_exponent(self, other);
  std::optional<Tensor> that = operand_for(what, other, self, kRule);
  if (!that) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(kReflected ? Op(*that, self, kPythonCaller) : Op(self, *that, kPythonCaller));
}

// `what` names the op in errors.
template <Tensor (*Op)(const Tensor&, const Tensor&, Caller), ScalarRule kRule = ScalarRule::kArithmetic>
void bind_binary(py::class_<Tensor>& cls, const char* what, const char* name, const char* reflected) {
  cls.def(name, [what](const Tensor& self, py::handle other) { return apply<Op, false, kRule>(what, self, other); },
          py::is_operator());
  if (reflected != nullptr) {
    cls.def(reflected,
            [what](const Tensor& self, py::handle other) { return apply<Op, true, kRule>(what, self, other); },
            py::is_operator());
  }
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor");
  // ordo.nn.Parameter subclasses Tensor: Parameter(t) is a second handle
  // to t's value, and _rebind points a handle at another value of any
  // dtype or shape (what Module.to does to keep its parameters' identity).
  cls.def(py::init<const Tensor&>(), py::arg("data"))
      .def("_rebind", [](Tensor& self, const Tensor& other) { self = other; }, py::arg("other"));
  cls.def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("_device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("is_pending", &Tensor::is_pending)
      .def("numpy", &to_numpy, "The value as a new numpy array; waits for it.")
      .def("_assign", &Tensor::assign)
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool requires_grad) { t.set_requires_grad(requires_grad); })
      .def("requires_grad_", [](Tensor& t, bool requires_grad) -> Tensor& { return t.set_requires_grad(requires_grad); },
           py::arg("requires_grad") = true, py::return_value_policy::reference_internal)
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad", [](const Tensor& t) -> py::object {
        Tensor g = t.grad();
        return g.defined() ? py::cast(g) : py::none();
      }, [](Tensor& t, const std::optional<Tensor>& g) { t.set_grad(g ? *g : Tensor()); })
      .def("backward", [](const Tensor& t, const std::optional<Tensor>& gradient) {
        t.backward(gradient ? *gradient : Tensor(), kPythonCaller);
      }, py::arg("gradient") = py::none(), "Accumulates the gradient of this tensor into every leaf's .grad.")
      .def("detach", &Tensor::detach, "The same value, without gradient history.")
      .def("__hash__", [](const Tensor& t) { return std::hash<const void*>()(t.impl().get()); })
      .def("__neg__", [](const Tensor& t) { return neg(t, kPythonCaller); })
      .def("__abs__", [](const Tensor& t) { return abs(t, kPythonCaller); })
      .def("__invert__", [](const Tensor& t) { return logical_not(t, kPythonCaller); });
  bind_binary<add>(cls, "add", "__add__", "__radd__");
  bind_binary<sub>(cls, "sub", "__sub__", "__rsub__");
  bind_binary<mul>(cls, "mul", "__mul__", "__rmul__");
  bind_binary<div>(cls, "div", "__truediv__", "__rtruediv__");
  bind_binary<pow>(cls, "pow", "__pow__", "__rpow__");
  bind_binary<logical_and>(cls, "logical_and", "__and__", "__rand__");
  bind_binary<logical_or>(cls, "logical_or", "__or__", "__ror__");
  bind_binary<matmul>(cls, "matmul", "__matmul__", "__rmatmul__");
  // Python reflects a comparison with a tensor on the right (2 < t is t > 2).
  bind_binary<eq, ScalarRule::kComparison>(cls, "eq", "__eq__", nullptr);
  bind_binary<ne, ScalarRule::kComparison>(cls, "ne", "__ne__", nullptr);
  bind_binary<lt, ScalarRule::kComparison>(cls, "lt", "__lt__", nullptr);
  bind_binary<le, ScalarRule::kComparison>(cls, "le", "__le__", nullptr);
  bind_binary<gt, ScalarRule::kComparison>(cls, "gt", "__gt__", nullptr);
  bind_binary<ge, ScalarRule::kComparison>(cls, "ge", "__ge__", nullptr);
  m.def("from_numpy", &tensor_from_array, py::arg("array"), py::arg("device"),
        "A copy of a numpy array on a device (see ordo.tensor for the dtypes).");
  // The 16-bit floats' bits as they are (numpy has no bfloat16): for
  // checkpoints and bitwise tests.
  cls.def("_raw_bits", &raw_bits, "The bits of a bfloat16 or float16 tensor, as uint16.");
  m.def("_from_raw_bits", &from_raw_bits, py::arg("bits"), py::arg("dtype"), py::arg("device"),
        "A bfloat16 or float16 tensor of the given bits (a uint16 array).");
}

}  // namespace ordo::python
