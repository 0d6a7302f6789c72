// The IR's op kinds, generated from op_list.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace ordo::ir {

enum class OpKind : uint16_t {
#define ORDO_OP(name, str, group, attrs) k##name,
#include "ir/op_list.def"
#undef ORDO_OP
  kCount
};
inline constexpr int kNumOps = static_cast<int>(OpKind::kCount);

enum class OpGroup : uint8_t {
  kLeaf,
  kUnary,
  kBinary,
  kTernary,
  kReduce,
  kLinalg,
  kMovement,
  kRandom,
  kCollective,
  kNn,  // the fused layers of training: pooling, batch norm
};

std::string_view op_name(OpKind op);
OpGroup op_group(OpKind op);

}  // namespace ordo::ir
