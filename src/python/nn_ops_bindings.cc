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

// conv1d and conv2d: bias None or a tensor; padding numbers, or
// padding_mode 'same' / 'valid' (python/ordo/nn/functional.py sorts out
// torch's forms).
void bind_conv_ops(py::module_& m) {
  using Conv = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const ConvOptions&, Caller);
  const auto bind = [&m](const char* name, Conv conv) {
    m.def(name, [conv](const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                       std::vector<int64_t> stride, std::vector<int64_t> padding, std::string padding_mode,
                       std::vector<int64_t> dilation, int64_t groups) {
      const ConvOptions options{std::move(stride), std::move(padding), std::move(dilation), groups,
                                std::move(padding_mode)};
      return conv(x, weight, bias.value_or(Tensor()), options, kPythonCaller);
    }, py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
          py::arg("padding_mode"), py::arg("dilation"), py::arg("groups"));
  };
  bind("conv1d", &conv1d);
  bind("conv2d", &conv2d);
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
  bind_conv_ops(m);
}

}  // namespace ordo::python
