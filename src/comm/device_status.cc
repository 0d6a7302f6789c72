#include "comm/device_status.h"

#include "comm/communicator.h"

namespace ordo::comm {

bool DeviceStatus::Record::is_gone() const {
  for (const std::optional<std::string>& reason : gone) {
    if (reason) return true;
  }
  return false;
}

const DeviceStatus::Record* DeviceStatus::find_locked(GlobalOrdinal device) const {
  auto it = records_.find(device);
  return it == records_.end() ? nullptr : &it->second;
}

void DeviceStatus::set_gone_locked(Record& record, Gone kind, const std::string& reason) {
  std::optional<std::string>& slot = record.gone[static_cast<size_t>(kind)];
  if (slot) return;
  const bool was_gone = record.is_gone();
  slot = reason;
  if (!was_gone) gone_count_.fetch_add(1, std::memory_order_seq_cst);
}

void DeviceStatus::mark_gone(GlobalOrdinal device, Gone kind, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  set_gone_locked(record_locked(device), kind, reason);
}

uint64_t DeviceStatus::absence_epoch(GlobalOrdinal device) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Record* record = find_locked(device);
  return record == nullptr ? 0 : record->absence_epoch;
}

void DeviceStatus::mark_absent(GlobalOrdinal device, const std::string& reason, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& record = record_locked(device);
  if (record.absence_epoch == epoch) set_gone_locked(record, Gone::kAbsent, reason);
}

void DeviceStatus::clear_absent(GlobalOrdinal device) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& record = record_locked(device);
  ++record.absence_epoch;
  std::optional<std::string>& absent = record.gone[static_cast<size_t>(Gone::kAbsent)];
  if (!absent) return;
  absent.reset();
  if (!record.is_gone()) gone_count_.fetch_sub(1, std::memory_order_seq_cst);
}

void DeviceStatus::forget(GlobalOrdinal device) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& record = record_locked(device);
  ++record.absence_epoch;
  if (record.is_gone()) gone_count_.fetch_sub(1, std::memory_order_seq_cst);
  for (std::optional<std::string>& reason : record.gone) reason.reset();
  if (record.interrupt_id != 0) interrupted_count_.fetch_sub(1, std::memory_order_seq_cst);
  record.interrupt_id = 0;
  record.interrupt_reason.clear();
}

std::optional<std::string> DeviceStatus::gone_reason(GlobalOrdinal device) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (const Record* record = find_locked(device)) {
    for (const std::optional<std::string>& reason : record->gone) {
      if (reason) return reason;
    }
  }
  return std::nullopt;
}

std::optional<std::string> DeviceStatus::first_failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [device, record] : records_) {  // in device order
    if (const std::optional<std::string>& reason = record.gone[static_cast<size_t>(Gone::kFailed)]) {
      return str_cat("device ", device, " is gone (", *reason, ")");
    }
  }
  return std::nullopt;
}

uint64_t DeviceStatus::interrupt(GlobalOrdinal device, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& record = record_locked(device);
  if (record.interrupt_id == 0) interrupted_count_.fetch_add(1, std::memory_order_seq_cst);
  record.interrupt_id = ++last_interrupt_id_;
  record.interrupt_reason = reason;
  return record.interrupt_id;
}

void DeviceStatus::end_interrupt(GlobalOrdinal device, uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(device);
  if (it == records_.end() || it->second.interrupt_id != id || id == 0) return;
  it->second.interrupt_id = 0;
  it->second.interrupt_reason.clear();
  interrupted_count_.fetch_sub(1, std::memory_order_seq_cst);
}

std::optional<std::string> DeviceStatus::interrupt_reason(GlobalOrdinal device) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Record* record = find_locked(device);
  if (record == nullptr || record->interrupt_id == 0) return std::nullopt;
  return record->interrupt_reason;
}

device::Failure gone_failure(const std::string& where, GlobalOrdinal device, const std::string& reason,
                             const std::string& when) {
  return {ErrorCode::kCollective,
          str_cat(where, " cannot complete: device ", device, " is gone (", reason, "), ", when)};
}

device::Failure abandoned_failure(GlobalOrdinal device, ir::OpKind op, int64_t sequence,
                                  const std::vector<int>& group, const std::string& reason) {
  return {ErrorCode::kCollective, str_cat("device ", device, " will not join ", ir::op_name(op), " #", sequence,
                                          " on group ", describe_group(group), ": ", reason)};
}

device::Failure interrupted_failure(const std::string& where, GlobalOrdinal device,
                                    const std::optional<std::string>& reason, const std::string& missing) {
  return {ErrorCode::kCollective,
          str_cat(where, " was interrupted on device ", device, ": ",
                  reason.value_or("the thread that waited in it was interrupted"),
                  "; devices that had not arrived: ", missing)};
}

}  // namespace ordo::comm
