// What PyTorch and ordo call dtypes and devices, and the one error for a
// dtype the xla device cannot hold.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/core/ScalarTypeToTypeMeta.h>
#include <c10/util/typeid.h>

#include "ordo/dtype.h"

namespace ordo::torch_device {

c10::ScalarType scalar_type_of(DType dtype);
// XLA_USE_BF16=1 (read once, when the module starts), as in torch_xla:
// float32 tensors on the device are held as bfloat16 and still show
// float32 to torch (.cpu() gives float32). Such a value's dtype is
// held_dtype(kFloat32); its tensor shows shown_scalar_type_of(kBFloat16).
// Without the flag both are the identity (scalar_type_of).
bool use_bf16();
DType held_dtype(DType dtype);
c10::ScalarType shown_scalar_type_of(DType dtype);
caffe2::TypeMeta type_meta_of(DType dtype);
// Raises c10::TypeError (Python TypeError) for a dtype ordo has not.
DType dtype_of(c10::ScalarType type);
bool holds(c10::ScalarType type);

// xla:N is this process's device N (ordo's device index in its process).
c10::Device xla_device_of(int device);
// An xla device without an index is the calling thread's current device.
int device_index_of(c10::Device device);

}  // namespace ordo::torch_device
