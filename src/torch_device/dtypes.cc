#include "torch_device/dtypes.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

#include "ordo/runtime.h"

namespace ordo::torch_device {

namespace {

// torch_xla's reading of a flag: "true" or "false", else an integer.
bool env_flag(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return false;
  if (std::strcmp(text, "true") == 0) return true;
  if (std::strcmp(text, "false") == 0) return false;
  return std::strtol(text, nullptr, 10) != 0;
}

}  // namespace

bool use_bf16() {
  static const bool flag = env_flag("XLA_USE_BF16");
  return flag;
}

DType held_dtype(DType dtype) { return use_bf16() && dtype == DType::kFloat32 ? DType::kBFloat16 : dtype; }

c10::ScalarType shown_scalar_type_of(DType dtype) {
  return use_bf16() && dtype == DType::kBFloat16 ? c10::ScalarType::Float : scalar_type_of(dtype);
}

c10::ScalarType scalar_type_of(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return c10::ScalarType::BFloat16;
    case DType::kFloat16: return c10::ScalarType::Half;
    case DType::kFloat32: return c10::ScalarType::Float;
    case DType::kFloat64: return c10::ScalarType::Double;
    case DType::kInt32: return c10::ScalarType::Int;
    case DType::kInt64: return c10::ScalarType::Long;
    case DType::kBool: return c10::ScalarType::Bool;
  }
  TORCH_CHECK(false, "ordo dtype ", static_cast<int>(dtype), " has no PyTorch dtype");
}

caffe2::TypeMeta type_meta_of(DType dtype) { return c10::scalarTypeToTypeMeta(scalar_type_of(dtype)); }

bool holds(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Half:
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Bool:
      return true;
    default:
      return false;
  }
}

DType dtype_of(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::BFloat16: return DType::kBFloat16;
    case c10::ScalarType::Half: return DType::kFloat16;
    case c10::ScalarType::Float: return DType::kFloat32;
    case c10::ScalarType::Double: return DType::kFloat64;
    case c10::ScalarType::Int: return DType::kInt32;
    case c10::ScalarType::Long: return DType::kInt64;
    case c10::ScalarType::Bool: return DType::kBool;
    default: break;
  }
  TORCH_CHECK_TYPE(false, "the xla device (ordo) cannot hold ", c10::toString(type),
                   " tensors: it holds bfloat16, float16, float32, float64, int32, int64 and bool");
}

c10::Device xla_device_of(int device) {
  return c10::Device(c10::DeviceType::XLA, static_cast<c10::DeviceIndex>(device));
}

int device_index_of(c10::Device device) {
  TORCH_CHECK(device.type() == c10::DeviceType::XLA, "not an xla device: ", device);
  if (!device.has_index()) return ordo::current_device();
  TORCH_CHECK_INDEX(device.index() < ordo::num_devices(), "xla:", static_cast<int>(device.index()),
                    " is not a device of this process: it has ", ordo::num_devices(), " (xla:0 .. xla:",
                    ordo::num_devices() - 1, ")");
  return device.index();
}

}  // namespace ordo::torch_device
