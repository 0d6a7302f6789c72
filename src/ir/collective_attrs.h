// The attributes of collective nodes, and their encoding in ir::Attrs.
// Every device stores all replica groups (not just its own), so the same
// program hashes the same on every device and shares one compiled plan.
#pragma once

#include <utility>
#include <vector>

#include "ir/node.h"
#include "ordo/collective_types.h"

namespace ordo::ir {

struct CollectiveAttrs {
  ReduceType reduce = ReduceType::kSum;
  double scale = 1.0;
  // all_gather's dim, reduce_scatter's scatter_dim, all_to_all's split
  // dimension.
  int64_t dim = 0;
  int64_t concat_dim = 0;  // all_to_all
  int root = 0;            // collective_broadcast: the root's global ordinal
  ReplicaGroups groups;  // empty: one group of every device
  std::vector<std::pair<int, int>> pairs;
  bool token_operand = true;
  // Where the user's code traced it (IR debug only, else null): the node's
  // location, not encoded in Attrs; fingerprints and messages carry it.
  const SourceLocation* location = nullptr;

  // The members of device's group in rank order (every device if no groups).
  std::vector<int> group_of(int device, int world_size) const;

  // One of the op list's attrs structs (ir/op_attrs.h); location is not
  // encoded.
  Attrs encode() const;
  static CollectiveAttrs decode(const Attrs& attrs);
};

// The one way of writing a partition: the same groups listed in another
// order are the same partition, so they hash, compare and read the same.
// Groups are sorted by their first member (groups are disjoint, so first
// members differ); within a group the order is the rank order and stays. A
// single group of every device in ordinal order is written as no groups.
// groups must partition the world_size devices.
ReplicaGroups canonical_partition(ReplicaGroups groups, int world_size);

// A collective node's attributes with its location.
CollectiveAttrs decode_collective(const Node& node);

}  // namespace ordo::ir
