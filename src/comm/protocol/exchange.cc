#include "comm/protocol/exchange.h"

#include <algorithm>

#include "comm/exchange_rules.h"
#include "comm/protocol/exchange_round.h"

namespace ordo::comm {

Exchange::Exchange(Topology topology, const DeviceStatus& status)
    : topology_(std::move(topology)),
      status_(status),
      inboxes_(static_cast<size_t>(topology_.local_devices())),
      waiting_in_(inboxes_.size(), nullptr),
      counts_(inboxes_.size()) {}

Exchange::~Exchange() = default;

std::vector<std::string> Exchange::exchange(const ExchangeCall& call) {
  return exchange(call, exchange_participants(call, topology_.world_size()));
}

std::vector<std::string> Exchange::exchange(const ExchangeCall& call, std::vector<int> participants) {
  // What came from other processes before this device did counts as come
  // before: a timeout given up then fails this device too.
  if (post_ != nullptr && !all_local(participants)) post_->collect();
  Round round(*this, call, {std::string(call.tag), std::move(participants), -1});
  round.send_payload();
  round.wait();
  return round.take_payloads();
}

bool Exchange::all_local(const std::vector<int>& participants) const {
  return std::all_of(participants.begin(), participants.end(),
                     [&](int d) { return topology_.is_local(GlobalOrdinal(d)); });
}

void Exchange::deliver(ExchangeNote note) {
  std::lock_guard<std::mutex> lock(mu_);
  deliver_locked(std::move(note));
  cv_.notify_all();  // also for a note kept: a waiter's cycle of waits may go through it
}

void Exchange::deliver(std::vector<ExchangeNote> notes) {
  if (notes.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (ExchangeNote& note : notes) deliver_locked(std::move(note));
  cv_.notify_all();  // once: every waiter wakes for each notification
}

void Exchange::deliver_locked(ExchangeNote note) {
  const size_t index = index_of(note.receiver);
  Round* waiting = waiting_in_[index];
  if (waiting == nullptr || !waiting->take_locked(note)) inboxes_[index].push_back(std::move(note));
}

void Exchange::tell(const ExchangeNote& note) {
  std::vector<ExchangeNote> here;
  for (const int e : note.round.participants) {
    if (e == note.sender) continue;
    ExchangeNote copy = note;
    copy.receiver = e;
    if (topology_.is_local(GlobalOrdinal(e))) {
      here.push_back(std::move(copy));
    } else {
      post_->send(copy);
    }
  }
  deliver(std::move(here));
}

void Exchange::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void Exchange::interrupt(GlobalOrdinal device, const std::string& reason) {
  const std::optional<LocalDevice> local = topology_.local_device(device);
  if (!local) return;  // a device that cannot wait here
  std::lock_guard<std::mutex> lock(mu_);
  Round* waiting = waiting_in_[local->slot()];
  if (waiting != nullptr && !waiting->failed_locked()) {
    waiting->fail_locked(exchange_interrupted(waiting->round().tag, device, ": " + reason));
  }
  cv_.notify_all();
}

size_t Exchange::round_counts_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t held = 0;
  for (const Counts& counts : counts_) held += counts.next.size();
  return held;
}

bool Exchange::unsettled() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Of rounds among this process's devices only: a note of another
  // process's round to come is no failure.
  for (size_t index = 0; index < inboxes_.size(); ++index) {
    for (const ExchangeNote& note : inboxes_[index]) {
      if (all_local(note.round.participants)) return true;
    }
    for (const auto& [key, count] : counts_[index].next) {
      if (all_local(key.second)) return true;  // not level: forgotten when level
    }
  }
  return false;
}

void Exchange::start_afresh() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Inbox& inbox : inboxes_) inbox.clear();
  for (Counts& counts : counts_) counts = Counts{};
  std::fill(waiting_in_.begin(), waiting_in_.end(), nullptr);
}

}  // namespace ordo::comm
