// Collective kernels: allocate the outputs, then hand the op to the
// communicator, which meets the peers and moves the data.
#include <array>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {
namespace {

// Most collectives have a few outputs: their list lives on the stack.
constexpr size_t kInlineOutputs = 8;

template <ir::OpKind kOp>
void run_collective(const KernelArgs& args) {
  const ir::CollectiveAttrs& attrs = *args.collective;
  const size_t data_inputs = args.inputs.size() - (attrs.token_operand ? 1 : 0);
  const size_t data_outputs = args.outputs.size() - 1;  // the last output is the token
  std::array<const device::Buffer*, kInlineOutputs> inline_outputs;
  std::vector<const device::Buffer*> more_outputs;
  std::span<const device::Buffer*> outputs(inline_outputs.data(), data_outputs);
  if (data_outputs > kInlineOutputs) {
    more_outputs.resize(data_outputs);
    outputs = more_outputs;
  }
  for (size_t i = 0; i < data_outputs; ++i) outputs[i] = &make_output(args, i);
  args.outputs[data_outputs] = token_buffer();
  args.communicator.run({kOp, attrs, args.device, args.inputs.first(data_inputs), outputs, args.timing});
}

}  // namespace

template <>
void run<ir::OpKind::kCcToken>(const KernelArgs& args) {
  args.outputs[0] = token_buffer();
}

#define ORDO_COLLECTIVE_KERNEL(name)                        \
  template <>                                               \
  void run<ir::OpKind::k##name>(const KernelArgs& args) {   \
    run_collective<ir::OpKind::k##name>(args);              \
  }
ORDO_COLLECTIVE_KERNEL(AllReduce)
ORDO_COLLECTIVE_KERNEL(AllGather)
ORDO_COLLECTIVE_KERNEL(ReduceScatter)
ORDO_COLLECTIVE_KERNEL(AllToAll)
ORDO_COLLECTIVE_KERNEL(CollectivePermute)
ORDO_COLLECTIVE_KERNEL(CollectiveBroadcast)
#undef ORDO_COLLECTIVE_KERNEL

}  // namespace ordo::kernels
