// Builders of random numbers made when the graph runs (RandomUniform) and of
// dropout over them. The seed is an operand, a 0-d int64 tensor: device data
// hashes by type only, so a new seed each step reuses the compiled plan.
#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "lazy/trace.h"
#include "ordo/nn_ops.h"

namespace ordo {
namespace {

void check_seed(std::string_view what, const Tensor& seed) {
  ORDO_ARG_CHECK(seed.defined(), what, ": the seed tensor is undefined");
  ORDO_DTYPE_CHECK(seed.dtype() == DType::kInt64, what, ": the seed must be an int64 tensor, got ",
                   dtype_name(seed.dtype()));
  ORDO_ARG_CHECK(seed.dim() == 0, what, ": the seed must be a 0-d tensor, got shape ",
                 shape_to_string(seed.shape()));
}

}  // namespace

Tensor random_uniform(const Shape& shape, const Tensor& seed, double low, double high, DType dtype, Caller caller) {
  const ScopedUserLocation here(caller);
  check_seed("random_uniform", seed);
  ORDO_DTYPE_CHECK(is_floating(dtype), "random_uniform: dtype must be a float dtype, got ", dtype_name(dtype));
  ORDO_ARG_CHECK(low <= high, "random_uniform: low ", low, " is above high ", high);
  const Tensor* in[] = {&seed};
  lazy::common_device("random_uniform", in);
  return lazy::trace1(ir::OpKind::kRandomUniform, {&seed}, {dtype, shape},
                      ir::encode<ir::OpKind::kRandomUniform>({low, high}));
}

Tensor dropout(const Tensor& x, double p, const Tensor& seed, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_ARG_CHECK(x.defined(), "dropout: the input tensor is undefined");
  ORDO_DTYPE_CHECK(is_floating(x.dtype()), "dropout: needs a float tensor, got ", dtype_name(x.dtype()));
  ORDO_ARG_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  check_seed("dropout", seed);
  const Tensor* in[] = {&x, &seed};
  lazy::common_device("dropout", in);
  if (p == 0) return x;
  if (p == 1) return x * 0.0;  // torch's: nan and inf stay nan
  // torch's order of rounding: the mask scaled by 1 / (1 - p), then the product.
  const Tensor keep = ge(random_uniform(x.shape(), seed, 0.0, 1.0, x.dtype()), scalar_like(p, x));
  return x * (cast(keep, x.dtype()) / (1.0 - p));
}

}  // namespace ordo
