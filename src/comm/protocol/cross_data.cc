#include "comm/protocol/cross_data.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "comm/protocol/data_movement.h"
#include "comm/protocol/kept_until_exit.h"
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
      stand_ins_.push_back({like.op, like.attrs, GlobalOrdinal(plan.group[rank]), pointers_[rank], {}});
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

// One tensor of an all_reduce across processes: each process owns a part
// of its elements, [lo, hi) for this one, which moves in chunks.
struct TensorPart {
  TensorPart(const GroupPlan& plan, Calls calls, size_t tensor)
      : plan(plan),
        calls(calls),
        tensor(tensor),
        input(calls[0]->inputs[tensor]),
        element(dtype_size(input->dtype)),
        lo(boundary(plan.me)),
        hi(boundary(plan.me + 1)),
        chunks(chunks_of(lo, hi, element)),
        out(bytes_of(calls[0]->outputs[tensor])) {}

  // Where the part of the process at `position` starts.
  int64_t boundary(size_t position) const {
    return part_boundary(input->numel, position, plan.processes.size(), element);
  }
  size_t bytes(int64_t from, int64_t to) const { return static_cast<size_t>(to - from) * element; }

  const GroupPlan& plan;
  const Calls calls;
  const size_t tensor;
  const device::Buffer* const input;  // the first local member's
  const size_t element;
  const int64_t lo, hi;
  const std::vector<std::pair<int64_t, int64_t>> chunks;  // of [lo, hi)
  std::byte* const out;  // the first local member's output
  // By rank: another process's member's inputs for this part (null for
  // the local members).
  std::vector<std::byte*> theirs;
};

// Every other member's inputs for this process's part, chunk by chunk
// (batch 1 + chunk).
void receive_their_inputs(TensorPart& part, Transfers& transfers, Scratch& scratch) {
  const GroupPlan& plan = part.plan;
  part.theirs.assign(plan.group.size(), nullptr);
  size_t slot = 0;
  for (size_t rank = 0; rank < plan.group.size(); ++rank) {
    if (plan.position_of_rank(rank) != plan.me) part.theirs[rank] = scratch.get(slot++, part.bytes(part.lo, part.hi));
  }
  for (size_t c = 0; c < part.chunks.size(); ++c) {
    const auto [c_lo, c_hi] = part.chunks[c];
    for (size_t p = 0; p < plan.processes.size(); ++p) {
      if (p == plan.me) continue;
      for (size_t rank : plan.ranks_of[p]) {
        transfers.receive(part.theirs[rank] + part.bytes(part.lo, c_lo), part.bytes(c_lo, c_hi), p, 1 + c);
      }
    }
  }
}

// This process's members' inputs for every other process's part, and
// that owner's results after them.
void send_mine_for_their_parts(const TensorPart& part, Transfers& transfers) {
  const GroupPlan& plan = part.plan;
  for (size_t p = 0; p < plan.processes.size(); ++p) {
    if (p == plan.me) continue;
    const auto chunks = chunks_of(part.boundary(p), part.boundary(p + 1), part.element);
    for (const auto& [c_lo, c_hi] : chunks) {
      for (const CollectiveCall* call : part.calls) {
        transfers.send(bytes_of(call->inputs[part.tensor]) + c_lo * part.element, part.bytes(c_lo, c_hi), p);
      }
    }
    for (const auto& [c_lo, c_hi] : chunks) transfers.receive(part.out + c_lo * part.element, part.bytes(c_lo, c_hi), p);
  }
}

// Folds every member of this process's part in group order, chunk by
// chunk as the inputs come, and sends each chunk's result to the others.
std::optional<device::Failure> reduce_my_part(const TensorPart& part, Transfers& transfers) {
  const GroupPlan& plan = part.plan;
  const CollectiveCall& like = *part.calls[0];
  std::vector<const std::byte*> sources(plan.group.size());
  for (size_t c = 0; c < part.chunks.size(); ++c) {
    if (std::optional<device::Failure> failure = transfers.wait(1 + c)) return failure;
    const auto [c_lo, c_hi] = part.chunks[c];
    for (size_t rank = 0; rank < plan.group.size(); ++rank) {
      sources[rank] = part.theirs[rank] != nullptr ? part.theirs[rank] + part.bytes(part.lo, c_lo) : nullptr;
    }
    for (size_t i = 0; i < plan.local_ranks.size(); ++i) {
      sources[plan.local_ranks[i]] = bytes_of(part.calls[i]->inputs[part.tensor]) + c_lo * part.element;
    }
    std::byte* result = part.out + c_lo * part.element;
    reduce_pointers(part.input->dtype, result, sources, c_hi - c_lo, like.attrs.reduce, like.attrs.scale);
    for (size_t p = 0; p < plan.processes.size(); ++p) {
      if (p != plan.me) transfers.send(result, part.bytes(c_lo, c_hi), p);
    }
  }
  return std::nullopt;
}

std::optional<device::Failure> all_reduce_across(const GroupPlan& plan, Calls calls, Transfers& transfers,
                                                 Scratch& scratch) {
  for (size_t t = 0; t < calls[0]->inputs.size(); ++t) {
    TensorPart part(plan, calls, t);
    receive_their_inputs(part, transfers, scratch);
    send_mine_for_their_parts(part, transfers);
    if (std::optional<device::Failure> failure = reduce_my_part(part, transfers)) return failure;
    if (std::optional<device::Failure> failure = transfers.wait_all()) return failure;
    const size_t bytes = part.input->nbytes();
    for (size_t i = 1; i < calls.size(); ++i) {
      if (bytes > 0) std::memcpy(bytes_of(calls[i]->outputs[t]), part.out, bytes);
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

// What one process posts of one collective. Every process runs the same
// loops in the same order, so sends and receives pair up in order.
struct Movement {
  const GroupPlan& plan;
  const CallsByRank& members;
  Transfers& transfers;
  const CollectiveCall& like;

  bool is_mine(size_t rank) const { return plan.position_of_rank(rank) == plan.me; }
  // Sends rank's whole input t to position p, or receives it from there.
  void move_input(size_t rank, size_t t, size_t p) const {
    const device::Buffer* input = members.input(rank, t);
    if (input->nbytes() == 0) return;
    if (is_mine(rank)) {
      transfers.send(bytes_of(input), input->nbytes(), p);
    } else {
      transfers.receive(bytes_of(input), input->nbytes(), plan.position_of_rank(rank));
    }
  }
};

void post_all_gather(const Movement& m) {
  const GroupPlan& plan = m.plan;
  for (size_t p = 0; p < plan.processes.size(); ++p) {
    if (p == plan.me) continue;
    for (size_t rank : plan.ranks_of[p]) m.move_input(rank, 0, p);  // theirs to me
    for (size_t rank : plan.local_ranks) m.move_input(rank, 0, p);  // mine to them
  }
}

void post_broadcast(const Movement& m) {
  const GroupPlan& plan = m.plan;
  const auto root = std::find(plan.group.begin(), plan.group.end(), m.like.attrs.root);
  if (root == plan.group.end()) return;  // every output is zeros
  const auto root_rank = static_cast<size_t>(root - plan.group.begin());
  for (size_t p = 0; p < plan.processes.size(); ++p) {
    if (p == plan.me || (!m.is_mine(root_rank) && p != plan.position_of_rank(root_rank))) continue;
    for (size_t t = 0; t < m.like.inputs.size(); ++t) m.move_input(root_rank, t, p);
  }
}

void post_permute(const Movement& m) {
  const GroupPlan& plan = m.plan;
  std::set<std::pair<size_t, size_t>> moved;  // (source rank, process position)
  for (const auto& [from, to] : m.like.attrs.pairs) {
    const auto source = static_cast<size_t>(from), target = static_cast<size_t>(to);
    const size_t from_p = plan.position_of_rank(source), to_p = plan.position_of_rank(target);
    if (from_p == to_p || (from_p != plan.me && to_p != plan.me)) continue;
    if (moved.emplace(source, to_p).second) m.move_input(source, 0, to_p);
  }
}

// reduce_scatter and all_to_all: the part of every input each member reads.
void post_parts_read(const Movement& m) {
  const GroupPlan& plan = m.plan;
  const size_t ranks = plan.group.size();
  for (size_t p = 0; p < plan.processes.size(); ++p) {
    if (p == plan.me) continue;
    for (size_t q : plan.ranks_of[p]) {  // theirs to me: what my members read
      for (size_t r : plan.local_ranks) {
        const Region region = part_read_by(m.like, r, ranks);
        if (region.bytes() > 0) m.transfers.receive_region(bytes_of(m.members.input(q, 0)), region, p);
      }
    }
    for (size_t q : plan.local_ranks) {  // mine to them
      for (size_t r : plan.ranks_of[p]) {
        const Region region = part_read_by(m.like, r, ranks);
        if (region.bytes() > 0) m.transfers.send_region(bytes_of(m.members.input(q, 0)), region, p);
      }
    }
  }
}

void post_movement(const GroupPlan& plan, const CallsByRank& members, Transfers& transfers) {
  const Movement m{plan, members, transfers, *members.calls()[plan.local_ranks[0]]};
  switch (m.like.op) {
    case ir::OpKind::kAllGather: return post_all_gather(m);
    case ir::OpKind::kCollectiveBroadcast: return post_broadcast(m);
    case ir::OpKind::kCollectivePermute: return post_permute(m);
    case ir::OpKind::kReduceScatter:
    case ir::OpKind::kAllToAll: return post_parts_read(m);
    default:
      ORDO_UNREACHABLE(": ", ir::op_name(m.like.op), " has no data movement across processes");
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
  for (auto& buffer : buffers_) keep_until_exit(std::shared_ptr<std::byte[]>(std::move(buffer)));
  buffers_.clear();
  sizes_.clear();
}

Transfers::~Transfers() { abandon(); }

Requests& Transfers::batch(size_t b) {
  if (b >= batches_.size()) batches_.resize(b + 1);
  return batches_[b];
}

void Transfers::send(const std::byte* data, size_t bytes, size_t position, size_t b) {
  transport_.send(data, bytes, plan_.processes[position], plan_.data_tag, batch(b));
}

void Transfers::receive(std::byte* data, size_t bytes, size_t position, size_t b) {
  transport_.receive(data, bytes, plan_.processes[position], plan_.data_tag, batch(b));
}

void Transfers::send_region(const std::byte* base, const Region& region, size_t position) {
  transport_.send_region(base, region, plan_.processes[position], plan_.data_tag, batch(0));
}

void Transfers::receive_region(std::byte* base, const Region& region, size_t position) {
  transport_.receive_region(base, region, plan_.processes[position], plan_.data_tag, batch(0));
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
  for (Requests& requests : batches_) transport_.abandon(requests);
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
