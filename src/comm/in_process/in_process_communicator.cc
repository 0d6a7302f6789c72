#include "comm/in_process/in_process_communicator.h"

#include <algorithm>

#include "comm/in_process/data_movement.h"
#include "comm/in_process/waiting.h"

namespace ordo::comm {
namespace {

bool same_op(const CollectiveCall& a, const CollectiveCall& b) {
  const ir::CollectiveAttrs& x = a.attrs;
  const ir::CollectiveAttrs& y = b.attrs;
  if (a.op != b.op || x.reduce != y.reduce || x.scale != y.scale || x.dim0 != y.dim0 ||
      x.dim1 != y.dim1 || x.groups != y.groups || x.pairs != y.pairs ||
      a.inputs.size() != b.inputs.size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i]->dtype != b.inputs[i]->dtype || a.inputs[i]->shape != b.inputs[i]->shape) {
      return false;
    }
  }
  return true;
}

const CollectiveCall* any_call(const Rendezvous& r) {
  for (const CollectiveCall* call : r.calls) {
    if (call != nullptr) return call;
  }
  return nullptr;
}

}  // namespace

InProcessCommunicator::InProcessCommunicator(int world_size)
    : world_size_(world_size), next_sequence_(static_cast<size_t>(world_size)) {}

InProcessCommunicator::Seat InProcessCommunicator::take_seat(const ir::CollectiveAttrs& attrs,
                                                             int device) {
  std::vector<int> group = attrs.group_of(device, world_size_);
  const int64_t sequence = next_sequence_[device][group]++;
  const auto rank = static_cast<size_t>(std::find(group.begin(), group.end(), device) - group.begin());
  return {table_.find_or_create(group, sequence), rank};
}

void InProcessCommunicator::run(const CollectiveCall& call) {
  const Seat seat = take_seat(call.attrs, call.device);
  Rendezvous& r = *seat.rendezvous;
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.failed.load(std::memory_order_relaxed)) {
      const CollectiveCall* first = any_call(r);
      if (first != nullptr && !same_op(*first, call)) {
        r.fail_locked(ErrorCode::kCollectiveMismatch,
                      str_cat("collective mismatch at #", r.sequence, " on group ",
                              describe_group(r.group), ": device ", first->device, " runs ",
                              describe(*first), " but device ", call.device, " runs ",
                              describe(call)));
      } else {
        r.calls[seat.rank] = &call;
        if (r.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == r.size()) r.cv.notify_all();
      }
    }
    r.joined[seat.rank] = true;
    complete = ++r.joined_count == r.size();
  }
  if (complete) table_.erase(r);
  try {
    wait_for_arrivals(r, call.device);
  } catch (...) {
    // Leaving early: nobody may describe or read this call any more.
    std::lock_guard<std::mutex> lock(r.mu);
    r.calls[seat.rank] = nullptr;
    throw;
  }
  move_data(call.op, r.calls, seat.rank);
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.finished.fetch_add(1, std::memory_order_acq_rel) + 1 == r.size()) r.cv.notify_all();
  }
  wait_for_finish(r);
}

void InProcessCommunicator::abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, int device,
                                    const std::string& reason) {
  const Seat seat = take_seat(attrs, device);
  Rendezvous& r = *seat.rendezvous;
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.fail_locked(ErrorCode::kCollective,
                  str_cat("device ", device, " will not join ", ir::op_name(op), " #", r.sequence,
                          " on group ", describe_group(r.group), ": ", reason));
    r.joined[seat.rank] = true;
    complete = ++r.joined_count == r.size();
  }
  if (complete) table_.erase(r);
}

void InProcessCommunicator::mark_device_failed(int device, const std::string& reason) {
  table_.mark_device_failed(device, reason);
}

}  // namespace ordo::comm
