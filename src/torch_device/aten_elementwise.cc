// Elementwise ops: torch's type promotion (at::result_type), then ordo's op
// on operands of that dtype.
#include <ATen/ExpandUtils.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/in_place_values.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

using BinaryOp = ordo::Tensor (*)(const ordo::Tensor&, const ordo::Tensor&, ordo::Caller);

struct Pair {
  ordo::Tensor a, b;
  DType dtype;
};

// at::result_type, without its trip through the dispatcher in the cases
// that decide themselves: operands of one dtype, or a floating tensor and
// a real number (as a Scalar, or wrapped in a 0-d tensor, as torch passes
// `t * 0.5`).
at::ScalarType promoted_type(const at::Tensor& self, const at::Tensor& other) {
  if (self.scalar_type() == other.scalar_type()) return self.scalar_type();
  if (other.unsafeGetTensorImpl()->is_wrapped_number() && at::isFloatingType(self.scalar_type()) &&
      !at::isComplexType(other.scalar_type())) {
    return self.scalar_type();
  }
  return at::result_type(self, other);
}
at::ScalarType promoted_type(const at::Tensor& self, const at::Scalar& other) {
  return at::isFloatingType(self.scalar_type()) && !other.isComplex() ? self.scalar_type()
                                                                       : at::result_type(self, other);
}

template <typename Other>
Pair promoted(const at::Tensor& self, const Other& other, const char* op) {
  const DType dtype = dtype_of(promoted_type(self, other));
  if constexpr (std::is_same_v<Other, at::Tensor>) {
    const int device = device_of({&self, &other}, op);
    return {operand(self, dtype, device, op), operand(other, dtype, device, op), dtype};
  } else {
    const int device = device_of({&self}, op);
    return {operand(self, dtype, device, op), constant(other, dtype, device), dtype};
  }
}

DType floating(DType dtype) { return is_floating(dtype) ? dtype : DType::kFloat32; }

template <BinaryOp kOp, typename Other>
ordo::Tensor binary_value(const at::Tensor& self, const Other& other) {
  Pair p = promoted(self, other, "binary op");
  return kOp(p.a, p.b, ordo::Caller::current());
}
template <BinaryOp kOp, typename Other>
at::Tensor binary(const at::Tensor& self, const Other& other) {
  return make_xla(binary_value<kOp>(self, other));
}

ordo::Tensor scaled(const ordo::Tensor& value, const at::Scalar& alpha) {
  if (alpha.equal(1)) return value;
  return ordo::mul(value, constant(alpha, value.dtype(), value.device()));
}

// Each takes other as a tensor or a number (the .Tensor and .Scalar overloads).
// On bools torch's sum is a logical or and its product a logical and
// (ordo's own add and mul refuse two bools).
template <typename Other>
ordo::Tensor add(const at::Tensor& self, const Other& other, const at::Scalar& alpha) {
  Pair p = promoted(self, other, "add");
  at::native::alpha_check(scalar_type_of(p.dtype), alpha);
  if (p.dtype == DType::kBool) return alpha.toBool() ? ordo::logical_or(p.a, p.b) : p.a;
  return ordo::add(p.a, scaled(p.b, alpha));
}
template <typename Other>
ordo::Tensor mul(const at::Tensor& self, const Other& other) {
  Pair p = promoted(self, other, "mul");
  return p.dtype == DType::kBool ? ordo::logical_and(p.a, p.b) : ordo::mul(p.a, p.b);
}
template <typename Other>
ordo::Tensor sub(const at::Tensor& self, const Other& other, const at::Scalar& alpha) {
  Pair p = promoted(self, other, "sub");
  at::native::alpha_check(scalar_type_of(p.dtype), alpha);
  return ordo::sub(p.a, scaled(p.b, alpha));
}
template <typename Other>
at::Tensor rsub(const at::Tensor& self, const Other& other, const at::Scalar& alpha) {
  Pair p = promoted(self, other, "rsub");
  at::native::alpha_check(scalar_type_of(p.dtype), alpha);
  return make_xla(ordo::sub(p.b, scaled(p.a, alpha)));
}
template <typename Other>
ordo::Tensor div(const at::Tensor& self, const Other& other) {
  Pair p = promoted(self, other, "div");
  const DType dtype = floating(p.dtype);
  return ordo::div(cast_to(p.a, dtype), cast_to(p.b, dtype));
}

at::Tensor pow_scalar_exponent(const at::Tensor& self, const at::Scalar& exponent) {
  Pair p = promoted(self, exponent, "pow");
  if (exponent.equal(2)) return make_xla(ordo::mul(p.a, p.a));
  if (exponent.equal(1)) return make_xla(p.a);
  if (exponent.equal(0.5) && is_floating(p.dtype)) return make_xla(ordo::sqrt(p.a));
  return make_xla(ordo::pow(p.a, p.b));
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const int device = device_of({&condition, &self, &other}, "where");
  const DType dtype = dtype_of(at::result_type(self, other));
  return make_xla(ordo::where(operand(condition, DType::kBool, device, "where"), operand(self, dtype, device, "where"),
                              operand(other, dtype, device, "where")));
}

using UnaryOp = ordo::Tensor (*)(const ordo::Tensor&, ordo::Caller);

template <UnaryOp kOp>
at::Tensor unary(const at::Tensor& self) {
  return make_xla(kOp(value_of(self, "unary op"), ordo::Caller::current()));
}

// Ops whose integer inputs compute in the default float dtype, as torch's.
template <UnaryOp kOp>
at::Tensor unary_floating(const at::Tensor& self) {
  const ordo::Tensor& x = value_of(self, "unary op");
  return make_xla(kOp(cast_to(x, floating(x.dtype())), ordo::Caller::current()));
}

at::Tensor reciprocal(const at::Tensor& self) {
  const ordo::Tensor& x = value_of(self, "reciprocal");
  ordo::Tensor xf = cast_to(x, floating(x.dtype()));
  return make_xla(ordo::div(ordo::full({}, 1.0, xf.dtype(), xf.device()), xf));
}

at::Tensor logical_not(const at::Tensor& self) {
  return make_xla(ordo::logical_not(cast_to(value_of(self, "logical_not"), DType::kBool)));
}

template <BinaryOp kOp>
at::Tensor logical(const at::Tensor& self, const at::Tensor& other) {
  const int device = device_of({&self, &other}, "logical op");
  return make_xla(kOp(operand(self, DType::kBool, device, "logical op"),
                      operand(other, DType::kBool, device, "logical op"), ordo::Caller::current()));
}

at::Tensor clamp(const at::Tensor& self, const c10::optional<at::Scalar>& min, const c10::optional<at::Scalar>& max) {
  const ordo::Tensor& x = value_of(self, "clamp");
  std::optional<ordo::Scalar> lo, hi;
  if (min.has_value()) lo = scalar_of(*min);
  if (max.has_value()) hi = scalar_of(*max);
  return make_xla(ordo::clamp(x, lo, hi));
}

at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& threshold) {
  Pair p = promoted(grad_output, self, "threshold_backward");
  // torch's rule: 0 where x <= threshold, else the gradient (a NaN x keeps it).
  ordo::Tensor drop = ordo::le(p.b, constant(threshold, p.dtype, p.b.device()));
  return make_xla(ordo::where(drop, ordo::zeros({}, p.dtype, p.a.device()), p.a));
}

// d tanh = g * (1 - y^2), d sigmoid = g * y * (1 - y), from the output y.
at::Tensor tanh_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  Pair p = promoted(grad_output, output, "tanh_backward");
  ordo::Tensor one = ordo::ones({}, p.dtype, p.a.device());
  return make_xla(ordo::mul(p.a, ordo::sub(one, ordo::mul(p.b, p.b))));
}
at::Tensor sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  Pair p = promoted(grad_output, output, "sigmoid_backward");
  ordo::Tensor one = ordo::ones({}, p.dtype, p.a.device());
  return make_xla(ordo::mul(p.a, ordo::mul(p.b, ordo::sub(one, p.b))));
}

// self + weight * (end - self)
at::Tensor lerp(const at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
  Pair p = promoted(self, end, "lerp");
  return make_xla(ordo::add(p.a, scaled(ordo::sub(p.b, p.a), weight)));
}
at::Tensor masked_fill(const at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  const ordo::Tensor& x = value_of(self, "masked_fill");
  return make_xla(ordo::where(operand(mask, DType::kBool, x.device(), "masked_fill"),
                              constant(value, x.dtype(), x.device()), x));
}
at::Tensor sign(const at::Tensor& self) {
  const ordo::Tensor& x = value_of(self, "sign");
  ordo::Tensor zero = ordo::zeros({}, x.dtype(), x.device());
  return make_xla(ordo::sub(ordo::cast(ordo::gt(x, zero), x.dtype()), ordo::cast(ordo::lt(x, zero), x.dtype())));
}

// A NaN is the one value unequal to itself (integers never are).
at::Tensor isnan(const at::Tensor& self) {
  const ordo::Tensor& x = value_of(self, "isnan");
  return make_xla(ordo::ne(x, x));
}

// A kernel returning the value kValue computes as a tensor.
template <auto kValue>
struct Kernel;
template <class... Args, ordo::Tensor (*kValue)(Args...)>
struct Kernel<kValue> {
  static at::Tensor as_xla(Args... args) { return make_xla(kValue(args...)); }
};

template <auto kValue>
constexpr auto kernel = TORCH_FN(Kernel<kValue>::as_xla);

}  // namespace

namespace in_place_values {

ordo::Tensor add_Tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return torch_device::add(self, other, alpha);
}
ordo::Tensor add_Scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return torch_device::add(self, other, alpha);
}
ordo::Tensor sub_Tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return torch_device::sub(self, other, alpha);
}
ordo::Tensor sub_Scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return torch_device::sub(self, other, alpha);
}
ordo::Tensor mul_Tensor(const at::Tensor& self, const at::Tensor& other) { return torch_device::mul(self, other); }
ordo::Tensor mul_Scalar(const at::Tensor& self, const at::Scalar& other) { return torch_device::mul(self, other); }
ordo::Tensor div_Tensor(const at::Tensor& self, const at::Tensor& other) { return torch_device::div(self, other); }
ordo::Tensor div_Scalar(const at::Tensor& self, const at::Scalar& other) { return torch_device::div(self, other); }
// self + value * t1 * t2 and self + value * t1 / t2: Adam's updates.
ordo::Tensor addcmul(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  const int device = device_of({&self, &t1, &t2}, "addcmul");
  const DType dtype = dtype_of(at::native::result_type({self, t1, t2}));
  ordo::Tensor product = ordo::mul(operand(t1, dtype, device, "addcmul"), operand(t2, dtype, device, "addcmul"));
  return ordo::add(operand(self, dtype, device, "addcmul"), scaled(product, value));
}
ordo::Tensor addcdiv(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  const int device = device_of({&self, &t1, &t2}, "addcdiv");
  TORCH_CHECK(!at::isIntegralType(t1.scalar_type(), true) || !at::isIntegralType(t2.scalar_type(), true),
              "addcdiv: tensor1 and tensor2 are both integers; torch refuses integer division here "
              "(use tensor1 / tensor2 with the rounding_mode you mean, or floating tensors)");
  const DType dtype = dtype_of(at::native::result_type({self, t1, t2}));
  ordo::Tensor quotient = ordo::div(operand(t1, dtype, device, "addcdiv"), operand(t2, dtype, device, "addcdiv"));
  return ordo::add(operand(self, dtype, device, "addcdiv"), scaled(quotient, value));
}

}  // namespace in_place_values

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("add.Tensor", kernel<in_place_values::add_Tensor>);
  m.impl("add.Scalar", kernel<in_place_values::add_Scalar>);
  m.impl("sub.Tensor", kernel<in_place_values::sub_Tensor>);
  m.impl("sub.Scalar", kernel<in_place_values::sub_Scalar>);
  m.impl("rsub.Tensor", TORCH_FN(rsub<at::Tensor>));
  m.impl("rsub.Scalar", TORCH_FN(rsub<at::Scalar>));
  m.impl("mul.Tensor", kernel<in_place_values::mul_Tensor>);
  m.impl("mul.Scalar", kernel<in_place_values::mul_Scalar>);
  m.impl("div.Tensor", kernel<in_place_values::div_Tensor>);
  m.impl("div.Scalar", kernel<in_place_values::div_Scalar>);
  m.impl("pow.Tensor_Tensor", TORCH_FN((binary<ordo::pow, at::Tensor>)));
  m.impl("pow.Tensor_Scalar", TORCH_FN(pow_scalar_exponent));
  m.impl("maximum", TORCH_FN((binary<ordo::maximum, at::Tensor>)));
  m.impl("minimum", TORCH_FN((binary<ordo::minimum, at::Tensor>)));
  m.impl("eq.Tensor", TORCH_FN((binary<ordo::eq, at::Tensor>)));
  m.impl("eq.Scalar", TORCH_FN((binary<ordo::eq, at::Scalar>)));
  m.impl("ne.Tensor", TORCH_FN((binary<ordo::ne, at::Tensor>)));
  m.impl("ne.Scalar", TORCH_FN((binary<ordo::ne, at::Scalar>)));
  m.impl("lt.Tensor", TORCH_FN((binary<ordo::lt, at::Tensor>)));
  m.impl("lt.Scalar", TORCH_FN((binary<ordo::lt, at::Scalar>)));
  m.impl("le.Tensor", TORCH_FN((binary<ordo::le, at::Tensor>)));
  m.impl("le.Scalar", TORCH_FN((binary<ordo::le, at::Scalar>)));
  m.impl("gt.Tensor", TORCH_FN((binary<ordo::gt, at::Tensor>)));
  m.impl("gt.Scalar", TORCH_FN((binary<ordo::gt, at::Scalar>)));
  m.impl("ge.Tensor", TORCH_FN((binary<ordo::ge, at::Tensor>)));
  m.impl("ge.Scalar", TORCH_FN((binary<ordo::ge, at::Scalar>)));
  m.impl("logical_and", TORCH_FN(logical<ordo::logical_and>));
  m.impl("logical_or", TORCH_FN(logical<ordo::logical_or>));
  m.impl("logical_not", TORCH_FN(logical_not));
  m.impl("where.self", TORCH_FN(where));
  m.impl("neg", TORCH_FN(unary<ordo::neg>));
  m.impl("abs", TORCH_FN(unary<ordo::abs>));
  m.impl("relu", TORCH_FN(unary<ordo::relu>));
  m.impl("exp", TORCH_FN(unary_floating<ordo::exp>));
  m.impl("log", TORCH_FN(unary_floating<ordo::log>));
  m.impl("sqrt", TORCH_FN(unary_floating<ordo::sqrt>));
  m.impl("rsqrt", TORCH_FN(unary_floating<ordo::rsqrt>));
  m.impl("tanh", TORCH_FN(unary_floating<ordo::tanh>));
  m.impl("sigmoid", TORCH_FN(unary_floating<ordo::sigmoid>));
  m.impl("erf", TORCH_FN(unary_floating<ordo::erf>));
  m.impl("reciprocal", TORCH_FN(reciprocal));
  m.impl("clamp", TORCH_FN(clamp));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("tanh_backward", TORCH_FN(tanh_backward));
  m.impl("sigmoid_backward", TORCH_FN(sigmoid_backward));
  m.impl("addcmul", kernel<in_place_values::addcmul>);
  m.impl("addcdiv", kernel<in_place_values::addcdiv>);
  m.impl("lerp.Scalar", TORCH_FN(lerp));
  m.impl("masked_fill.Scalar", TORCH_FN(masked_fill));
  m.impl("sign", TORCH_FN(sign));
  m.impl("sgn", TORCH_FN(sign));  // real tensors: the sign
  m.impl("isnan", TORCH_FN(isnan));
}

}  // namespace ordo::torch_device
