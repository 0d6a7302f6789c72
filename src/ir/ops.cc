#include "ir/ops.h"

#include <array>

namespace ordo::ir {
namespace {

struct OpInfo {
  std::string_view name;
  OpGroup group;
};

constexpr OpInfo kOpInfo[] = {
#define ORDO_OP(name, str, group) {str, OpGroup::group},
#include "ir/op_list.def"
#undef ORDO_OP
};
static_assert(std::size(kOpInfo) == kNumOps, "every op needs one info row");

}  // namespace

std::string_view op_name(OpKind op) { return kOpInfo[static_cast<int>(op)].name; }
OpGroup op_group(OpKind op) { return kOpInfo[static_cast<int>(op)].group; }

}  // namespace ordo::ir
