// Reductions and products.
#include <cmath>

#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

// torch sums integers and bools in int64 unless told a dtype.
ordo::Tensor summable(const at::Tensor& self, c10::optional<at::ScalarType> dtype, const char* op) {
  const ordo::Tensor& x = value_of(self, op);
  if (dtype.has_value()) return cast_to(x, dtype_of(*dtype));
  return is_floating(x.dtype()) ? x : cast_to(x, DType::kInt64);
}

at::Tensor sum(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
  return make_xla(ordo::sum(summable(self, dtype, "sum")));
}

at::Tensor sum_dims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                    c10::optional<at::ScalarType> dtype) {
  return make_xla(ordo::sum(summable(self, dtype, "sum"), reduced_dims(dims, self.dim(), "sum"), keepdim));
}

ordo::Tensor averageable(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
  const ordo::Tensor& x = value_of(self, "mean");
  const DType target = dtype.has_value() ? dtype_of(*dtype) : x.dtype();
  TORCH_CHECK(is_floating(target), "mean(): could not infer output dtype. Input dtype must be either a floating "
              "point or complex dtype. Got: ", c10::toString(self.scalar_type()));
  return cast_to(x, target);
}

at::Tensor mean(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
  return make_xla(ordo::mean(averageable(self, dtype)));
}

at::Tensor mean_dims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                     c10::optional<at::ScalarType> dtype) {
  return make_xla(ordo::mean(averageable(self, dtype), reduced_dims(dims, self.dim(), "mean"), keepdim));
}

at::Tensor max_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0.");
  return make_xla(ordo::max(value_of(self, "max")));
}
at::Tensor min_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0.");
  return make_xla(ordo::min(value_of(self, "min")));
}
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
  return make_xla(ordo::max(value_of(self, "amax"), reduced_dims(dims, self.dim(), "amax"), keepdim));
}
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
  return make_xla(ordo::min(value_of(self, "amin"), reduced_dims(dims, self.dim(), "amin"), keepdim));
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  const ordo::Tensor& x = value_of(self, "max");
  const std::vector<int64_t> dims{wrap_dim(dim, self.dim(), "max")};
  return {make_xla(ordo::max(x, dims, keepdim)), make_xla(ordo::argmax(x, dims, keepdim))};
}

at::Tensor argmax(const at::Tensor& self, c10::optional<int64_t> dim, bool keepdim) {
  const ordo::Tensor& x = value_of(self, "argmax");
  if (!dim.has_value()) return make_xla(ordo::argmax(ordo::reshape(x, {-1})));
  return make_xla(ordo::argmax(x, {wrap_dim(*dim, self.dim(), "argmax")}, keepdim));
}

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dims, c10::optional<int64_t> correction,
               bool keepdim) {
  return make_xla(ordo::var(value_of(self, "var"), reduced_dims(dims, self.dim(), "var"),
                            static_cast<double>(correction.value_or(1)), keepdim));
}

// torch's vector p-norm over dims (every dim when none): p = 2 squares
// and sums, 1 sums magnitudes, +-inf takes their max or min, 0 counts the
// nonzero entries, any other p sums |x|^p and takes the 1/p-th power.
// clip_grad_norm_ calls it for every gradient at every step.
ordo::Tensor vector_norm(const at::Tensor& self, const c10::optional<at::Scalar>& ord, at::OptionalIntArrayRef dims,
                         bool keepdim, c10::optional<at::ScalarType> dtype, const char* op) {
  const ordo::Tensor& value = value_of(self, op);
  const DType target = dtype.has_value() ? dtype_of(*dtype) : value.dtype();
  TORCH_CHECK(is_floating(target), op, "(): input dtype should be either floating point or complex. Got ",
              c10::toString(dtype.value_or(self.scalar_type())), " instead.");
  const ordo::Tensor x = cast_to(value, target);
  const std::vector<int64_t> axes = reduced_dims(dims, self.dim(), op);
  const double p = ord.has_value() ? ord->toDouble() : 2.0;
  if (p == 2) return ordo::sqrt(ordo::sum(ordo::mul(x, x), axes, keepdim));
  const ordo::Tensor magnitude = ordo::abs(x);
  if (p == 1) return ordo::sum(magnitude, axes, keepdim);
  if (std::isinf(p)) {
    TORCH_CHECK(x.numel() > 0 || !axes.empty(), op, "(): cannot compute the infinity norm of an empty tensor");
    return p > 0 ? ordo::max(magnitude, axes, keepdim) : ordo::min(magnitude, axes, keepdim);
  }
  if (p == 0) return ordo::sum(ordo::cast(ordo::ne(x, constant(0, target, x.device())), target), axes, keepdim);
  const ordo::Tensor powered = ordo::pow(magnitude, constant(p, target, x.device()));
  return ordo::pow(ordo::sum(powered, axes, keepdim), constant(1.0 / p, target, x.device()));
}

at::Tensor norm(const at::Tensor& self, const at::Scalar& p) {
  return make_xla(vector_norm(self, p, c10::nullopt, false, c10::nullopt, "norm"));
}
at::Tensor norm_dims(const at::Tensor& self, const c10::optional<at::Scalar>& p, at::IntArrayRef dims, bool keepdim) {
  return make_xla(vector_norm(self, p, dims, keepdim, c10::nullopt, "norm"));
}
at::Tensor norm_dtype(const at::Tensor& self, const c10::optional<at::Scalar>& p, at::ScalarType dtype) {
  return make_xla(vector_norm(self, p, c10::nullopt, false, dtype, "norm"));
}
at::Tensor norm_dims_dtype(const at::Tensor& self, const c10::optional<at::Scalar>& p, at::IntArrayRef dims,
                           bool keepdim, at::ScalarType dtype) {
  return make_xla(vector_norm(self, p, dims, keepdim, dtype, "norm"));
}
at::Tensor linalg_vector_norm(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dims,
                              bool keepdim, c10::optional<at::ScalarType> dtype) {
  return make_xla(vector_norm(self, ord, dims, keepdim, dtype, "linalg.vector_norm"));
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 2 && other.dim() == 2, "mm: expected 2-D tensors, got ", self.dim(), "-D and ",
              other.dim(), "-D");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", other.scalar_type());
  return make_xla(ordo::matmul(value_of(self, "mm"), value_of(other, "mm")));
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 3 && other.dim() == 3, "bmm: expected 3-D tensors, got ", self.dim(), "-D and ",
              other.dim(), "-D");
  TORCH_CHECK(self.size(0) == other.size(0), "bmm: batch sizes differ: ", self.size(0), " and ", other.size(0));
  return make_xla(ordo::matmul(value_of(self, "bmm"), value_of(other, "bmm")));
}

// beta * self + alpha * (mat1 @ mat2): nn.Linear's forward.
at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  ordo::Tensor product = value_of(mm(mat1, mat2), "addmm");
  const ordo::Tensor& bias = value_of(self, "addmm");
  if (!alpha.equal(1)) product = ordo::mul(product, constant(alpha, product.dtype(), product.device()));
  if (beta.equal(0)) return make_xla(product);
  ordo::Tensor scaled_bias = beta.equal(1) ? bias : ordo::mul(bias, constant(beta, bias.dtype(), bias.device()));
  return make_xla(ordo::add(scaled_bias, product));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("sum", TORCH_FN(sum));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dims));
  m.impl("mean", TORCH_FN(mean));
  m.impl("mean.dim", TORCH_FN(mean_dims));
  m.impl("max", TORCH_FN(max_all));
  m.impl("min", TORCH_FN(min_all));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amin", TORCH_FN(amin));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("var.correction", TORCH_FN(var));
  m.impl("norm.Scalar", TORCH_FN(norm));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dims));
  m.impl("norm.ScalarOpt_dtype", TORCH_FN(norm_dtype));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(norm_dims_dtype));
  m.impl("linalg_vector_norm", TORCH_FN(linalg_vector_norm));
  m.impl("mm", TORCH_FN(mm));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("addmm", TORCH_FN(addmm));
}

}  // namespace ordo::torch_device
