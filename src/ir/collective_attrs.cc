#include "ir/collective_attrs.h"

#include <algorithm>

#include "core/check.h"
#include "ordo/error.h"

namespace ordo::ir {

// ints: reduce, dim, concat_dim, root, #groups, size of each group, members...,
// #pairs, source, target, ...; reals: scale; flag: token operand.
Attrs CollectiveAttrs::encode() const {
  const CollectiveAttrs& c = *this;
  Attrs attrs;
  size_t members = 0;
  for (const auto& group : c.groups) members += group.size();
  attrs.ints.reserve(5 + c.groups.size() + members + 1 + 2 * c.pairs.size());
  attrs.ints = {static_cast<int64_t>(c.reduce), c.dim, c.concat_dim, c.root,
                static_cast<int64_t>(c.groups.size())};
  for (const auto& group : c.groups) attrs.ints.push_back(static_cast<int64_t>(group.size()));
  for (const auto& group : c.groups) attrs.ints.insert(attrs.ints.end(), group.begin(), group.end());
  attrs.ints.push_back(static_cast<int64_t>(c.pairs.size()));
  for (const auto& [source, target] : c.pairs) {
    attrs.ints.push_back(source);
    attrs.ints.push_back(target);
  }
  attrs.reals = {c.scale};
  attrs.flag = c.token_operand;
  return attrs;
}

CollectiveAttrs CollectiveAttrs::decode(const Attrs& attrs) {
  CollectiveAttrs c;
  const AttrInts& v = attrs.ints;
  size_t at = 0;
  auto next = [&] {
    ORDO_CHECK_LT(at, v.size(), ": collective attrs are truncated");
    return v[at++];
  };
  c.reduce = static_cast<ReduceType>(next());
  c.dim = next();
  c.concat_dim = next();
  c.root = static_cast<int>(next());
  c.groups.resize(static_cast<size_t>(next()));
  for (auto& group : c.groups) group.resize(static_cast<size_t>(next()));
  for (auto& group : c.groups) {
    for (int& member : group) member = static_cast<int>(next());
  }
  c.pairs.resize(static_cast<size_t>(next()));
  for (auto& pair : c.pairs) {
    pair.first = static_cast<int>(next());
    pair.second = static_cast<int>(next());
  }
  c.scale = attrs.reals.empty() ? 1.0 : attrs.reals[0];
  c.token_operand = attrs.flag;
  return c;
}

CollectiveAttrs decode_collective(const Node& node) {
  CollectiveAttrs c = CollectiveAttrs::decode(node.attrs());
  c.location = node.location();
  return c;
}

ReplicaGroups canonical_partition(ReplicaGroups groups, int world_size) {
  std::sort(groups.begin(), groups.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
  const bool every_device_in_order =
      groups.size() == 1 && static_cast<int>(groups[0].size()) == world_size &&
      std::is_sorted(groups[0].begin(), groups[0].end());
  if (every_device_in_order) groups.clear();
  return groups;
}

std::vector<int> CollectiveAttrs::group_of(int device, int world_size) const {
  for (const auto& group : groups) {
    if (std::find(group.begin(), group.end(), device) != group.end()) return group;
  }
  ORDO_CHECK(groups.empty(), ": device ", device, " is in no replica group");
  std::vector<int> all(static_cast<size_t>(world_size));
  for (int i = 0; i < world_size; ++i) all[i] = i;
  return all;
}

}  // namespace ordo::ir
