// The blocks of elementwise ops and fused groups (elementwise_rows.h).
#include <algorithm>

#include "device/free_cores.h"
#include "kernels/elementwise_rows.h"

namespace ordo::kernels {

RowBlocks::RowBlocks(int64_t rows, int64_t length)
    : rows_(rows),
      length_(length),
      rows_per_block_(std::max<int64_t>(1, kRowBlockElements / std::max<int64_t>(length, 1))),
      blocks_per_row_((length + kRowBlockElements - 1) / kRowBlockElements),
      count_(length >= kRowBlockElements ? rows * blocks_per_row_ : (rows + rows_per_block_ - 1) / rows_per_block_) {}

RowBlock RowBlocks::operator[](int64_t block) const {
  if (length_ >= kRowBlockElements) {
    const int64_t first_column = block % blocks_per_row_ * kRowBlockElements;
    return {block / blocks_per_row_, 1, first_column, std::min(kRowBlockElements, length_ - first_column)};
  }
  const int64_t first_row = block * rows_per_block_;
  return {first_row, std::min(rows_per_block_, rows_ - first_row), 0, length_};
}

void run_row_blocks(int64_t rows, int64_t length, void (*body)(void* context, const RowBlock& block),
                    void* context) {
  const RowBlocks blocks(rows, length);
  if (blocks.count() == 1) {
    body(context, blocks[0]);
    return;
  }
  device::run_blocks(blocks.count(), [&](int64_t block) { body(context, blocks[block]); });
}

}  // namespace ordo::kernels
