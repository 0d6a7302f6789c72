// Where a collective is, for messages. describe(call) itself and
// describe_group(s) are declared with the interface (comm/communicator.h).
//
//   describe_at(call, 3, {0, 1});  // "all_reduce(sum, scale 1) of float32[4] #3 on group [0, 1]"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ordo::comm {

// call as collective #sequence of its group's meetings.
std::string describe_at(const CollectiveCall& call, int64_t sequence, const std::vector<int>& group);

}  // namespace ordo::comm
