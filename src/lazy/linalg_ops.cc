// The matmul builder: numpy.matmul over the kernel's batched 2-D form.
#include "lazy/shape_inference.h"
#include "lazy/trace.h"

namespace ordo {

Tensor matmul(const Tensor& a, const Tensor& b) {
  const Tensor* in[] = {&a, &b};
  lazy::common_device("matmul", in);
  ORDO_ARG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: operands must have rank >= 1, got ",
                 shape_to_string(a.shape()), " and ", shape_to_string(b.shape()));
  const DType type = promote_types(a.dtype(), b.dtype());
  ORDO_DTYPE_CHECK(type != DType::kBool, "matmul: not defined for bool tensors");
  // numpy: a 1-D left operand is a row, a 1-D right operand a column; the
  // added dimension is removed from the result.
  const Tensor lhs = a.dim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
  const Tensor rhs = b.dim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
  const int64_t m = lhs.shape()[lhs.dim() - 2], k = lhs.shape()[lhs.dim() - 1];
  const int64_t k2 = rhs.shape()[rhs.dim() - 2], n = rhs.shape()[rhs.dim() - 1];
  ORDO_ARG_CHECK(k == k2, "matmul: inner dimensions differ: ", shape_to_string(a.shape()), " @ ",
                 shape_to_string(b.shape()));
  Shape batch = lazy::broadcast_shapes("matmul", Shape(lhs.shape().begin(), lhs.shape().end() - 2),
                                       Shape(rhs.shape().begin(), rhs.shape().end() - 2));
  Shape out = batch;
  out.push_back(m);
  out.push_back(n);
  const Tensor cl = cast(lhs, type);
  const Tensor cr = cast(rhs, type);
  Tensor product = lazy::trace1(ir::OpKind::kMatmul, {&cl, &cr}, {type, out});
  if (a.dim() > 1 && b.dim() > 1) return product;
  Shape squeezed = batch;
  if (a.dim() > 1) squeezed.push_back(m);
  if (b.dim() > 1) squeezed.push_back(n);
  return reshape(product, squeezed);
}

}  // namespace ordo
