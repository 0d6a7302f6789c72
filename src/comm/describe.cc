#include <sstream>

#include "comm/describe.h"

namespace ordo::comm {

std::string describe_group(const std::vector<int>& group) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < group.size(); ++i) out << (i ? ", " : "") << group[i];
  out << ']';
  return out.str();
}

std::string describe_groups(const ReplicaGroups& groups) {
  std::string out = "[";
  for (size_t i = 0; i < groups.size(); ++i) out += (i ? ", " : "") + describe_group(groups[i]);
  return out + ']';
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
      out << "pairs";
      for (const auto& [source, target] : a.pairs) out << ' ' << source << "->" << target;
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

}  // namespace ordo::comm
