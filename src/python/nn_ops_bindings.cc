// The ops of ordo/nn_ops.h as module functions; python/ordo/_nn_ops.py gives
// them torch's signatures (dim, keepdim, correction, defaults).
#include "python/module.h"

namespace ordo::python {
namespace {

// A clamp bound: None (absent), a tensor, a numpy array (on x's device) or a
// real number (x's dtype when its kind fits, as an operator's operand).
Tensor clamp_bound(std::string_view which, py::handle bound, const Tensor& x) {
  if (bound.is_none()) return Tensor();
  std::optional<Tensor> tensor = operand_for(which, bound, x, ScalarRule::kArithmetic);
  if (!tensor) {
    throw DTypeError(str_cat(which, " must be None, an ordo.Tensor, a numpy array or a real number, got ",
                             Py_TYPE(bound.ptr())->tp_name));
  }
  return *std::move(tensor);
}

}  // namespace

void bind_nn_ops(py::module_& m) {
  m.def("softmax", [](const Tensor& x, int64_t dim) { return softmax(x, dim, kPythonCaller); }, py::arg("x"),
        py::arg("dim"));
  m.def("log_softmax", [](const Tensor& x, int64_t dim) { return log_softmax(x, dim, kPythonCaller); },
        py::arg("x"), py::arg("dim"));
  m.def("logsumexp", [](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return logsumexp(x, dims, keepdim, kPythonCaller);
  }, py::arg("x"), py::arg("dims"), py::arg("keepdim"));
  m.def("var", [](const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
    return var(x, dims, correction, keepdim, kPythonCaller);
  }, py::arg("x"), py::arg("dims"), py::arg("correction"), py::arg("keepdim"));
  m.def("std", [](const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
    return ordo::std(x, dims, correction, keepdim, kPythonCaller);
  }, py::arg("x"), py::arg("dims"), py::arg("correction"), py::arg("keepdim"));
  m.def("clamp", [](const Tensor& x, py::handle min, py::handle max) {
    return clamp(x, clamp_bound("clamp: min", min, x), clamp_bound("clamp: max", max, x), kPythonCaller);
  }, py::arg("x"), py::arg("min"), py::arg("max"));
  m.def("gelu", [](const Tensor& x, const std::string& approximate) { return gelu(x, approximate, kPythonCaller); },
        py::arg("x"), py::arg("approximate"));
  m.def("random_uniform", [](const Shape& shape, const Tensor& seed, double low, double high,
                             const py::object& dtype) {
    return random_uniform(shape, seed, low, high, dtype_from_numpy(py::dtype::from_args(dtype)), kPythonCaller);
  }, py::arg("shape"), py::arg("seed"), py::arg("low"), py::arg("high"), py::arg("dtype"));
  m.def("dropout", [](const Tensor& x, double p, const Tensor& seed) { return dropout(x, p, seed, kPythonCaller); },
        py::arg("x"), py::arg("p"), py::arg("seed"));
}

}  // namespace ordo::python
