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

using Pair = std::array<int64_t, 2>;

Pool2dWindow pool_window(Pair kernel, Pair stride, Pair padding, Pair dilation, bool ceil_mode) {
  return {kernel, stride, padding, dilation, ceil_mode};
}

// None (undefined) or a tensor; the handle is the Python object's own, so
// that batch_norm's reassignment of a running statistic reaches it.
Tensor* optional_tensor(py::handle value, Tensor& none) {
  return value.is_none() ? &none : &value.cast<Tensor&>();
}

void bind_pool_and_norm(py::module_& m) {
  m.def("max_pool2d", [](const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation, bool ceil_mode) {
    return max_pool2d(x, pool_window(kernel, stride, padding, dilation, ceil_mode), kPythonCaller);
  }, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("ceil_mode"));
  m.def("max_pool2d_with_indices", [](const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation,
                                      bool ceil_mode) {
    return max_pool2d_with_indices(x, pool_window(kernel, stride, padding, dilation, ceil_mode), kPythonCaller);
  }, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("ceil_mode"));
  m.def("avg_pool2d", [](const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
    return avg_pool2d(x, pool_window(kernel, stride, padding, {1, 1}, ceil_mode), count_include_pad,
                      divisor_override, kPythonCaller);
  }, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("ceil_mode"),
        py::arg("count_include_pad"), py::arg("divisor_override"));
  m.def("adaptive_avg_pool2d", [](const Tensor& x, Pair output_size) {
    return adaptive_avg_pool2d(x, output_size, kPythonCaller);
  }, py::arg("x"), py::arg("output_size"));
  m.def("batch_norm_training", [](const Tensor& x, py::handle weight, py::handle bias, double eps) {
    Tensor none;
    BatchNormTraining out = batch_norm_training(x, *optional_tensor(weight, none), *optional_tensor(bias, none), eps,
                                                kPythonCaller);
    return py::make_tuple(out.output, out.mean, out.var);
  }, py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("eps"));
  m.def("batch_norm", [](const Tensor& x, py::handle running_mean, py::handle running_var, py::handle weight,
                         py::handle bias, bool training, double momentum, double eps) {
    Tensor none_mean, none_var, none_weight, none_bias;
    return batch_norm(x, *optional_tensor(running_mean, none_mean), *optional_tensor(running_var, none_var),
                      *optional_tensor(weight, none_weight), *optional_tensor(bias, none_bias), training, momentum,
                      eps, kPythonCaller);
  }, py::arg("x"), py::arg("running_mean"), py::arg("running_var"), py::arg("weight"), py::arg("bias"),
        py::arg("training"), py::arg("momentum"), py::arg("eps"));
}

}  // namespace

void bind_nn_ops(py::module_& m) {
  bind_pool_and_norm(m);
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
    return random_uniform(shape, seed, low, high, dtype_argument(dtype), kPythonCaller);
  }, py::arg("shape"), py::arg("seed"), py::arg("low"), py::arg("high"), py::arg("dtype"));
  m.def("dropout", [](const Tensor& x, double p, const Tensor& seed) { return dropout(x, p, seed, kPythonCaller); },
        py::arg("x"), py::arg("p"), py::arg("seed"));
  bind_conv_ops(m);
}

}  // namespace ordo::python
