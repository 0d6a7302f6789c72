// kernel_for: one table row per op, generated from op_list.def, so the
// table cannot fall out of step with the op list; an op without a kernel
// fails to link (kernels_internal.h declares every specialization).
#include <iterator>

#include "core/check.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {

// A DeviceData leaf already holds its buffer; the executor binds it as a
// parameter and never runs a kernel for it.
template <>
void run<ir::OpKind::kDeviceData>(const KernelArgs&) {
  throw InternalError("device_data has no kernel: the executor binds its buffer as a parameter");
}

namespace {

constexpr KernelFn kKernels[] = {
#define ORDO_OP(name, str, group, attrs) &run<ir::OpKind::k##name>,
#include "ir/op_list.def"
#undef ORDO_OP
};

}  // namespace

KernelFn kernel_for(ir::OpKind op) {
  const int index = static_cast<int>(op);
  ORDO_CHECK(index >= 0 && index < ir::kNumOps, ": op ", index, " is not in op_list.def");
  return kKernels[index];
}

const std::shared_ptr<const device::Buffer>& token_buffer() {
  // Held without a reference count (aliasing an empty owner), and never
  // destroyed: every device copies it at every collective, and a shared
  // count would move its cache line between the devices' cores at each copy.
  static const auto* token = new device::Buffer{DType::kBool, {}, 0, nullptr};
  static const std::shared_ptr<const device::Buffer> unowned(std::shared_ptr<const device::Buffer>(), token);
  return unowned;
}

}  // namespace ordo::kernels
