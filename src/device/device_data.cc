#include "device/device_data.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace ordo::device {

// The futex is the state word itself, as std::atomic<int>::wait uses it;
// waiting here rather than through std::atomic gives waits a deadline.
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);

std::shared_ptr<DeviceData> DeviceData::ready(std::shared_ptr<const Buffer> buffer) {
  auto data = std::make_shared<DeviceData>(buffer->dtype, buffer->shape);
  data->fulfil(std::move(buffer));
  return data;
}

std::shared_ptr<DeviceData> DeviceData::dropped(DType dtype, Shape shape, Failure why) {
  auto data = std::make_shared<DeviceData>(dtype, std::move(shape));
  data->dropped_ = true;
  data->fail(std::move(why));
  return data;
}

void DeviceData::fulfil(std::shared_ptr<const Buffer> buffer) {
  buffer_ = std::move(buffer);
  state_.store(kReady, std::memory_order_seq_cst);
  wake_sleepers();
}

void DeviceData::fail(Failure failure) {
  failure_ = std::move(failure);
  state_.store(kFailed, std::memory_order_seq_cst);
  wake_sleepers();
}

void DeviceData::wake_sleepers() {
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  syscall(SYS_futex, reinterpret_cast<int*>(&state_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void DeviceData::sleep_while_pending(const std::timespec* timeout) const {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  // Returns at once unless the word still says pending (the kernel looks
  // again under its own lock), and early on a signal: callers loop.
  if (state_.load(std::memory_order_seq_cst) == kPending) {
    syscall(SYS_futex, reinterpret_cast<const int*>(&state_), FUTEX_WAIT_PRIVATE, kPending, timeout, nullptr, 0);
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

const std::shared_ptr<const Buffer>& DeviceData::wait() const {
  while (!is_done()) sleep_while_pending(nullptr);
  if (state_.load(std::memory_order_acquire) == kFailed) failure_.raise();
  return buffer_;
}

bool DeviceData::wait_until(std::chrono::steady_clock::time_point deadline) const {
  for (;;) {
    if (is_done()) return true;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return false;
    const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const std::timespec timeout{static_cast<time_t>(nanoseconds / 1'000'000'000),
                                static_cast<long>(nanoseconds % 1'000'000'000)};
    sleep_while_pending(&timeout);
  }
}

}  // namespace ordo::device
