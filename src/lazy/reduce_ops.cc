// Builders of reductions.
#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "lazy/shape_inference.h"
#include "lazy/trace.h"

namespace ordo {
namespace {

using ir::OpKind;

Tensor reduce(OpKind op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
              DType out) {
  const std::string_view what = ir::op_name(op);
  const Tensor* in[] = {&x};
  lazy::common_device(what, in);
  std::vector<int64_t> reduced = lazy::normalize_axes(what, axes, x.dim());
  Shape shape = lazy::reduced_shape(x.shape(), reduced, keepdim);
  return lazy::trace1(op, {&x}, {out, std::move(shape)}, ir::encode(op, ir::ReduceAttrs{reduced, keepdim}));
}

// max, min and argmax have no identity: reducing nothing is an error.
void check_not_empty(std::string_view what, const Tensor& x, const std::vector<int64_t>& axes) {
  const std::vector<int64_t> reduced = lazy::normalize_axes(what, axes, x.dim());
  for (int64_t axis : reduced) {
    ORDO_ARG_CHECK(x.shape()[axis] != 0, what, ": axis ", axis, " of shape ",
                   shape_to_string(x.shape()), " is empty, and ", what, " has no identity");
  }
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType out = is_floating(x.dtype()) ? x.dtype() : DType::kInt64;
  return reduce(OpKind::kSum, x, axes, keepdim, out);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  const DType out = is_floating(x.dtype()) ? x.dtype() : DType::kFloat32;
  return reduce(OpKind::kMean, cast(x, out), axes, keepdim, out);
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  check_not_empty("max", x, axes);
  return reduce(OpKind::kMax, x, axes, keepdim, x.dtype());
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  check_not_empty("min", x, axes);
  return reduce(OpKind::kMin, x, axes, keepdim, x.dtype());
}

Tensor argmax(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  check_not_empty("argmax", x, axes);
  return reduce(OpKind::kArgmax, x, axes, keepdim, DType::kInt64);
}

}  // namespace ordo
