// Builders of elementwise ops: dtype promotion, numpy broadcasting, checks.
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
Tensor unary_float(OpKind op, const Tensor& x) {
  const Tensor& in = defined(ir::op_name(op), x);
  if (is_floating(in.dtype())) return unary(op, in, in.dtype());
  return unary(op, cast(in, DType::kFloat32), DType::kFloat32);
}

Tensor unary_numeric(OpKind op, const Tensor& x) {
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

Tensor arithmetic(OpKind op, const Tensor& a, const Tensor& b) {
  const DType type = promoted(ir::op_name(op), a, b);
  ORDO_DTYPE_CHECK(type != DType::kBool, ir::op_name(op),
                   ": both operands are bool; cast one to a numeric dtype first");
  return binary(op, a, b, type, type);
}

Tensor comparison(OpKind op, const Tensor& a, const Tensor& b) {
  return binary(op, a, b, promoted(ir::op_name(op), a, b), DType::kBool);
}

Tensor logical(OpKind op, const Tensor& a, const Tensor& b) {
  defined(ir::op_name(op), a);
  defined(ir::op_name(op), b);
  return binary(op, a, b, DType::kBool, DType::kBool);
}

}  // namespace

Tensor neg(const Tensor& x) { return unary_numeric(OpKind::kNeg, x); }
Tensor abs(const Tensor& x) { return unary_numeric(OpKind::kAbs, x); }
Tensor relu(const Tensor& x) { return unary_numeric(OpKind::kRelu, x); }
Tensor exp(const Tensor& x) { return unary_float(OpKind::kExp, x); }
Tensor log(const Tensor& x) { return unary_float(OpKind::kLog, x); }
Tensor sqrt(const Tensor& x) { return unary_float(OpKind::kSqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_float(OpKind::kRsqrt, x); }
Tensor tanh(const Tensor& x) { return unary_float(OpKind::kTanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_float(OpKind::kSigmoid, x); }
Tensor erf(const Tensor& x) { return unary_float(OpKind::kErf, x); }
Tensor logical_not(const Tensor& x) {
  return unary(OpKind::kLogicalNot, cast(defined("logical_not", x), DType::kBool), DType::kBool);
}

Tensor cast(const Tensor& x, DType dtype) {
  if (defined("cast", x).dtype() == dtype) return x;
  return unary(OpKind::kCast, x, dtype);
}

Tensor add(const Tensor& a, const Tensor& b) { return arithmetic(OpKind::kAdd, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return arithmetic(OpKind::kSub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return arithmetic(OpKind::kMul, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return arithmetic(OpKind::kPow, a, b); }
Tensor div(const Tensor& a, const Tensor& b) {
  const DType type = promoted("div", a, b);
  const DType out = is_floating(type) ? type : DType::kFloat32;
  return binary(OpKind::kDiv, a, b, out, out);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  const DType type = promoted("maximum", a, b);
  return binary(OpKind::kMaximum, a, b, type, type);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  const DType type = promoted("minimum", a, b);
  return binary(OpKind::kMinimum, a, b, type, type);
}

Tensor eq(const Tensor& a, const Tensor& b) { return comparison(OpKind::kEq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return comparison(OpKind::kNe, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return comparison(OpKind::kLt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return comparison(OpKind::kLe, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return comparison(OpKind::kGt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return comparison(OpKind::kGe, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return logical(OpKind::kLogicalAnd, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return logical(OpKind::kLogicalOr, a, b); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
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

Tensor scalar_like(Scalar value, const Tensor& other) {
  const DType dtype = scalar_dtype(value, defined("scalar operand", other).dtype());
  check_fits("scalar operand", value, dtype);
  return full({}, value, dtype, other.device());
}

}  // namespace ordo
