#include "ir/ops.h"

#include <array>

namespace ordo::ir {
namespace {

struct OpInfo {
  std::string_view name;
  OpGroup group;
};

constexpr OpInfo kOpInfo[] = {
#define ORDO_OP(name, str, group, attrs) {str, OpGroup::group},
#include "ir/op_list.def"
#undef ORDO_OP
};

// Generated from the same list as OpKind, so a row per op is given; what the
// list itself can get wrong is a name used twice (a copied line), which
// would make graph dumps and messages ambiguous.
constexpr bool names_are_unique() {
  for (size_t i = 0; i < std::size(kOpInfo); ++i) {
    if (kOpInfo[i].name.empty()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (kOpInfo[i].name == kOpInfo[j].name) return false;
    }
  }
  return true;
}
static_assert(names_are_unique(), "op_list.def: every op needs a name of its own");

}  // namespace

std::string_view op_name(OpKind op) { return kOpInfo[static_cast<int>(op)].name; }
OpGroup op_group(OpKind op) { return kOpInfo[static_cast<int>(op)].group; }

}  // namespace ordo::ir
