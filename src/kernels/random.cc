// RandomUniform: the counter-based generator of core/counter_random.h, with
// the seed read from the op's 0-d int64 operand. Element i depends only on
// (seed, i), so the blocks on the free cores give the same bits whatever
// their number.
#include "core/counter_random.h"
#include "kernels/elementwise_rows.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {

template <>
void run<ir::OpKind::kRandomUniform>(const KernelArgs& args) {
  const device::Buffer& out = make_output(args);
  if (out.numel == 0) return;
  const auto seed = static_cast<uint64_t>(args.inputs[0]->data<int64_t>()[0]);
  const auto [low, high] = ir::decode<ir::OpKind::kRandomUniform>(args.attrs);
  visit_dtype(FloatingTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T* const dst = out.mutable_data<T>();
    run_row_blocks(1, out.numel, [&](const RowBlock& block) {
      const int64_t end = block.first_column + block.columns;
      for (int64_t i = block.first_column; i < end; ++i) {
        dst[i] = uniform_sample<T>(seed, static_cast<uint64_t>(i), low, high);
      }
    });
  });
}

}  // namespace ordo::kernels
