#include "kernels/fused.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/strided_walk.h"
#include "ordo/error.h"

namespace ordo::kernels {
namespace {

constexpr size_t kRegisterBytes = kFusedTile * sizeof(double);
#define ORDO_FITS_IN_REGISTER(name, type, str) \
  static_assert(sizeof(type) <= sizeof(double), "a register holds a tile of any dtype");
ORDO_DTYPES(ORDO_FITS_IN_REGISTER)
#undef ORDO_FITS_IN_REGISTER

// The registers of this thread, grown to the largest program it ran.
std::byte* registers(int32_t count) {
  struct alignas(64) Block {
    std::byte bytes[kRegisterBytes];
  };
  thread_local std::vector<Block> blocks;
  if (blocks.size() < static_cast<size_t>(count)) blocks.resize(static_cast<size_t>(count));
  return blocks.empty() ? nullptr : blocks.front().bytes;
}

template <size_t kElementBytes>
void copy_row(void* dst, int64_t n, const RowOperand* operands) {
  std::memcpy(dst, operands[0].data, static_cast<size_t>(n) * kElementBytes);
}

RowFn copy_row_fn(int32_t element_bytes) {
  switch (element_bytes) {
    case 1: return &copy_row<1>;
    case 2: return &copy_row<2>;
    case 4: return &copy_row<4>;
    case 8: return &copy_row<8>;
  }
  ORDO_UNREACHABLE(": no element has ", element_bytes, " bytes");
}

// The program's code for outputs written over inputs (outputs[o] is then
// inputs[k]'s buffer). A row's destination aliases none of its operands, so
// a writer that reads the input its output overwrites writes the scratch
// register instead, and a copy stores it. Checks the FusedReuse rule: no
// instruction reads such an input once its output is written.
std::vector<FusedInstruction> in_place_code(const FusedProgram& program, std::span<const device::Buffer* const> inputs,
                                            std::span<std::shared_ptr<const device::Buffer>> outputs,
                                            int32_t scratch) {
  const auto overwrites = [&](const FusedRef& output, const FusedRef& operand) {
    return output.kind == FusedRef::Kind::kOutput && operand.kind == FusedRef::Kind::kInput &&
           outputs[output.index].get() == inputs[operand.index];
  };
  std::vector<FusedInstruction> code;
  std::vector<FusedRef> written;  // outputs over inputs, so far
  for (const FusedInstruction& op : program.code) {
    bool reads_own = false;
    for (int32_t k = 0; k < op.arity; ++k) {
      reads_own = reads_own || overwrites(op.result, op.operands[k]);
      for (const FusedRef& output : written) {
        ORDO_CHECK(!overwrites(output, op.operands[k]), ": a fused group reads input ", op.operands[k].index,
                   " after writing output ", output.index, " over it");
      }
    }
    if (op.result.kind == FusedRef::Kind::kOutput && outputs[op.result.index]) written.push_back(op.result);
    if (!reads_own) {
      code.push_back(op);
      continue;
    }
    FusedInstruction into_scratch = op;
    into_scratch.result = {FusedRef::Kind::kRegister, scratch, op.result.element_bytes};
    code.push_back(into_scratch);
    code.push_back({copy_row_fn(op.result.element_bytes), 1, {into_scratch.result}, op.result});
  }
  return code;
}

}  // namespace

FusedLayout make_fused_layout(const Shape& shape, const std::vector<Shape>& input_shapes) {
  // Array 0 is the group's own dense values; then the inputs.
  std::vector<Strides> strides{contiguous_strides(shape)};
  for (const Shape& input : input_shapes) {
    bool broadcasts = input.size() <= shape.size();
    for (size_t d = 0; d < input.size() && broadcasts; ++d) {
      const int64_t size = input[input.size() - 1 - d];
      broadcasts = size == 1 || size == shape[shape.size() - 1 - d];
    }
    ORDO_CHECK(broadcasts, ": a fused group of shape ", shape_to_string(shape), " got an input of shape ",
               shape_to_string(input));
    strides.push_back(broadcast_strides(input, shape));
  }
  Shape dims;
  std::vector<Strides> merged(strides.size());
  merge_dims(shape, strides, dims, merged);
  FusedLayout layout;
  if (dims.empty()) {  // one element
    layout.outer_strides.assign(input_shapes.size(), {});
    layout.row_strides.assign(input_shapes.size(), 0);
    return layout;
  }
  layout.row_length = dims.back();
  layout.outer.assign(dims.begin(), dims.end() - 1);
  for (size_t k = 1; k < merged.size(); ++k) {
    layout.row_strides.push_back(merged[k].back());
    layout.outer_strides.emplace_back(merged[k].begin(), merged[k].end() - 1);
  }
  return layout;
}

void run_fused(const FusedProgram& program, std::span<const device::Buffer* const> inputs,
               const std::vector<ir::ValueType>& output_types,
               std::span<std::shared_ptr<const device::Buffer>> outputs) {
  const bool in_place =
      std::any_of(outputs.begin(), outputs.end(), [](const auto& output) { return output != nullptr; });
  const std::vector<FusedInstruction> rewritten =
      in_place ? in_place_code(program, inputs, outputs, program.num_registers) : std::vector<FusedInstruction>{};
  const std::span<const FusedInstruction> code = in_place ? rewritten : program.code;
  const int32_t num_registers = program.num_registers + (in_place ? 1 : 0);
  std::vector<std::byte*> output_data(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o]) {  // an input's buffer
      output_data[o] = outputs[o]->storage.get();
      continue;
    }
    std::shared_ptr<device::Buffer> buffer =
        device::allocate_buffer(output_types[o].dtype, output_types[o].shape);
    output_data[o] = buffer->storage.get();
    outputs[o] = std::move(buffer);
  }
  if (program.numel == 0) return;
  const FusedLayout& layout = program.layout;
  // Blocks of rows (or of one long row) on the free cores; a block's
  // columns start on a tile boundary, since kRowBlockElements is a
  // multiple of kFusedTile, so the tiles are those of a serial run.
  static_assert(kRowBlockElements % kFusedTile == 0);
  run_row_blocks(program.numel / layout.row_length, layout.row_length, [&](const RowBlock& block) {
    std::byte* const file = registers(num_registers);  // this thread's
    // Element offsets of the current row's start, per input.
    std::vector<int64_t> row_offset(inputs.size(), 0);
    std::vector<int64_t> index(layout.outer.size(), 0);
    seek_row(layout.outer, layout.outer.size(), layout.outer_strides, block.first_row, index, row_offset);
    // Where ref reads or writes the tile that starts `column` elements into
    // row `row`, as a row operand.
    auto locate = [&](const FusedRef& ref, int64_t row, int64_t column) -> RowOperand {
      const auto bytes = [&](int64_t elements) { return elements * ref.element_bytes; };
      switch (ref.kind) {
        case FusedRef::Kind::kInput: {
          const int64_t stride = layout.row_strides[ref.index];
          return {inputs[ref.index]->storage.get() + bytes(row_offset[ref.index] + column * stride), stride};
        }
        case FusedRef::Kind::kRegister:
          return {file + ref.index * kRegisterBytes, 1};
        case FusedRef::Kind::kOutput:
          return {output_data[ref.index] + bytes(row * layout.row_length + column), 1};
      }
      return {nullptr, 0};
    };
    const int64_t end_column = block.first_column + block.columns;
    for (int64_t row = block.first_row; row < block.first_row + block.rows; ++row) {
      for (int64_t column = block.first_column; column < end_column; column += kFusedTile) {
        const int64_t n = std::min(kFusedTile, end_column - column);
        for (const FusedInstruction& op : code) {
          std::array<RowOperand, 3> operands;
          for (int32_t k = 0; k < op.arity; ++k) operands[k] = locate(op.operands[k], row, column);
          op.fn(const_cast<void*>(locate(op.result, row, column).data), n, operands.data());
        }
      }
      next_row(layout.outer, layout.outer.size(), layout.outer_strides, index, row_offset);
    }
  });
}

}  // namespace ordo::kernels
