#include "comm/protocol/processes_communicator.h"

#include <algorithm>
#include <new>
#include <numeric>

#include "comm/describe.h"
#include "comm/exchange_rules.h"
#include "comm/protocol/pacing.h"
#include "core/check.h"
#include "device/cpu_placement.h"

namespace ordo::comm {

ProcessesCommunicator::ProcessesCommunicator(std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)),
      world_(transport_->processes()),
      local_(world_.topology()),
      board_(world_, *transport_, local_.groups()),
      peers_{world_, *transport_, local_.status(), board_},
      mail_(world_, *transport_, local_.exchange(), board_),
      routes_(static_cast<size_t>(world_.topology().local_devices())),
      place_(str_cat(" on ", world_.describe_process(world_.topology().process()))) {
  local_.exchange().set_post(&mail_);
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
    if (std::all_of(group.begin(), group.end(), [&](int d) { return topology.is_local(GlobalOrdinal(d)); })) {
      return {nullptr, 0, nullptr};
    }
    const Partition* partition = local_.groups().partition(canonical);
    std::lock_guard<std::mutex> lock(meetings_mu_);
    std::unique_ptr<CrossGroup>& cross = meetings_[group];
    if (!cross) cross = std::make_unique<CrossGroup>(GroupPlan(group, topology, transport_->tag_upper_bound()), peers_);
    const GroupPlan& plan = cross->meeting.plan();
    size_t index = 0;
    while (plan.group[plan.local_ranks[index]] != device.value()) ++index;
    return {cross.get(), index, partition};
  }
  ORDO_UNREACHABLE(": device ", device, " is in no replica group");
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

ProcessesCommunicator::Start ProcessesCommunicator::start(const Route& route, ir::OpKind op, GlobalOrdinal device) {
  Channel& channel = route.group->meeting.channel();
  const int64_t sequence = channel.member(route.index).next_sequence++;
  const std::vector<int>& members = route.group->meeting.plan().group;
  return {sequence, local_.groups().progress(device).start({op, route.partition, &members, &channel, sequence})};
}

void ProcessesCommunicator::run(const CollectiveCall& call) {
  const int64_t arrived_ns = steady_now_ns();
  Route& route = route_for(call.attrs, call.device);
  if (route.group == nullptr) return local_.groups().run(call);
  const auto [sequence, number] = start(route, call.op, call.device);
  if (call.timing != nullptr) call.timing->arrived_ns = arrived_ns;
  LocalMeeting& meeting = route.group->meeting;
  Channel& channel = meeting.channel();
  const Participant me{channel,          channel.slot_of(sequence),          sequence,         route.index,
                       call,             meeting.plan().group,               local_.status(), number,
                       *route.partition, local_.groups().progress_records(), place_};
  const LocalMeeting::Arrival arrival = meeting.arrive(me, arrived_ns, route.group->leader);
  if (!arrival.leads) {
    if (arrival.failure) give_up(*arrival.failure);
    return;
  }
  std::optional<device::Failure> outcome;
  try {
    // The local group's arrival is its last member's.
    outcome = route.group->leader.lead({sequence, number, route.partition->text, arrival.last});
  } catch (const Error& e) {  // the others wait for finish, whatever happens
    outcome = device::Failure{e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    outcome = device::Failure{ErrorCode::kOutOfMemory,
                              str_cat("out of memory leading ", describe_at(call, sequence, meeting.plan().group))};
  }
  meeting.finish(me, outcome);
  if (outcome) give_up(*outcome);
}

void ProcessesCommunicator::abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
                                    const std::string& reason) {
  Route& route = route_for(attrs, device);
  if (route.group == nullptr) return local_.groups().abandon(op, attrs, device, reason);
  const int64_t sequence = start(route, op, device).sequence;
  const device::Failure failure =
      abandoned_failure(device, op, sequence, route.group->meeting.plan().group, reason);
  route.group->meeting.abandon(route.index, sequence, failure, route.group->leader);
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
  const bool spans_processes = !std::all_of(participants.begin(), participants.end(), is_local);
  try {
    return local_.exchange().exchange(call, std::move(participants));
  } catch (const CollectiveError& e) {  // not a bad call: a peer's, or the wait's
    if (!spans_processes) throw;
    give_up({e.code(), e.what()});
  }
}


}  // namespace ordo::comm
