// The matmul builder: numpy.matmul over the kernel's batched 2-D form.
#include <algorithm>

#include "core/source_location.h"
#include "lazy/shape_inference.h"
#include "lazy/trace.h"

namespace ordo {

// numpy.matmul. The kernel takes 1-D operands as numpy does (a row on the
// left, a column on the right), so no reshapes are traced around it.
Tensor matmul(const Tensor& a, const Tensor& b, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&a, &b};
  lazy::common_device("matmul", in);
  ORDO_ARG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: operands must have rank >= 1, got ",
                 shape_to_string(a.shape()), " and ", shape_to_string(b.shape()));
  const DType type = promote_types(a.dtype(), b.dtype());
  ORDO_DTYPE_CHECK(type != DType::kBool, "matmul: not defined for bool tensors");
  if (a.dtype() != type || b.dtype() != type) return matmul(cast(a, type), cast(b, type));
  const int64_t k = a.shape().back();
  const int64_t k2 = b.shape()[b.dim() == 1 ? 0 : b.dim() - 2];
  ORDO_ARG_CHECK(k == k2, "matmul: inner dimensions differ: ", shape_to_string(a.shape()), " @ ",
                 shape_to_string(b.shape()));
  Shape out;
  if (a.dim() > 2 || b.dim() > 2) {
    out = lazy::broadcast_shapes("matmul", Shape(a.shape().begin(), a.shape().end() - std::min<int64_t>(a.dim(), 2)),
                                 Shape(b.shape().begin(), b.shape().end() - std::min<int64_t>(b.dim(), 2)));
  }
  if (a.dim() > 1) out.push_back(a.shape()[a.dim() - 2]);
  if (b.dim() > 1) out.push_back(b.shape().back());
  return lazy::trace1(ir::OpKind::kMatmul, {&a, &b}, {type, std::move(out)});
}

}  // namespace ordo
