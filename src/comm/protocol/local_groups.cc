#include "comm/protocol/local_groups.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "comm/protocol/data_movement.h"
#include "comm/protocol/waiting.h"
#include "core/check.h"

namespace ordo::comm {
namespace {

// Fills p's seat, its fingerprint (written only when it changes) and a
// small all_reduce's inputs too, and returns whether they were staged.
// Members whose fingerprints match decide alike.
bool fill_seat(const Participant& p, int64_t arrived_ns) {
  Seat& seat = p.slot.seats[p.rank];
  seat.fingerprint.assign(p.call);
  bool staged = false;
  if (p.call.op == ir::OpKind::kAllReduce) {
    const size_t bytes = staged_bytes(p.call);
    staged = bytes <= kMaxStagedBytes;
    if (staged) stage_inputs(p.call, seat.staged.reserve(bytes));
  }
  take_seat(p, arrived_ns);
  return staged;
}

// Every member compares every fingerprint with rank 0's, so all find the
// same first mismatch and raise the same error. The message describes
// peers' calls, so they all wait for each other before they leave.
void check_same_op(const Participant& p, DoneMark& done) {
  const std::vector<Seat>& seats = p.slot.seats;
  for (size_t q = 1; q < seats.size(); ++q) {
    if (seats[q].fingerprint == seats[0].fingerprint) continue;
    const std::vector<int>& group = p.channel.group();
    std::string message = mismatch_message(p.sequence, group, GlobalOrdinal(group[0]), *seats[0].call,
                                           GlobalOrdinal(group[q]), *seats[q].call);
    done.mark();
    wait_until_all_done(p);
    throw CollectiveMismatchError(message);
  }
}

std::span<const CollectiveCall* const> calls_of(const Participant& p) {
  std::vector<const CollectiveCall*>& calls = p.channel.member(p.rank).calls;
  for (size_t q = 0; q < calls.size(); ++q) calls[q] = p.slot.seats[q].call;
  return calls;
}

std::span<const std::byte* const> staged_of(const Participant& p) {
  std::vector<const std::byte*>& staged = p.channel.member(p.rank).staged;
  for (size_t q = 0; q < staged.size(); ++q) staged[q] = p.slot.seats[q].staged.data();
  return staged;
}

// Once every member arrived: when the last one did, and who it was.
void record_timing(const Participant& p, int64_t arrived_ns) {
  const size_t last = p.slot.last_arrival();
  *p.call.timing = {arrived_ns, p.slot.arrival(last), GlobalOrdinal(p.channel.group()[last])};
}

}  // namespace

LocalGroups::LocalGroups(int world_size, const DeviceStatus& status)
    : world_size_(world_size),
      status_(status),
      routes_(static_cast<size_t>(world_size)),
      progress_(static_cast<size_t>(world_size)) {}

const Partition* LocalGroups::partition(const ReplicaGroups& canonical) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  return partition_locked(canonical);
}

const Partition* LocalGroups::partition_locked(const ReplicaGroups& groups) {
  std::unique_ptr<Partition>& partition = partitions_[groups];
  if (!partition) partition = std::make_unique<Partition>(Partition{groups, describe_groups(groups)});
  return partition.get();
}

LocalGroups::Route LocalGroups::open_route(const ReplicaGroups& groups, GlobalOrdinal device) {
  // Equal partitions written differently share one Partition, so that
  // peers compare them by pointer; the world is one group of every device.
  ReplicaGroups canonical = ir::canonical_partition(groups, world_size_);
  if (canonical.empty()) {
    canonical.emplace_back(static_cast<size_t>(world_size_));
    std::iota(canonical[0].begin(), canonical[0].end(), 0);
  }
  std::lock_guard<std::mutex> lock(channels_mu_);
  const Partition* partition = partition_locked(canonical);
  for (const std::vector<int>& group : partition->groups) {
    const auto member = std::find(group.begin(), group.end(), device.value());
    if (member == group.end()) continue;
    std::unique_ptr<Channel>& channel = channels_[group];
    if (!channel) channel = std::make_unique<Channel>(group);
    return {channel.get(), static_cast<size_t>(member - group.begin()), partition};
  }
  ORDO_UNREACHABLE(": device ", device, " is in no replica group");
}

LocalGroups::Route LocalGroups::route_for(const ir::CollectiveAttrs& attrs, GlobalOrdinal device) {
  DeviceRoutes& routes = routes_[device.slot()];
  if (attrs.groups.empty()) {
    if (routes.world.channel == nullptr) routes.world = open_route({}, device);
    return routes.world;
  }
  for (const auto& [groups, route] : routes.partitions) {
    if (groups == attrs.groups) return route;
  }
  routes.partitions.emplace_back(attrs.groups, open_route(attrs.groups, device));
  return routes.partitions.back().second;
}

void LocalGroups::run(const CollectiveCall& call) {
  try {
    run_in_channel(call);
  } catch (...) {
    had_failures_.store(true, std::memory_order_release);
    throw;
  }
}

void LocalGroups::run_in_channel(const CollectiveCall& call) {
  const int64_t arrived_ns = steady_now_ns();
  const Route route = route_for(call.attrs, call.device);
  Channel& channel = *route.channel;
  Member& member = channel.member(route.rank);
  const int64_t sequence = member.next_sequence++;
  const int64_t number =
      progress_[call.device.slot()].start({call.op, route.partition, &channel.group(), &channel, sequence});
  Slot& slot = channel.slot_of(sequence);
  const Participant me{channel,  slot,   sequence,         route.rank, call, channel.group(),
                       status_,  number, *route.partition, progress_};
  DoneMark done(me);
  // The seat is free once every member is done with the slot's earlier
  // collective: known in the steady state, else waited for.
  bool staged = false;
  std::optional<uint64_t> arrived;
  if (sequence - Channel::kSlots <= member.done_through) {
    staged = fill_seat(me, arrived_ns);
    arrived = channel.arrive(slot, sequence, member.done_through);
  }
  if (!arrived) {
    if (std::optional<device::Failure> failure = wait_until_open(me)) failure->raise();
    staged = fill_seat(me, arrived_ns);
    arrived = channel.arrive(slot);
  }
  const uint64_t state = *arrived;
  if (status_.any_gone() && !SlotState::failed(state)) fail_if_member_gone_or_elsewhere(me);
  if (SlotState::failed(state) || !wait_for_arrivals(me)) channel.failure_of(slot).raise();
  // Everyone arrived here, so everyone is done with every earlier collective.
  member.done_through = sequence - 1;
  check_same_op(me, done);
  if (call.timing != nullptr) record_timing(me, arrived_ns);
  if (staged) {
    all_reduce_staged(call, staged_of(me));
    // Collective #sequence + 1 probably stages as much; every member is done
    // with that seat's last use (done_through), so nobody reads it now.
    channel.slot_of(sequence + 1).seats[route.rank].staged.prefetch_for_write(staged_bytes(call));
    return;
  }
  move_data(call.op, calls_of(me), route.rank);
  done.mark();
  wait_until_all_done(me);
}

void LocalGroups::abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
                                    const std::string& reason) {
  had_failures_.store(true, std::memory_order_release);
  const Route route = route_for(attrs, device);
  Channel& channel = *route.channel;
  Member& member = channel.member(route.rank);
  const int64_t sequence = member.next_sequence++;
  progress_[device.slot()].start({op, route.partition, &channel.group(), &channel, sequence});
  channel.abandon(route.rank, sequence, abandoned_failure(device, op, sequence, channel.group(), reason));
  channel.mark_done(route.rank, sequence);
}

void LocalGroups::start_afresh() {
  std::lock_guard<std::mutex> lock(channels_mu_);
  // The routes and progress records point into the channels and
  // partitions, so all go together.
  routes_ = std::vector<DeviceRoutes>(static_cast<size_t>(world_size_));
  progress_ = std::vector<DeviceProgress>(static_cast<size_t>(world_size_));
  channels_.clear();
  partitions_.clear();
  had_failures_.store(false, std::memory_order_release);
}

void LocalGroups::wake() {
  std::lock_guard<std::mutex> lock(channels_mu_);
  for (auto& [group, channel] : channels_) {
    std::lock_guard<std::mutex> channel_lock(channel->mu);
    channel->cv.notify_all();
  }
}

}  // namespace ordo::comm
