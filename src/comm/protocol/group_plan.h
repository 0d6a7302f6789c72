// A replica group that spans processes, as the protocol sees it: who
// holds which member, which members are this process's, and the tags of
// the group's messages. Made once per group and immutable.
//
//   GroupPlan plan(group, topology, tag_upper_bound);
//   plan.local_ranks;          // this process's members, by rank in the group
//   plan.ranks_of[p];          // the members plan.processes[p] holds
#pragma once

#include <string>
#include <vector>

#include "comm/protocol/transport.h"
#include "comm/topology.h"

namespace ordo::comm {

struct GroupPlan {
  GroupPlan(std::vector<int> group, const Topology& topology, int tag_upper_bound);

  std::vector<int> group;                    // members in group order (the reduction's), global ordinals
  std::string text;                          // "[0, 1, 2, 3]"
  std::vector<int> processes;                // the group's processes, by first member
  std::vector<std::vector<size_t>> ranks_of; // by position in processes: the ranks it holds, in order
  size_t me = 0;                             // this process's position in processes
  std::vector<size_t> local_ranks;           // ranks_of[me]
  PostedTags headers;      // and a small all_reduce's data (posted_inbox.h)
  PostedTags retractions;  // a process fails a collective it had agreed to
  int data_tag = 0;

  // The position in processes of the process holding rank.
  size_t position_of_rank(size_t rank) const { return position_by_rank[rank]; }
  std::vector<size_t> position_by_rank;
};

}  // namespace ordo::comm
