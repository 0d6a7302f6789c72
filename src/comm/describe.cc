#include <cstdint>
#include <sstream>

#include "comm/describe.h"
#include "ordo/error.h"

namespace ordo::comm {

namespace {

// Lists longer than this show their first and last kShownAtEachEnd.
constexpr size_t kLongList = 16;
constexpr size_t kShownAtEachEnd = 4;

// splitmix64's finalizer over the words: different lists, different digests (but for 2^-64).
uint64_t digest_of(uint64_t digest, uint64_t word) {
  uint64_t z = (digest ^ word) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <typename T, typename Describe>
std::string describe_list(const std::vector<T>& items, Describe describe_item, uint64_t digest) {
  std::ostringstream out;
  out << '[';
  const bool long_list = items.size() > kLongList;
  for (size_t i = 0; i < items.size(); ++i) {
    if (long_list && i == kShownAtEachEnd) {
      out << ", ...";
      i = items.size() - kShownAtEachEnd;
    }
    out << (i ? ", " : "") << describe_item(items[i]);
  }
  out << ']';
  if (long_list) out << " (" << items.size() << " in all, digest " << std::hex << digest << ')';
  return out.str();
}

uint64_t group_digest(const std::vector<int>& group) {
  uint64_t digest = group.size();
  for (int member : group) digest = digest_of(digest, static_cast<uint32_t>(member));
  return digest;
}

// "[0->1, 1->0]".
std::string describe_pairs(const std::vector<std::pair<int, int>>& pairs) {
  uint64_t digest = pairs.size();
  for (const auto& [source, target] : pairs) {
    digest = digest_of(digest_of(digest, static_cast<uint32_t>(source)), static_cast<uint32_t>(target));
  }
  return describe_list(pairs, [](const std::pair<int, int>& pair) { return str_cat(pair.first, "->", pair.second); },
                       digest);
}

}  // namespace

std::string describe_group(const std::vector<int>& group) {
  return describe_list(group, [](int member) { return member; }, group_digest(group));
}

std::string describe_groups(const ReplicaGroups& groups) {
  uint64_t digest = groups.size();
  for (const std::vector<int>& group : groups) digest = digest_of(digest, group_digest(group));
  return describe_list(groups, describe_group, digest);
}

std::string describe(const CollectiveCall& call) {
  const ir::CollectiveAttrs& a = call.attrs;
  std::ostringstream out;
  out << ir::op_name(call.op) << '(';
  switch (call.op) {
    case ir::OpKind::kAllReduce:
      out << reduce_type_name(a.reduce) << ", scale " << a.scale;
      break;
    case ir::OpKind::kReduceScatter:
      out << reduce_type_name(a.reduce) << ", scale " << a.scale << ", dim " << a.dim;
      break;
    case ir::OpKind::kAllGather:
      out << "dim " << a.dim;
      break;
    case ir::OpKind::kAllToAll:
      out << "split " << a.dim << ", concat " << a.concat_dim;
      break;
    case ir::OpKind::kCollectiveBroadcast:
      out << "root " << a.root;
      break;
    case ir::OpKind::kCollectivePermute:
      out << "pairs " << describe_pairs(a.pairs);
      break;
    default:
      break;
  }
  // Partitions that differ must read differently (every op that has
  // groups has a field before them).
  if (!a.groups.empty()) out << ", groups " << describe_groups(a.groups);
  out << ") of ";
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    out << (i ? ", " : "") << dtype_name(call.inputs[i]->dtype)
        << shape_to_string(call.inputs[i]->shape);
  }
  if (call.inputs.empty()) out << "nothing";
  if (a.location != nullptr) out << " at " << a.location->to_string();
  return out.str();
}

std::string describe_at(const CollectiveCall& call, int64_t sequence, const std::vector<int>& group) {
  return str_cat(describe(call), " #", sequence, " on group ", describe_group(group));
}

void ShortList::add(std::string_view item) {
  if (count_++ < kShown) shown_ += str_cat(shown_.empty() ? "" : ", ", item);
}

std::string ShortList::text() const {
  return count_ <= kShown ? shown_ : str_cat(shown_, " and ", count_ - kShown, " more");
}

}  // namespace ordo::comm
