#include "comm/protocol/group_plan.h"

#include <algorithm>

#include "comm/communicator.h"
#include "comm/protocol/channel_tags.h"
#include "core/check.h"

namespace ordo::comm {

GroupPlan::GroupPlan(std::vector<int> members, const Topology& topology, int tag_upper_bound)
    : group(std::move(members)), text(describe_group(group)) {
  for (size_t rank = 0; rank < group.size(); ++rank) {
    const int process = topology.place(GlobalOrdinal(group[rank])).process;
    auto it = std::find(processes.begin(), processes.end(), process);
    if (it == processes.end()) {
      processes.push_back(process);
      ranks_of.emplace_back();
      it = processes.end() - 1;
    }
    const auto position = static_cast<size_t>(it - processes.begin());
    ranks_of[position].push_back(rank);
    position_by_rank.push_back(position);
  }
  const auto mine = std::find(processes.begin(), processes.end(), topology.process());
  ORDO_CHECK(mine != processes.end());
  me = static_cast<size_t>(mine - processes.begin());
  local_ranks = ranks_of[me];
  // Five tags a group: channel_tag spreads groups over a fifth of MPI's
  // tags, and each group takes the five in a row from there.
  constexpr int kTags = 5;
  const int slots = (tag_upper_bound - kFirstChannelTag + 1) / kTags;
  const int first = kFirstChannelTag + kTags * (channel_tag(group, kFirstChannelTag + slots - 1) - kFirstChannelTag);
  headers = {first, first + 1};
  retractions = {first + 2, first + 3};
  data_tag = first + 4;
}

}  // namespace ordo::comm
