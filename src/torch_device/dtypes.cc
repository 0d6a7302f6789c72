#include "torch_device/dtypes.h"

#include <c10/util/Exception.h>

#include "ordo/runtime.h"

namespace ordo::torch_device {

c10::ScalarType scalar_type_of(DType dtype) {
  switch (dtype) {
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
    case c10::ScalarType::Float: return DType::kFloat32;
    case c10::ScalarType::Double: return DType::kFloat64;
    case c10::ScalarType::Int: return DType::kInt32;
    case c10::ScalarType::Long: return DType::kInt64;
    case c10::ScalarType::Bool: return DType::kBool;
    default: break;
  }
  TORCH_CHECK_TYPE(false, "the xla device (ordo) cannot hold ", c10::toString(type),
                   " tensors: it holds float32, float64, int32, int64 and bool");
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
