// DeviceData: the value of a tensor on a device, possibly still being
// computed (a future buffer). mark_step hands tensors pending DeviceData that
// the device's worker fulfils or fails when their graph runs.
//
// Locking: state_ publishes buffer_ and failure_. They are written once, before
// state_ leaves kPending (release), and read only after seeing that (acquire).
// A waiter counts itself in sleepers_ before it sleeps on state_ (a futex)
// and the fulfiller looks at sleepers_ after its change (both seq_cst): one
// of them sees the other, so no wake-up is lost, and a value nobody waits
// for costs no system call.
#pragma once

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>

#include "device/buffer.h"
#include "ordo/error.h"

namespace ordo::device {

// A failure that crosses threads: recorded by a worker, rethrown by a reader
// as the class its code names.
struct Failure {
  ErrorCode code = ErrorCode::kExecution;
  std::string message;

  [[noreturn]] void raise() const { throw_error_code(code, message); }
};

class DeviceData {
 public:
  DeviceData(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {}
  static std::shared_ptr<DeviceData> ready(std::shared_ptr<const Buffer> buffer);
  // The value of a tensor that will never be computed (its graph was
  // dropped): failed from the start, and refused as an input when traced.
  static std::shared_ptr<DeviceData> dropped(DType dtype, Shape shape, Failure why);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }

  // Exactly one of these is called, once.
  void fulfil(std::shared_ptr<const Buffer> buffer);
  void fail(Failure failure);

  bool is_done() const { return state_.load(std::memory_order_acquire) != kPending; }
  bool is_dropped() const { return dropped_; }
  // Blocks until done; rethrows the failure if the producing graph failed.
  const std::shared_ptr<const Buffer>& wait() const;
  // Blocks until done or deadline; returns is_done().
  bool wait_until(std::chrono::steady_clock::time_point deadline) const;

 private:
  static constexpr int kPending = 0, kReady = 1, kFailed = 2;
  // Sleeps while pending, for at most `timeout` (null: no limit).
  void sleep_while_pending(const std::timespec* timeout) const;
  void wake_sleepers();

  const DType dtype_;
  const Shape shape_;
  std::atomic<int> state_{kPending};
  mutable std::atomic<int> sleepers_{0};
  bool dropped_ = false;  // set before the value is shared
  std::shared_ptr<const Buffer> buffer_;
  Failure failure_;
};

}  // namespace ordo::device
