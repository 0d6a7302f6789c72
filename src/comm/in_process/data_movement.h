// The data movement of each collective, once every participant of the
// group has arrived: rank `rank` does its share, reading any participant's
// inputs and writing outputs as the op needs. Shares never overlap.
#pragma once

#include <span>

#include "comm/communicator.h"

namespace ordo::comm {

void move_data(ir::OpKind op, std::span<const CollectiveCall* const> calls, size_t rank);

}  // namespace ordo::comm
