#include "kernels/fused.h"

#include <algorithm>

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

}  // namespace

void run_fused(const FusedProgram& program, std::span<const device::Buffer* const> inputs,
               const std::vector<ir::ValueType>& output_types,
               std::span<std::shared_ptr<const device::Buffer>> outputs) {
  std::vector<std::byte*> output_data(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::shared_ptr<device::Buffer> buffer =
        device::allocate_buffer(output_types[o].dtype, output_types[o].shape);
    output_data[o] = buffer->storage.get();
    outputs[o] = std::move(buffer);
  }
  std::byte* const file = registers(program.num_registers);
  // Where ref starts at element `first`, as a row operand.
  auto locate = [&](const FusedRef& ref, int64_t first) -> RowOperand {
    const int64_t offset = first * static_cast<int64_t>(dtype_size(ref.dtype));
    switch (ref.kind) {
      case FusedRef::Kind::kInput: {
        const device::Buffer& in = *inputs[ref.index];
        if (program.input_is_scalar[ref.index]) return {in.storage.get(), 0};
        return {in.storage.get() + offset, 1};
      }
      case FusedRef::Kind::kRegister:
        return {file + ref.index * kRegisterBytes, 1};
      case FusedRef::Kind::kOutput:
        return {output_data[ref.index] + offset, 1};
    }
    return {nullptr, 0};
  };
  for (int64_t first = 0; first < program.numel; first += kFusedTile) {
    const int64_t n = std::min(kFusedTile, program.numel - first);
    for (const FusedInstruction& op : program.code) {
      std::array<RowOperand, 3> operands;
      for (int32_t k = 0; k < op.arity; ++k) operands[k] = locate(op.operands[k], first);
      op.fn(const_cast<void*>(locate(op.result, first).data), n, operands.data());
    }
  }
}

}  // namespace ordo::kernels
