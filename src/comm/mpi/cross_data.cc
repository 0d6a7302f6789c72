#include "comm/mpi/cross_data.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "comm/protocol/data_movement.h"
#include "core/check.h"

namespace ordo::comm {
namespace {

using Calls = std::span<const CollectiveCall* const>;

// An all_reduce's parts move in chunks of this size, so that the owner
// folds one while the next is on its way.
constexpr size_t kChunkBytes = size_t{1} << 20;

std::byte* bytes_of(const device::Buffer* buffer) { return buffer->storage.get(); }

int64_t extent(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// Process `part` of `parts`' elements: equal parts that start on cache lines.
int64_t part_boundary(int64_t numel, size_t part, size_t parts, size_t element) {
  if (part == parts) return numel;
  const auto line = static_cast<int64_t>(std::max<size_t>(1, 64 / element));
  return numel * static_cast<int64_t>(part) / static_cast<int64_t>(parts) / line * line;
}

// The chunks [lo, hi) of elements [begin, end), in order.
std::vector<std::pair<int64_t, int64_t>> chunks_of(int64_t begin, int64_t end, size_t element) {
  const auto step = static_cast<int64_t>(std::max<size_t>(1, kChunkBytes / element));
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t lo = begin; lo < end; lo += step) chunks.emplace_back(lo, std::min(end, lo + step));
  return chunks;
}

// Every member's call by rank: this process's own, and stand-ins for the
// others whose inputs point into scratch (filled with what the local
// members read of them).
class CallsByRank {
 public:
  CallsByRank(const GroupPlan& plan, Calls local, Scratch& scratch) : by_rank_(plan.group.size(), nullptr) {
    const CollectiveCall& like = *local[0];
    const size_t ranks = plan.group.size();
    stand_ins_.reserve(ranks);
    buffers_.resize(ranks);
    pointers_.resize(ranks);
    for (size_t i = 0; i < plan.local_ranks.size(); ++i) by_rank_[plan.local_ranks[i]] = local[i];
    size_t slot = 0;
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (by_rank_[rank] != nullptr) continue;
      for (const device::Buffer* input : like.inputs) {
        std::byte* data = scratch.get(slot++, input->nbytes());
        buffers_[rank].push_back({input->dtype, input->shape, input->numel,
                                  std::shared_ptr<std::byte>(std::shared_ptr<std::byte>(), data)});
      }
      for (const device::Buffer& buffer : buffers_[rank]) pointers_[rank].push_back(&buffer);
      stand_ins_.push_back({like.op, like.attrs, plan.group[rank], pointers_[rank], {}});
      by_rank_[rank] = &stand_ins_.back();
    }
  }
  Calls calls() const { return by_rank_; }
  const device::Buffer* input(size_t rank, size_t tensor) const { return by_rank_[rank]->inputs[tensor]; }

 private:
  std::vector<CollectiveCall> stand_ins_;
  std::vector<std::vector<device::Buffer>> buffers_;
  std::vector<std::vector<const device::Buffer*>> pointers_;
  std::vector<const CollectiveCall*> by_rank_;
};

std::optional<device::Failure> all_reduce_across(const GroupPlan& plan, Calls calls, Transfers& transfers,
                                                 Scratch& scratch) {
  const CollectiveCall& like = *calls[0];
  const size_t processes = plan.processes.size();
  for (size_t t = 0; t < like.inputs.size(); ++t) {
    const device::Buffer* input = like.inputs[t];
    const size_t element = dtype_size(input->dtype);
    auto range = [&](size_t position) {
      return std::pair{part_boundary(input->numel, position, processes, element),
                       part_boundary(input->numel, position + 1, processes, element)};
    };
    const auto [lo, hi] = range(plan.me);
    const auto mine = chunks_of(lo, hi, element);
    // Every other member's inputs for this process's part, chunk by chunk
    // (batch 1 + chunk).
    std::vector<std::byte*> theirs(plan.group.size(), nullptr);
    size_t slot = 0;
    for (size_t rank = 0; rank < plan.group.size(); ++rank) {
      if (plan.position_of_rank(rank) != plan.me) theirs[rank] = scratch.get(slot++, static_cast<size_t>(hi - lo) * element);
    }
    for (size_t c = 0; c < mine.size(); ++c) {
      const auto [c_lo, c_hi] = mine[c];
      for (size_t p = 0; p < processes; ++p) {
        if (p == plan.me) continue;
        for (size_t rank : plan.ranks_of[p]) {
          transfers.receive(theirs[rank] + (c_lo - lo) * element, static_cast<size_t>(c_hi - c_lo) * element, p, 1 + c);
        }
      }
    }
    std::byte* out = bytes_of(calls[0]->outputs[t]);
    for (size_t p = 0; p < processes; ++p) {
      if (p == plan.me) continue;
      const auto [p_lo, p_hi] = range(p);
      for (const auto& [c_lo, c_hi] : chunks_of(p_lo, p_hi, element)) {
        for (const CollectiveCall* call : calls) {
          transfers.send(bytes_of(call->inputs[t]) + c_lo * element, static_cast<size_t>(c_hi - c_lo) * element, p);
        }
      }
      // The owner's results come after its share of these inputs.
      for (const auto& [c_lo, c_hi] : chunks_of(p_lo, p_hi, element)) {
        transfers.receive(out + c_lo * element, static_cast<size_t>(c_hi - c_lo) * element, p);
      }
    }
    std::vector<const std::byte*> sources(plan.group.size());
    for (size_t c = 0; c < mine.size(); ++c) {
      if (std::optional<device::Failure> failure = transfers.wait(1 + c)) return failure;
      const auto [c_lo, c_hi] = mine[c];
      for (size_t rank = 0; rank < plan.group.size(); ++rank) {
        sources[rank] = theirs[rank] != nullptr ? theirs[rank] + (c_lo - lo) * element : nullptr;
      }
      for (size_t i = 0; i < plan.local_ranks.size(); ++i) {
        sources[plan.local_ranks[i]] = bytes_of(calls[i]->inputs[t]) + c_lo * element;
      }
      const size_t bytes = static_cast<size_t>(c_hi - c_lo) * element;
      reduce_pointers(input->dtype, out + c_lo * element, sources, c_hi - c_lo, like.attrs.reduce, like.attrs.scale);
      for (size_t p = 0; p < processes; ++p) {
        if (p != plan.me) transfers.send(out + c_lo * element, bytes, p);
      }
    }
    if (std::optional<device::Failure> failure = transfers.wait_all()) return failure;
    for (size_t i = 1; i < calls.size(); ++i) {
      if (input->nbytes() > 0) std::memcpy(bytes_of(calls[i]->outputs[t]), out, input->nbytes());
    }
  }
  return std::nullopt;
}

// What a member at `rank` reads of another's input 0: a reduce_scatter
// shard or an all_to_all chunk.
Region part_read_by(const CollectiveCall& like, size_t rank, size_t ranks) {
  const Shape& shape = like.inputs[0]->shape;
  const size_t element = dtype_size(like.inputs[0]->dtype);
  const auto dim = static_cast<size_t>(like.attrs.dim);
  const int64_t outer = extent(shape, 0, dim);
  const int64_t inner = extent(shape, dim + 1, shape.size());
  const int64_t along = shape[dim] / static_cast<int64_t>(ranks);
  if (like.op == ir::OpKind::kReduceScatter) {
    // The shard of the flattened trailing dimensions: row / ranks elements.
    const int64_t row = shape[dim] * inner;
    const int64_t chunk = row / static_cast<int64_t>(ranks);
    return {static_cast<size_t>(static_cast<int64_t>(rank) * chunk) * element, static_cast<size_t>(outer),
            static_cast<size_t>(chunk) * element, static_cast<size_t>(row) * element};
  }
  return {static_cast<size_t>(static_cast<int64_t>(rank) * along * inner) * element, static_cast<size_t>(outer),
          static_cast<size_t>(along * inner) * element, static_cast<size_t>(shape[dim] * inner) * element};
}

// Posts what the op needs to move: every process runs the same loops in
// the same order, so sends and receives pair up in order.
void post_movement(const GroupPlan& plan, const CallsByRank& members, Transfers& transfers) {
  const CollectiveCall& like = *members.calls()[plan.local_ranks[0]];
  const size_t ranks = plan.group.size();
  auto is_mine = [&](size_t rank) { return plan.position_of_rank(rank) == plan.me; };
  // Sends rank's whole input t to position p, or receives it from there.
  auto move_input = [&](size_t rank, size_t t, size_t p) {
    const device::Buffer* input = members.input(rank, t);
    if (input->nbytes() == 0) return;
    if (is_mine(rank)) {
      transfers.send(bytes_of(input), input->nbytes(), p);
    } else {
      transfers.receive(bytes_of(input), input->nbytes(), plan.position_of_rank(rank));
    }
  };
  switch (like.op) {
    case ir::OpKind::kAllGather:
      for (size_t p = 0; p < plan.processes.size(); ++p) {
        if (p == plan.me) continue;
        for (size_t rank : plan.ranks_of[p]) move_input(rank, 0, p);  // theirs to me
        for (size_t rank : plan.local_ranks) move_input(rank, 0, p);  // mine to them
      }
      return;
    case ir::OpKind::kCollectiveBroadcast: {
      const auto root = std::find(plan.group.begin(), plan.group.end(), like.attrs.root);
      if (root == plan.group.end()) return;  // every output is zeros
      const auto root_rank = static_cast<size_t>(root - plan.group.begin());
      for (size_t p = 0; p < plan.processes.size(); ++p) {
        if (p == plan.me || (!is_mine(root_rank) && p != plan.position_of_rank(root_rank))) continue;
        for (size_t t = 0; t < like.inputs.size(); ++t) move_input(root_rank, t, p);
      }
      return;
    }
    case ir::OpKind::kCollectivePermute: {
      std::set<std::pair<size_t, size_t>> moved;  // (source rank, process position)
      for (const auto& [from, to] : like.attrs.pairs) {
        const auto source = static_cast<size_t>(from), target = static_cast<size_t>(to);
        const size_t from_p = plan.position_of_rank(source), to_p = plan.position_of_rank(target);
        if (from_p == to_p || (from_p != plan.me && to_p != plan.me)) continue;
        if (moved.emplace(source, to_p).second) move_input(source, 0, to_p);
      }
      return;
    }
    case ir::OpKind::kReduceScatter:
    case ir::OpKind::kAllToAll:
      for (size_t p = 0; p < plan.processes.size(); ++p) {
        if (p == plan.me) continue;
        for (size_t q : plan.ranks_of[p]) {  // theirs to me: what my members read
          for (size_t r : plan.local_ranks) {
            const Region region = part_read_by(like, r, ranks);
            if (region.bytes() > 0) transfers.receive_region(bytes_of(members.input(q, 0)), region, p);
          }
        }
        for (size_t q : plan.local_ranks) {  // mine to them
          for (size_t r : plan.ranks_of[p]) {
            const Region region = part_read_by(like, r, ranks);
            if (region.bytes() > 0) transfers.send_region(bytes_of(members.input(q, 0)), region, p);
          }
        }
      }
      return;
    default:
      ORDO_UNREACHABLE(": ", ir::op_name(like.op), " has no data movement across processes");
  }
}

}  // namespace

std::byte* Scratch::get(size_t slot, size_t bytes) {
  if (slot >= buffers_.size()) {
    buffers_.resize(slot + 1);
    sizes_.resize(slot + 1, 0);
  }
  if (sizes_[slot] < bytes) {
    // Not value-initialized: pages are touched only where data lands.
    buffers_[slot].reset(new std::byte[bytes]);
    sizes_[slot] = bytes;
  }
  return buffers_[slot].get();
}

void Scratch::abandon() {
  for (auto& buffer : buffers_) (void)buffer.release();  // kept until exit, on purpose
  buffers_.clear();
  sizes_.clear();
}

Transfers::~Transfers() { abandon(); }

Requests& Transfers::batch(size_t b) {
  if (b >= batches_.size()) batches_.resize(b + 1);
  return batches_[b];
}

void Transfers::send(const std::byte* data, size_t bytes, size_t position, size_t b) {
  link_.send(data, bytes, plan_.processes[position], plan_.data_tag, batch(b));
}

void Transfers::receive(std::byte* data, size_t bytes, size_t position, size_t b) {
  link_.receive(data, bytes, plan_.processes[position], plan_.data_tag, batch(b));
}

void Transfers::send_region(const std::byte* base, const Region& region, size_t position) {
  link_.send_region(base, region, plan_.processes[position], plan_.data_tag, batch(0));
}

void Transfers::receive_region(std::byte* base, const Region& region, size_t position) {
  link_.receive_region(base, region, plan_.processes[position], plan_.data_tag, batch(0));
}

std::optional<device::Failure> Transfers::wait(size_t b) {
  if (b >= batches_.size() || batches_[b].empty()) return std::nullopt;
  return wait_(batches_[b]);
}

std::optional<device::Failure> Transfers::wait_all() {
  for (size_t b = 0; b < batches_.size(); ++b) {
    if (std::optional<device::Failure> failure = wait(b)) return failure;
  }
  return std::nullopt;
}

void Transfers::abandon() {
  for (Requests& requests : batches_) link_.abandon(requests);
}

std::optional<device::Failure> move_data_across(const GroupPlan& plan, Calls calls, Transfers& transfers,
                                                Scratch& scratch) {
  if (calls[0]->op == ir::OpKind::kAllReduce) return all_reduce_across(plan, calls, transfers, scratch);
  const CallsByRank members(plan, calls, scratch);
  post_movement(plan, members, transfers);
  if (std::optional<device::Failure> failure = transfers.wait_all()) return failure;
  for (size_t rank : plan.local_ranks) move_data(calls[0]->op, members.calls(), rank);
  return std::nullopt;
}

}  // namespace ordo::comm
