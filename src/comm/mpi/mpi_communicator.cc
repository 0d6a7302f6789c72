#include "comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <numeric>

#include "comm/deadlines.h"
#include "comm/describe.h"
#include "comm/exchange_rules.h"
#include "comm/mpi/process_mesh.h"
#include "comm/mpi/start_waits.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "device/cpu_placement.h"

namespace ordo::comm {
namespace {

// How long news of a device waits for what the process sent before it
// (the news travel on the mesh, beside MPI, and could overtake it).
constexpr auto kNewsAfterSends = std::chrono::milliseconds(1000);

int tag_upper_bound(MPI_Comm comm) {
  int* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  return found && value != nullptr ? *value : 32767;
}

// The runtime's own communicator, once every process has come to this
// start: a process held between two runtimes (in Python, say) is named
// at the collective timeout, as one held before MPI is (start_waits.h).
MPI_Comm open_runtime_comm(const MpiWorld& world) {
  const StartPlace place{world.describe_process(world.rank()), "the start of a runtime"};
  const auto describe = [&world](int q) { return world.describe_process(q); };
  meet_at_start(world.comm(), "", place, describe);
  // Every process has come: the duplicate waits only for one that ended
  // since, and is bounded all the same.
  return duplicate_at_start(world.comm(), place, [&world] { return any_other_process(world.rank(), world.size()); });
}

}  // namespace

MpiCommunicator::MpiCommunicator(const MpiWorld& world, size_t piece_bytes)
    : world_(world),
      comm_(open_runtime_comm(world)),
      link_(comm_, piece_bytes),
      rings_(HostRings::open(comm_, world.topology())),
      local_groups_(world.topology().world_size(), status_),
      local_exchange_(world.topology().world_size(), status_),
      board_(world_, link_),
      peers_{world_, link_, rings_.get(), status_, board_},
      exchange_(world_, link_, status_, board_),
      mesh_(ProcessMesh::join(world)),
      routes_(static_cast<size_t>(world.topology().local_devices())) {
  Backoff::set_oversubscribed(world.topology().host_devices() > device::usable_cpu_count());
  const auto process_ended = [this](Gone how) {
    return [this, how](int process, const std::string& reason) {
      const int devices = world_.topology().local_devices();
      for (int index = 0; index < devices; ++index) hear(GlobalOrdinal(process * devices + index), reason, how);
    };
  };
  mesh_.set_handlers({process_ended(Gone::kFailed), process_ended(Gone::kFinished), [this](const DeviceNews& news) {
                        switch (news.kind) {
                          case DeviceNews::Kind::kFailed:
                            return hear(news.device, news.reason, Gone::kFailed);
                          case DeviceNews::Kind::kAbsent:
                            return hear(news.device, news.reason, Gone::kAbsent);
                          case DeviceNews::Kind::kPresent:
                            return status_.clear_absent(news.device);
                        }
                      }});
  answering_ = std::thread([this] {
    while (!stopping_.load(std::memory_order_acquire)) {
      try {
        if (rings_) rings_->flush();
        board_.pump();
      } catch (const Error&) {
        // A malformed question changes nothing here; its asker times out.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
}

MpiCommunicator::~MpiCommunicator() {
  stopping_.store(true, std::memory_order_release);
  answering_.join();
  mesh_.set_handlers({});
  meetings_.clear();  // their posted receives are cancelled before the communicator goes
  link_.free_communicator(comm_);
}

void MpiCommunicator::flush_sends() {
  if (rings_) rings_->flush();  // what waited for room in a ring, as far as it fits now
  link_.flush_owned(kNewsAfterSends);
}

void MpiCommunicator::hear(GlobalOrdinal device, const std::string& reason, Gone how) {
  if (device.value() < 0 || device.value() >= world_size() || world_.topology().is_local(device)) return;
  if (how == Gone::kAbsent) {
    status_.mark_absent(device, reason, status_.absence_epoch(device));
  } else {
    status_.mark_gone(device, how, reason);
  }
}

void MpiCommunicator::give_up(const device::Failure& failure) {
  mesh_.gave_up(failure.message);
  {
    std::lock_guard<std::mutex> lock(gave_up_mu_);
    if (!gave_up_on_) gave_up_on_ = failure.message;
  }
  failure.raise();
}

std::optional<std::string> MpiCommunicator::why_out_of_step() {
  if (std::optional<std::string> failed = status_.first_failed()) return failed;
  {
    std::lock_guard<std::mutex> lock(gave_up_mu_);
    if (gave_up_on_) return str_cat("a collective failed (", *gave_up_on_, ")");
  }
  if (local_groups_.had_failures() || local_exchange_.unsettled()) {
    return std::string("a collective among this process's devices failed");
  }
  return std::nullopt;
}

std::optional<std::string> MpiCommunicator::start_afresh(const std::function<void()>&) {
  const std::optional<std::string> why = why_out_of_step();
  return str_cat("under mpirun the processes share the collectives' numbering, so what a failure left stays until "
                 "shutdown: ", why.value_or("nothing"));
}

MpiCommunicator::Route MpiCommunicator::open_route(const ReplicaGroups& groups, GlobalOrdinal device) {
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
    if (!cross) cross = std::make_unique<CrossGroup>(GroupPlan(group, topology, tag_upper_bound(comm_)), peers_);
    const GroupPlan& plan = cross->meeting.plan();
    size_t index = 0;
    while (plan.group[plan.local_ranks[index]] != device.value()) ++index;
    return {cross.get(), index, partition, group_text};
  }
  ORDO_UNREACHABLE(": device ", device, " is in no replica group");
}

const std::string* MpiCommunicator::keep_locked(std::string text) {
  std::unique_ptr<std::string>& kept = texts_[text];
  if (!kept) kept = std::make_unique<std::string>(std::move(text));
  return kept.get();
}

MpiCommunicator::Route& MpiCommunicator::route_for(const ir::CollectiveAttrs& attrs, GlobalOrdinal device) {
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

class MpiCommunicator::MemberChecks final : public LocalMeeting::Checks {
 public:
  MemberChecks(MpiCommunicator& comm, CrossGroup& group, const CollectiveCall* call, GlobalOrdinal device,
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
    if (comm_.status_.any_gone()) {
      for (const int member : missing) {
        const GlobalOrdinal d(member);
        if (std::optional<std::string> reason = comm_.status_.gone_reason(d)) {
          return gone_failure(where, d, *reason, "before it arrived");
        }
      }
    }
    comm_.board_.pump();
    if (comm_.status_.any_interrupted()) {
      if (std::optional<std::string> reason = comm_.status_.interrupt_reason(device_)) {
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
  MpiCommunicator& comm_;
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

void MpiCommunicator::run(const CollectiveCall& call) {
  const int64_t arrived_ns = steady_now_ns();
  Route& route = route_for(call.attrs, call.device);
  if (route.group == nullptr) {
    board_.start(call.device, {call.op, route.partition, route.group_text, -1});
    const Finished finished(board_, call.device);
    return local_groups_.run(call);
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

void MpiCommunicator::abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
                              const std::string& reason) {
  Route& route = route_for(attrs, device);
  if (route.group == nullptr) {
    board_.start(device, {op, route.partition, route.group_text, -1});
    board_.finish(device);
    return local_groups_.abandon(op, attrs, device, reason);
  }
  CrossGroup& group = *route.group;
  const int64_t sequence = group.next_sequence[route.index]++;
  const int64_t number = board_.start(device, {op, route.partition, route.group_text, sequence});
  const Finished finished(board_, device);
  MemberChecks checks(*this, group, nullptr, device, op, number, *route.partition);
  group.meeting.abandon(route.index, sequence,
                        abandoned_failure(device, op, sequence, group.meeting.plan().group, reason), checks);
}

void MpiCommunicator::mark_device_failed(GlobalOrdinal device, const std::string& reason) {
  status_.mark_gone(device, Gone::kFailed, reason);
  wake_local_waiters();
  if (world_.topology().is_local(device)) {
    flush_sends();
    mesh_.announce({DeviceNews::Kind::kFailed, device, reason});
  }
}

void MpiCommunicator::mark_device_shut_down(GlobalOrdinal device, const std::string& reason) {
  status_.mark_gone(device, Gone::kFailed, reason);
  wake_local_waiters();
}

void MpiCommunicator::wake_local_waiters() {
  local_groups_.wake();
  local_exchange_.wake();
}

void MpiCommunicator::mark_device_absent(GlobalOrdinal device, const std::string& reason, uint64_t epoch) {
  const bool current = status_.absence_epoch(device) == epoch;
  status_.mark_absent(device, reason, epoch);
  wake_local_waiters();
  if (current && world_.topology().is_local(device)) {
    flush_sends();
    mesh_.announce({DeviceNews::Kind::kAbsent, device, reason});
  }
}

void MpiCommunicator::clear_device_absent(GlobalOrdinal device) {
  status_.clear_absent(device);
  if (world_.topology().is_local(device)) mesh_.announce({DeviceNews::Kind::kPresent, device, ""});
}

uint64_t MpiCommunicator::interrupt(GlobalOrdinal device, const std::string& reason) {
  const uint64_t id = status_.interrupt(device, reason);
  local_groups_.wake();
  local_exchange_.interrupt(device, reason);
  return id;
}

std::vector<std::string> MpiCommunicator::exchange(const ExchangeCall& call) {
  std::vector<int> participants = exchange_participants(call, world_size());
  const Topology& topology = world_.topology();
  ORDO_ARG_CHECK(topology.is_local(call.device), describe_tag(call.tag), ": device ", call.device,
                 " is driven by another process");
  const auto is_local = [&](int d) { return topology.is_local(GlobalOrdinal(d)); };
  if (std::all_of(participants.begin(), participants.end(), is_local)) {
    return local_exchange_.exchange(call);
  }
  try {
    return exchange_.exchange(call, std::move(participants));
  } catch (const CollectiveError& e) {  // not a bad call: a peer's, or the wait's
    give_up({e.code(), e.what()});
  }
}

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world, size_t piece_bytes) {
  return std::make_unique<MpiCommunicator>(world, piece_bytes);
}

}  // namespace ordo::comm
