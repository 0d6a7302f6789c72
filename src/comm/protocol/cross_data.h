// The data movement of a collective whose group spans processes, once the
// headers agreed (cross_collective.h): what each process sends the others
// and how it fills its own members' outputs, with the in-process kernels,
// so that every result is bitwise the one the in-process backend gives:
//
// - all_reduce: each process owns a contiguous part of the elements; it
//   receives every other member's inputs for that part, folds every member
//   in group order, and sends the result to the others, chunk by chunk so
//   that folding overlaps the transfers (the bytes of a ring, the fold
//   order of one process). A small all_reduce travels with the headers
//   instead (cross_collective.h).
// - the others move data only: each process receives the parts of other
//   processes' inputs its members read (a reduce_scatter shard, an
//   all_to_all chunk, a permute source, the broadcast root's tensors)
//   into a stand-in tensor of that member, and runs the in-process
//   movement for its own members.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "comm/protocol/group_plan.h"
#include "comm/protocol/transport.h"
#include "device/device_data.h"

namespace ordo::comm {

// Buffers a group's leader reuses from one collective to the next (the
// first touch of fresh pages costs more than a transfer).
class Scratch {
 public:
  std::byte* get(size_t slot, size_t bytes);
  // After a failure the transport may still write or read them: they are kept
  // until exit instead.
  void abandon();

 private:
  std::vector<std::unique_ptr<std::byte[]>> buffers_;
  std::vector<size_t> sizes_;
};

// One collective's transfers, in batches that are waited for together.
class Transfers {
 public:
  using Wait = std::function<std::optional<device::Failure>(Requests&)>;
  Transfers(Transport& transport, const GroupPlan& plan, Wait wait) : transport_(transport), plan_(plan), wait_(std::move(wait)) {}
  ~Transfers();

  // To or from the process at `position` in the plan, in batch `batch`.
  void send(const std::byte* data, size_t bytes, size_t position, size_t batch = 0);
  void receive(std::byte* data, size_t bytes, size_t position, size_t batch = 0);
  void send_region(const std::byte* base, const Region& region, size_t position);
  void receive_region(std::byte* base, const Region& region, size_t position);
  std::optional<device::Failure> wait(size_t batch);
  std::optional<device::Failure> wait_all();
  // A failure: gives up on every transfer.
  void abandon();

 private:
  Requests& batch(size_t b);

  Transport& transport_;
  const GroupPlan& plan_;
  Wait wait_;
  std::vector<Requests> batches_;
};

// Moves the data of calls (this process's members, by local member) with
// the other processes of plan, and fills every local output.
std::optional<device::Failure> move_data_across(const GroupPlan& plan, std::span<const CollectiveCall* const> calls,
                                                Transfers& transfers, Scratch& scratch);

}  // namespace ordo::comm
