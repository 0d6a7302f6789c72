#include "device/device_data.h"

namespace ordo::device {

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
  state_.store(kReady, std::memory_order_release);
  state_.notify_all();
}

void DeviceData::fail(Failure failure) {
  failure_ = std::move(failure);
  state_.store(kFailed, std::memory_order_release);
  state_.notify_all();
}

const std::shared_ptr<const Buffer>& DeviceData::wait() const {
  int state = state_.load(std::memory_order_acquire);
  while (state == kPending) {
    state_.wait(kPending, std::memory_order_acquire);
    state = state_.load(std::memory_order_acquire);
  }
  if (state == kFailed) failure_.raise();
  return buffer_;
}

}  // namespace ordo::device
