// The kernel interface: one function per IR op, looked up when a graph is
// compiled. A kernel reads its inputs (dense row-major buffers whose types
// the op's builder already checked) and fills every output. It reports a
// data-dependent failure (an index out of range) by throwing ordo::Error;
// the executor adds which op failed.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/device_numbers.h"
#include "device/buffer.h"
#include "ir/collective_attrs.h"
#include "ir/node.h"

namespace ordo::comm {
class Communicator;
struct CollectiveTiming;
}

namespace ordo::kernels {

struct KernelArgs {
  const ir::Attrs& attrs;
  const std::vector<ir::ValueType>& output_types;
  std::span<const device::Buffer* const> inputs;
  // Filled by the kernel, one per output (a token output gets token_buffer()).
  std::span<std::shared_ptr<const device::Buffer>> outputs;
  GlobalOrdinal device;  // where the graph runs
  comm::Communicator& communicator;  // what collective kernels talk through
  // A collective's attrs, decoded once when the plan was compiled (null for
  // other ops).
  const ir::CollectiveAttrs* collective = nullptr;
  // Where a collective kernel's communicator says when the peers met.
  comm::CollectiveTiming* timing = nullptr;
};

using KernelFn = void (*)(const KernelArgs&);

KernelFn kernel_for(ir::OpKind op);

// The shared, empty value of every token output.
const std::shared_ptr<const device::Buffer>& token_buffer();

}  // namespace ordo::kernels
