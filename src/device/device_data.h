// DeviceData: the value of a tensor on a device, possibly still being
// computed (a future buffer). mark_step hands tensors pending DeviceData that
// the device's worker fulfils or fails when their graph runs.
//
// Locking: state_ publishes buffer_ and error_. They are written once, before
// state_ leaves kPending (release), and read only after seeing that (acquire).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "device/buffer.h"

namespace ordo::device {

class DeviceData {
 public:
  DeviceData(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {}
  static std::shared_ptr<DeviceData> ready(std::shared_ptr<const Buffer> buffer);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }

  // Exactly one of these is called, once.
  void fulfil(std::shared_ptr<const Buffer> buffer);
  void fail(std::string message);

  bool is_done() const { return state_.load(std::memory_order_acquire) != kPending; }
  // Blocks until done; throws ExecutionError if the producing graph failed.
  const std::shared_ptr<const Buffer>& wait() const;
  // Once done: the failure message, or empty.
  const std::string& error() const { return error_; }

 private:
  static constexpr int kPending = 0, kReady = 1, kFailed = 2;
  const DType dtype_;
  const Shape shape_;
  std::atomic<int> state_{kPending};
  std::shared_ptr<const Buffer> buffer_;
  std::string error_;
};

}  // namespace ordo::device
