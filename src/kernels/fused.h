// A fused group of elementwise ops: one step that runs several ops of the
// same shape tile by tile, so that the values passed between them live in
// a few cache-sized registers instead of full buffers, and memory is read
// and written once per group instead of once per op. Inputs from outside
// the group may be broadcast to its shape (a bias added to every row).
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "device/buffer.h"
#include "ir/node.h"
#include "kernels/elementwise_rows.h"

namespace ordo::kernels {

// Where an instruction reads or writes a value: an input of the group, a
// register (this tile of an intermediate value) or an output of the group.
struct FusedRef {
  enum class Kind : uint8_t { kInput, kRegister, kOutput };
  Kind kind;
  int32_t index;
  int32_t element_bytes;  // of the value's dtype
};

struct FusedInstruction {
  RowFn fn;
  int32_t arity;
  std::array<FusedRef, 3> operands;
  FusedRef result;
};

// How a group walks its shape: rows of row_length elements (the innermost
// of the shape's dims once the dims every array steps through alike are
// merged), in row-major order. The group's values are dense in its shape;
// its inputs may be broadcast to it, so each has its own element strides.
struct FusedLayout {
  Shape outer;  // the merged dims above the row, outermost first
  int64_t row_length = 1;
  std::vector<std::vector<int64_t>> outer_strides;  // [input][dim of outer]
  std::vector<int64_t> row_strides;                 // [input]
};

// The layout of a group of `shape` whose inputs have input_shapes (each
// broadcastable to shape).
FusedLayout make_fused_layout(const Shape& shape, const std::vector<Shape>& input_shapes);

// An input whose buffer an output may be written into, in place, when the
// input dies with the group and nothing else holds its bytes (the plan and
// the runner decide that, executor/run.cc): the input has the group's shape
// and the output's dtype, and no instruction after the output's writer
// reads it.
struct FusedReuse {
  int32_t input;
  int32_t output;
};

struct FusedProgram {
  int64_t numel = 0;  // of every value in the group
  std::vector<FusedInstruction> code;
  FusedLayout layout;
  int32_t num_registers = 0;
  std::vector<FusedReuse> reusable;  // an output's in the order to try them
};

// Elements per tile: a register holds at most 8 KiB, well inside L1 with a
// few live at once.
inline constexpr int64_t kFusedTile = 1024;

// Runs program over inputs (in group-input order) and fills outputs, whose
// types the compiler recorded in output_types. An output that comes set is
// the buffer of an input a FusedReuse pairs it with, written in place; the
// others are allocated.
void run_fused(const FusedProgram& program, std::span<const device::Buffer* const> inputs,
               const std::vector<ir::ValueType>& output_types,
               std::span<std::shared_ptr<const device::Buffer>> outputs);

}  // namespace ordo::kernels
