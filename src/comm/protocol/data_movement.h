// The data movement of each collective, once every participant of the
// group has arrived.
//
// move_data: rank `rank` does its share, reading any participant's inputs
// and writing outputs as the op needs. Shares never overlap. Participants
// then wait until every share is done: their outputs are written by peers,
// and their inputs must outlive the peers' reads.
//
// A small all_reduce instead copies its inputs into the channel before it
// arrives (stage_inputs), and each participant computes all of its own
// outputs from the copies (all_reduce_staged). Nobody reads another's
// buffers, so nobody waits for the others to finish: one meeting per op
// instead of two, which is most of the cost of a small op.
#pragma once

#include <cstddef>
#include <span>

#include "comm/communicator.h"

namespace ordo::comm {

void move_data(ir::OpKind op, std::span<const CollectiveCall* const> calls, size_t rank);

// An all_reduce whose inputs take at most this many bytes is staged. Past
// it, copying in and reducing every rank's copy on every rank costs more
// than the second meeting (measured on 2 devices: equal at 8 KiB).
constexpr size_t kMaxStagedBytes = 4 * 1024;
// The bytes stage_inputs writes for call.
size_t staged_bytes(const CollectiveCall& call);
void stage_inputs(const CollectiveCall& call, std::byte* staged);
// Fills call's outputs from every participant's staged inputs, by rank.
void all_reduce_staged(const CollectiveCall& call, std::span<const std::byte* const> staged);

// dst = inputs[0] op inputs[1] op ..., element by element in that order,
// then scaled: the fold every all_reduce above computes, bitwise, for
// backends that gather the inputs themselves (processes).
void reduce_pointers(DType dtype, std::byte* dst, std::span<const std::byte* const> inputs, int64_t numel,
                     ReduceType reduce, double scale);

}  // namespace ordo::comm
