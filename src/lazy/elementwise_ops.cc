// Builders of elementwise ops: dtype promotion, numpy broadcasting, checks.
#include "core/source_location.h"
#include "lazy/shape_inference.h"
#include "lazy/trace.h"

namespace ordo {
namespace {

using ir::OpKind;

const Tensor& defined(std::string_view what, const Tensor& x) {
  ORDO_ARG_CHECK(x.defined(), what, ": the input tensor is undefined");
  return x;
}

Tensor unary(OpKind op, const Tensor& x, DType out) {
  const Tensor* in[] = {&x};
  lazy::common_device(ir::op_name(op), in);
  return lazy::trace1(op, {&x}, {out, x.shape()});
}

// exp, log, ...: integers and bools compute in float32, like torch.
Tensor unary_float(OpKind op, const Tensor& x, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor& in = defined(ir::op_name(op), x);
  if (is_floating(in.dtype())) return unary(op, in, in.dtype());
  return unary(op, cast(in, DType::kFloat32), DType::kFloat32);
}

Tensor unary_numeric(OpKind op, const Tensor& x, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_DTYPE_CHECK(defined(ir::op_name(op), x).dtype() != DType::kBool, ir::op_name(op),
                   ": not defined for bool tensors");
  return unary(op, x, x.dtype());
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b, DType operand_dtype, DType out) {
  const Tensor* in[] = {&a, &b};
  lazy::common_device(ir::op_name(op), in);
  Shape shape = lazy::broadcast_shapes(ir::op_name(op), a.shape(), b.shape());
  const Tensor ca = cast(a, operand_dtype);
  const Tensor cb = cast(b, operand_dtype);
  return lazy::trace1(op, {&ca, &cb}, {out, std::move(shape)});
}

DType promoted(std::string_view what, const Tensor& a, const Tensor& b) {
  return promote_types(defined(what, a).dtype(), defined(what, b).dtype());
}

Tensor arithmetic(OpKind op, const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType type = promoted(ir::op_name(op), a, b);
  ORDO_DTYPE_CHECK(type != DType::kBool, ir::op_name(op),
                   ": both operands are bool; cast one to a numeric dtype first");
  return binary(op, a, b, type, type);
}

Tensor comparison(OpKind op, const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  return binary(op, a, b, promoted(ir::op_name(op), a, b), DType::kBool);
}

Tensor logical(OpKind op, const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  defined(ir::op_name(op), a);
  defined(ir::op_name(op), b);
  return binary(op, a, b, DType::kBool, DType::kBool);
}

}  // namespace

Tensor neg(const Tensor& x, Caller caller) { return unary_numeric(OpKind::kNeg, x, caller); }
Tensor abs(const Tensor& x, Caller caller) { return unary_numeric(OpKind::kAbs, x, caller); }
Tensor relu(const Tensor& x, Caller caller) { return unary_numeric(OpKind::kRelu, x, caller); }
Tensor exp(const Tensor& x, Caller caller) { return unary_float(OpKind::kExp, x, caller); }
Tensor log(const Tensor& x, Caller caller) { return unary_float(OpKind::kLog, x, caller); }
Tensor sqrt(const Tensor& x, Caller caller) { return unary_float(OpKind::kSqrt, x, caller); }
Tensor rsqrt(const Tensor& x, Caller caller) { return unary_float(OpKind::kRsqrt, x, caller); }
Tensor tanh(const Tensor& x, Caller caller) { return unary_float(OpKind::kTanh, x, caller); }
Tensor sigmoid(const Tensor& x, Caller caller) { return unary_float(OpKind::kSigmoid, x, caller); }
Tensor erf(const Tensor& x, Caller caller) { return unary_float(OpKind::kErf, x, caller); }
Tensor logical_not(const Tensor& x, Caller caller) {
  const ScopedUserLocation here(caller);
  return unary(OpKind::kLogicalNot, cast(defined("logical_not", x), DType::kBool), DType::kBool);
}

Tensor cast(const Tensor& x, DType dtype, Caller caller) {
  const ScopedUserLocation here(caller);
  if (defined("cast", x).dtype() == dtype) return x;
  return unary(OpKind::kCast, x, dtype);
}

Tensor add(const Tensor& a, const Tensor& b, Caller caller) { return arithmetic(OpKind::kAdd, a, b, caller); }
Tensor sub(const Tensor& a, const Tensor& b, Caller caller) { return arithmetic(OpKind::kSub, a, b, caller); }
Tensor mul(const Tensor& a, const Tensor& b, Caller caller) { return arithmetic(OpKind::kMul, a, b, caller); }
Tensor pow(const Tensor& a, const Tensor& b, Caller caller) { return arithmetic(OpKind::kPow, a, b, caller); }
Tensor div(const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType type = promoted("div", a, b);
  const DType out = is_floating(type) ? type : DType::kFloat32;
  return binary(OpKind::kDiv, a, b, out, out);
}
Tensor maximum(const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType type = promoted("maximum", a, b);
  return binary(OpKind::kMaximum, a, b, type, type);
}
Tensor minimum(const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType type = promoted("minimum", a, b);
  return binary(OpKind::kMinimum, a, b, type, type);
}

Tensor eq(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kEq, a, b, caller); }
Tensor ne(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kNe, a, b, caller); }
Tensor lt(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kLt, a, b, caller); }
Tensor le(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kLe, a, b, caller); }
Tensor gt(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kGt, a, b, caller); }
Tensor ge(const Tensor& a, const Tensor& b, Caller caller) { return comparison(OpKind::kGe, a, b, caller); }
Tensor logical_and(const Tensor& a, const Tensor& b, Caller caller) {
  return logical(OpKind::kLogicalAnd, a, b, caller);
}
Tensor logical_or(const Tensor& a, const Tensor& b, Caller caller) {
  return logical(OpKind::kLogicalOr, a, b, caller);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  defined("where", condition);
  const DType type = promoted("where", a, b);
  const Tensor* in[] = {&condition, &a, &b};
  lazy::common_device("where", in);
  Shape shape = lazy::broadcast_shapes(
      "where", lazy::broadcast_shapes("where", condition.shape(), a.shape()), b.shape());
  const Tensor c = cast(condition, DType::kBool);
  const Tensor ca = cast(a, type);
  const Tensor cb = cast(b, type);
  return lazy::trace1(OpKind::kWhere, {&c, &ca, &cb}, {type, std::move(shape)});
}

DType scalar_dtype(Scalar value, DType other) {
  if (value.is_bool() || (value.is_integral() && other != DType::kBool) || is_floating(other)) {
    return other;
  }
  return value.default_dtype();
}

Tensor scalar_like(Scalar value, const Tensor& other, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType dtype = scalar_dtype(value, defined("scalar operand", other).dtype());
  check_fits("scalar operand", value, dtype);
  return full({}, value, dtype, other.device());
}

// The operators: the expression's line is the caller of every op they make.
Tensor operator-(TensorOperand x) { return neg(x.tensor, x.caller); }
Tensor operator+(TensorOperand a, const Tensor& b) { return add(a.tensor, b, a.caller); }
Tensor operator-(TensorOperand a, const Tensor& b) { return sub(a.tensor, b, a.caller); }
Tensor operator*(TensorOperand a, const Tensor& b) { return mul(a.tensor, b, a.caller); }
Tensor operator/(TensorOperand a, const Tensor& b) { return div(a.tensor, b, a.caller); }
Tensor operator+(TensorOperand a, Scalar b) {
  return add(a.tensor, scalar_like(b, a.tensor, a.caller), a.caller);
}
Tensor operator-(TensorOperand a, Scalar b) {
  return sub(a.tensor, scalar_like(b, a.tensor, a.caller), a.caller);
}
Tensor operator*(TensorOperand a, Scalar b) {
  return mul(a.tensor, scalar_like(b, a.tensor, a.caller), a.caller);
}
Tensor operator/(TensorOperand a, Scalar b) {
  return div(a.tensor, scalar_like(b, a.tensor, a.caller), a.caller);
}
Tensor operator+(Scalar a, TensorOperand b) {
  return add(scalar_like(a, b.tensor, b.caller), b.tensor, b.caller);
}
Tensor operator-(Scalar a, TensorOperand b) {
  return sub(scalar_like(a, b.tensor, b.caller), b.tensor, b.caller);
}
Tensor operator*(Scalar a, TensorOperand b) {
  return mul(scalar_like(a, b.tensor, b.caller), b.tensor, b.caller);
}
Tensor operator/(Scalar a, TensorOperand b) {
  return div(scalar_like(a, b.tensor, b.caller), b.tensor, b.caller);
}

}  // namespace ordo
