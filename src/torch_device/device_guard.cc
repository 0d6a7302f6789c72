// PyTorch's device guard for xla: the current device is ordo's (the calling
// thread's, ordo/runtime.h), so a torch.device('xla') without an index and
// ordo's own ops agree. Streams: one per device, the worker's queue.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "ordo/runtime.h"
#include "torch_device/dtypes.h"

namespace ordo::torch_device {
namespace {

struct XlaGuard final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::XLA; }
  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device old = getDevice();
    setDevice(device);
    return old;
  }
  c10::Device getDevice() const override { return xla_device_of(ordo::current_device()); }
  void setDevice(c10::Device device) const override {
    if (device.has_index() && device.index() != ordo::current_device()) ordo::set_current_device(device.index());
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    try {
      setDevice(device);
    } catch (...) {
      // Restoring a guard's device cannot fail for a device that existed.
    }
  }
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override { return stream; }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(ordo::num_devices());
    } catch (...) {
      return 0;
    }
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(XLA, XlaGuard);

}  // namespace ordo::torch_device
