#include "torch_device/operands.h"

#include <c10/util/Exception.h>

#include "core/half_float.h"
#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"

namespace ordo::torch_device {

ordo::Scalar scalar_of(const c10::Scalar& value) {
  if (value.isBoolean()) return ordo::Scalar(value.toBool());
  if (value.isIntegral(/*includeBool=*/false)) return ordo::Scalar(value.toLong());
  TORCH_CHECK_TYPE(value.isFloatingPoint(), "the xla device (ordo) has no complex numbers");
  return ordo::Scalar(value.toDouble());
}

int device_of(std::initializer_list<const at::Tensor*> tensors, const char* op) {
  int device = -1;
  for (const at::Tensor* t : tensors) {
    if (t == nullptr || !is_xla(*t)) continue;
    const int d = value_of(*t, op).device();
    TORCH_CHECK(device < 0 || device == d, op, ": expected all tensors on one device, got xla:", device,
                " and xla:", d);
    device = d;
  }
  TORCH_CHECK(device >= 0, op, ": no tensor on the xla device among its operands");
  return device;
}

ordo::Tensor cast_to(const ordo::Tensor& value, DType dtype) {
  return value.dtype() == dtype ? value : ordo::cast(value, dtype);
}

namespace {

// Values a program writes as literals (0, 1, -1, 2, 0.5): constants of the
// graph. Every other number is what changes from step to step (a learning
// rate, Adam's step size), so it enters as device data, as torch_xla's
// scalars do: a new value reuses the compiled graph.
bool is_literal(const ordo::Scalar& value) {
  const double v = value.to_double();
  return v == 0 || v == 1 || v == -1 || v == 2 || v == 0.5 || value.is_bool();
}

// A 0-d CPU tensor's number: read in place for the dtypes Python's
// numbers become (torch wraps `t * 0.5`'s 0.5 as a 0-d double tensor),
// where item() would go through the dispatcher.
c10::Scalar number_of(const at::Tensor& scalar) {
  if (scalar.is_cpu()) {
    switch (scalar.scalar_type()) {
      case at::kDouble:
        return *scalar.data_ptr<double>();
      case at::kLong:
        return *scalar.data_ptr<int64_t>();
      case at::kBool:
        return *scalar.data_ptr<bool>();
      default:
        break;
    }
  }
  return scalar.item();
}

}  // namespace

ordo::Tensor constant(const c10::Scalar& value, DType dtype, int device) {
  const ordo::Scalar scalar = scalar_of(value);
  if (is_literal(scalar)) return ordo::full({}, scalar, dtype, device);
  ordo::check_fits("a number", scalar, dtype);
  switch (dtype) {
    case DType::kFloat32: {
      const float v = static_cast<float>(scalar.to_double());
      return ordo::from_host(&v, dtype, {}, device);
    }
    case DType::kFloat64: {
      const double v = scalar.to_double();
      return ordo::from_host(&v, dtype, {}, device);
    }
    case DType::kInt32: {
      const int32_t v = static_cast<int32_t>(scalar.to_int());
      return ordo::from_host(&v, dtype, {}, device);
    }
    case DType::kInt64: {
      const int64_t v = scalar.to_int();
      return ordo::from_host(&v, dtype, {}, device);
    }
    case DType::kBFloat16: {
      const BFloat16 v = float_to_half<BFloat16>(static_cast<float>(scalar.to_double()));
      return ordo::from_host(&v, dtype, {}, device);
    }
    case DType::kFloat16: {
      const Float16 v = float_to_half<Float16>(static_cast<float>(scalar.to_double()));
      return ordo::from_host(&v, dtype, {}, device);
    }
    default:
      return ordo::full({}, scalar, dtype, device);
  }
}

ordo::Tensor operand(const at::Tensor& tensor, DType dtype, int device, const char* op) {
  if (is_xla(tensor)) {
    const ordo::Tensor& value = value_of(tensor, op);
    TORCH_CHECK(value.device() == device, op, ": expected all tensors on one device, got xla:", device,
                " and xla:", value.device());
    return cast_to(value, dtype);
  }
  TORCH_CHECK(tensor.dim() == 0, op, ": expected all tensors on the xla device, got one on ", tensor.device(),
              " with sizes ", tensor.sizes());
  return constant(number_of(tensor), dtype, device);
}

Shape ints_of(c10::SymIntArrayRef sizes) {
  c10::IntArrayRef ints = c10::asIntArrayRefSlow(sizes);
  return Shape(ints.begin(), ints.end());
}

Shape ints_of(c10::IntArrayRef sizes) { return Shape(sizes.begin(), sizes.end()); }

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t bound = std::max<int64_t>(rank, 1);
  TORCH_CHECK_INDEX(dim >= -bound && dim < bound, op, ": dimension ", dim, " out of range for a tensor of rank ",
                    rank);
  return dim < 0 ? dim + bound : dim;
}

std::vector<int64_t> reduced_dims(c10::OptionalIntArrayRef dims, int64_t rank, const char* op) {
  std::vector<int64_t> out;
  if (!dims.has_value() || dims->empty()) return out;
  for (int64_t d : *dims) out.push_back(wrap_dim(d, rank, op));
  // A 0-d tensor's dim 0 (or -1) is the tensor itself: nothing to reduce.
  if (rank == 0) out.clear();
  return out;
}

std::vector<int64_t> inverse_order(const std::vector<int64_t>& order) {
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i) back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return back;
}

}  // namespace ordo::torch_device
