#include "comm/protocol/processes_communicator.h"

#include <algorithm>
#include <numeric>

#include "comm/deadlines.h"
#include "comm/describe.h"
#include "comm/exchange_rules.h"
#include "comm/protocol/pacing.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "device/cpu_placement.h"

namespace ordo::comm {

ProcessesCommunicator::ProcessesCommunicator(std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)),
      world_(transport_->processes()),
      local_(world_.topology().world_size()),
      board_(world_, *transport_),
      peers_{world_, *transport_, local_.status(), board_},
      exchange_(world_, *transport_, local_.status(), board_),
      routes_(static_cast<size_t>(world_.topology().local_devices())) {
  Backoff::set_oversubscribed(world_.topology().host_devices() > device::usable_cpu_count());
  const auto process_ended = [this](Gone how) {
    return [this, how](int process, const std::string& reason) {
      const int devices = world_.topology().local_devices();
      for (int index = 0; index < devices; ++index) hear(GlobalOrdinal(process * devices + index), reason, how);
    };
  };
  transport_->listen({process_ended(Gone::kFailed), process_ended(Gone::kFinished), [this](const DeviceNews& news) {
                        switch (news.kind) {
                          case DeviceNews::Kind::kFailed:
                            return hear(news.device, news.reason, Gone::kFailed);
                          case DeviceNews::Kind::kAbsent:
                            return hear(news.device, news.reason, Gone::kAbsent);
                          case DeviceNews::Kind::kPresent:
                            return local_.status().clear_absent(news.device);
                        }
                      }});
  answering_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(stopping_mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        transport_->upkeep();
        board_.pump();
      } catch (const Error&) {
        // A malformed question changes nothing here; its asker times out.
      }
      lock.lock();
      stopping_cv_.wait_for(lock, std::chrono::milliseconds(2), [this] { return stopping_; });
    }
  });
}

ProcessesCommunicator::~ProcessesCommunicator() {
  {
    std::lock_guard<std::mutex> lock(stopping_mu_);
    stopping_ = true;
  }
  stopping_cv_.notify_all();
  answering_.join();
  transport_->listen({});
  meetings_.clear();  // their inboxes go before the transport
}

void ProcessesCommunicator::hear(GlobalOrdinal device, const std::string& reason, Gone how) {
  if (device.value() < 0 || device.value() >= world_size() || world_.topology().is_local(device)) return;
  if (how == Gone::kAbsent) {
    local_.status().mark_absent(device, reason, local_.status().absence_epoch(device));
  } else {
    local_.status().mark_gone(device, how, reason);
  }
}

void ProcessesCommunicator::give_up(const device::Failure& failure) {
  transport_->gave_up(failure.message);
  {
    std::lock_guard<std::mutex> lock(gave_up_mu_);
    if (!gave_up_on_) gave_up_on_ = failure.message;
  }
  failure.raise();
}

std::optional<std::string> ProcessesCommunicator::why_out_of_step() {
  if (std::optional<std::string> failed = local_.status().first_failed()) return failed;
  {
    std::lock_guard<std::mutex> lock(gave_up_mu_);
    if (gave_up_on_) return str_cat("a collective failed (", *gave_up_on_, ")");
  }
  if (local_.had_failures()) {
    return std::string("a collective among this process's devices failed");
  }
  return std::nullopt;
}

std::optional<std::string> ProcessesCommunicator::start_afresh(const std::function<void()>&) {
  const std::optional<std::string> why = why_out_of_step();
  return str_cat("under mpirun the processes share the collectives' numbering, so what a failure left stays until "
                 "shutdown: ", why.value_or("nothing"));
}

ProcessesCommunicator::Route ProcessesCommunicator::open_route(const ReplicaGroups& groups, GlobalOrdinal device) {
  ReplicaGroups canonical = ir::canonical_partition(groups, world_size());
  if (canonical.empty()) {
    canonical.emplace_back(static_cast<size_t>(world_size()));
    std::iota(canonical[0].begin(), canonical[0].end(), 0);
  }
  for (const std::vector<int>& group : canonical) {
    if (std::find(group.begin(), group.end(), device.value()) == group.end()) continue;
    const Topology& topology = world_.topology();
    std::lock_guard<std::mutex> lock(meetings_mu_);
    const std::string* partition = keep_locked(describe_groups(canonical));
    const std::string* group_text = keep_locked(describe_group(group));
    if (std::all_of(group.begin(), group.end(), [&](int d) { return topology.is_local(GlobalOrdinal(d)); })) {
      return {nullptr, 0, partition, group_text};
    }
    std::unique_ptr<CrossGroup>& cross = meetings_[group];
    if (!cross) cross = std::make_unique<CrossGroup>(GroupPlan(group, topology, transport_->tag_upper_bound()), peers_);
    const GroupPlan& plan = cross->meeting.plan();
    size_t index = 0;
    while (plan.group[plan.local_ranks[index]] != device.value()) ++index;
    return {cross.get(), index, partition, group_text};
  }
  ORDO_UNREACHABLE(": device ", device, " is in no replica group");
}

const std::string* ProcessesCommunicator::keep_locked(std::string text) {
  std::unique_ptr<std::string>& kept = texts_[text];
  if (!kept) kept = std::make_unique<std::string>(std::move(text));
  return kept.get();
}

ProcessesCommunicator::Route& ProcessesCommunicator::route_for(const ir::CollectiveAttrs& attrs, GlobalOrdinal device) {
  const std::optional<LocalDevice> local = world_.topology().local_device(device);
  ORDO_CHECK(local.has_value());
  DeviceRoutes& routes = routes_[local->slot()];
  if (attrs.groups.empty()) {
    if (!routes.world) routes.world = open_route({}, device);
    return *routes.world;
  }
  for (auto& [groups, route] : routes.partitions) {
    if (groups == attrs.groups) return route;
  }
  routes.partitions.emplace_back(attrs.groups, open_route(attrs.groups, device));
  return routes.partitions.back().second;
}

class ProcessesCommunicator::MemberChecks final : public LocalMeeting::Checks {
 public:
  MemberChecks(ProcessesCommunicator& comm, CrossGroup& group, const CollectiveCall* call, GlobalOrdinal device,
               ir::OpKind op, int64_t number, const std::string& partition)
      : comm_(comm), group_(group), call_(call), device_(device), op_(op), number_(number), partition_(partition) {}

  std::optional<device::Failure> check(const std::vector<int>& missing, int64_t sequence) override {
    if (!deadlines_) deadlines_.emplace();
    const GroupPlan& plan = group_.meeting.plan();
    const std::string where = call_ != nullptr ? describe_at(*call_, sequence, plan.group)
                                               : str_cat(ir::op_name(op_), " #", sequence, " on group ", plan.text);
    ShortList absent_list;
    for (const int member : missing) {
      const GlobalOrdinal d(member);
      absent_list.add(str_cat(d, " (", comm_.board_.seen(d, number_).doing(number_, plan.text, sequence), ") on ",
                              comm_.world_.describe_process(comm_.world_.topology().process())));
    }
    const std::string absent = absent_list.text();
    // A local member that ran this collective's number elsewhere never comes.
    for (const int member : missing) {
      const GlobalOrdinal d(member);
      const ProgressBoard::Seen seen = comm_.board_.seen(d, number_);
      if (seen.state != ProgressBoard::Seen::State::kAt || seen.partition == partition_) continue;
      return device::Failure{ErrorCode::kCollectiveMismatch,
                             partition_mismatch_message(number_, device_, where, d, seen.describe(), partition_,
                                                        seen.partition)};
    }
    if (comm_.local_.status().any_gone()) {
      for (const int member : missing) {
        const GlobalOrdinal d(member);
        if (std::optional<std::string> reason = comm_.local_.status().gone_reason(d)) {
          return gone_failure(where, d, *reason, "before it arrived");
        }
      }
    }
    comm_.board_.pump();
    if (comm_.local_.status().any_interrupted()) {
      if (std::optional<std::string> reason = comm_.local_.status().interrupt_reason(device_)) {
        return interrupted_failure(where, device_, reason, absent);
      }
    }
    if (has_interrupt_check()) poll_interrupt();
    if (interrupted()) return interrupted_failure(where, device_, std::nullopt, absent);
    if (deadlines_->warning_due()) {
      report_warning(slow_wait_warning(device_, deadlines_->warn_seconds(), where, absent));
    }
    if (deadlines_->timed_out()) return timeout_failure(device_, deadlines_->timeout_seconds(), where, absent);
    return std::nullopt;
  }

  void told(int64_t sequence, const device::Failure& failure) override {
    group_.leader.tell_failure(sequence, failure);
  }

 private:
  ProcessesCommunicator& comm_;
  CrossGroup& group_;
  const CollectiveCall* const call_;  // null for an abandon
  const GlobalOrdinal device_;
  const ir::OpKind op_;
  const int64_t number_;
  const std::string& partition_;
  std::optional<Deadlines> deadlines_;  // from the first check on
};

namespace {

// Tells the board a device left its collective, however it leaves.
class Finished {
 public:
  Finished(ProgressBoard& board, GlobalOrdinal device) : board_(board), device_(device) {}
  ~Finished() { board_.finish(device_); }
  Finished(const Finished&) = delete;
  Finished& operator=(const Finished&) = delete;

 private:
  ProgressBoard& board_;
  const GlobalOrdinal device_;
};

}  // namespace

void ProcessesCommunicator::run(const CollectiveCall& call) {
  const int64_t arrived_ns = steady_now_ns();
  Route& route = route_for(call.attrs, call.device);
  if (route.group == nullptr) {
    board_.start(call.device, {call.op, route.partition, route.group_text, -1});
    const Finished finished(board_, call.device);
    return local_.groups().run(call);
  }
  CrossGroup& group = *route.group;
  const int64_t sequence = group.next_sequence[route.index]++;
  const int64_t number = board_.start(call.device, {call.op, route.partition, route.group_text, sequence});
  const Finished finished(board_, call.device);
  MemberChecks checks(*this, group, &call, call.device, call.op, number, *route.partition);
  if (call.timing != nullptr) call.timing->arrived_ns = arrived_ns;
  const LocalMeeting::Arrival arrival = group.meeting.arrive(route.index, sequence, &call, arrived_ns, checks);
  if (!arrival.leader) {
    if (arrival.failure) give_up(*arrival.failure);
    return;
  }
  // The local group's arrival is its last member's.
  std::optional<device::Failure> failure = group.leader.lead({sequence, number, *route.partition, arrival.last});
  group.meeting.finish(sequence, failure);
  if (failure) give_up(*failure);
}

void ProcessesCommunicator::abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
                              const std::string& reason) {
  Route& route = route_for(attrs, device);
  if (route.group == nullptr) {
    board_.start(device, {op, route.partition, route.group_text, -1});
    board_.finish(device);
    return local_.groups().abandon(op, attrs, device, reason);
  }
  CrossGroup& group = *route.group;
  const int64_t sequence = group.next_sequence[route.index]++;
  const int64_t number = board_.start(device, {op, route.partition, route.group_text, sequence});
  const Finished finished(board_, device);
  MemberChecks checks(*this, group, nullptr, device, op, number, *route.partition);
  group.meeting.abandon(route.index, sequence,
                        abandoned_failure(device, op, sequence, group.meeting.plan().group, reason), checks);
}

uint64_t ProcessesCommunicator::tell(const DeviceEvent& event) {
  const bool absence_current = event.kind == DeviceEvent::Kind::kAbsent &&
                               local_.status().absence_epoch(event.device) == event.number;
  const uint64_t id = local_.tell(event);
  // News of this process's own devices goes to the others, after what
  // they sent (the news could overtake it); a shutdown is every process's own.
  if (!world_.topology().is_local(event.device)) return id;
  switch (event.kind) {
    case DeviceEvent::Kind::kFailed:
      transport_->flush_sends();
      transport_->announce({DeviceNews::Kind::kFailed, event.device, event.reason});
      break;
    case DeviceEvent::Kind::kAbsent:
      if (!absence_current) break;
      transport_->flush_sends();
      transport_->announce({DeviceNews::Kind::kAbsent, event.device, event.reason});
      break;
    case DeviceEvent::Kind::kPresent:
      transport_->announce({DeviceNews::Kind::kPresent, event.device, ""});
      break;
    case DeviceEvent::Kind::kShutDown:
    case DeviceEvent::Kind::kInterrupted:
    case DeviceEvent::Kind::kResumed:
      break;
  }
  return id;
}

std::vector<std::string> ProcessesCommunicator::exchange(const ExchangeCall& call) {
  std::vector<int> participants = exchange_participants(call, world_size());
  const Topology& topology = world_.topology();
  ORDO_ARG_CHECK(topology.is_local(call.device), describe_tag(call.tag), ": device ", call.device,
                 " is driven by another process");
  const auto is_local = [&](int d) { return topology.is_local(GlobalOrdinal(d)); };
  if (std::all_of(participants.begin(), participants.end(), is_local)) {
    return local_.exchange().exchange(call);
  }
  try {
    return exchange_.exchange(call, std::move(participants));
  } catch (const CollectiveError& e) {  // not a bad call: a peer's, or the wait's
    give_up({e.code(), e.what()});
  }
}


}  // namespace ordo::comm
