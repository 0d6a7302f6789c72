// Where a collective is, for messages. describe(call) itself and
// describe_group(s) are declared with the interface (comm/communicator.h).
//
//   describe_at(call, 3, {0, 1});  // "all_reduce(sum, scale 1) of float32[4] #3 on group [0, 1]"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"

namespace ordo::comm {

// call as collective #sequence of its group's meetings.
std::string describe_at(const CollectiveCall& call, int64_t sequence, const std::vector<int>& group);

// A list of devices with what each does, for a message: "1 (is at #3), 2
// (...)", the first kShown items and then how many more, so that a message
// stays short however many devices a group has.
class ShortList {
 public:
  static constexpr size_t kShown = 8;
  void add(std::string_view item);
  std::string text() const;
  bool empty() const { return count_ == 0; }

 private:
  std::string shown_;
  size_t count_ = 0;
};

}  // namespace ordo::comm
