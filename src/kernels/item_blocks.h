// Blocks of whole items (planes of a pooling, channels of a batch norm)
// for ops whose items are computed independently, each in one fixed order:
// the blocks depend only on the shape, so the bits do not depend on the
// thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "device/free_cores.h"
#include "kernels/elementwise_rows.h"

namespace ordo::kernels {

// body(i) for every i in [0, count), in blocks of about kRowBlockElements
// of work (work_per_item each) on the free cores; one block runs inline.
template <typename Body>
void for_each_item(int64_t count, int64_t work_per_item, Body&& body) {
  const int64_t per_block = std::max<int64_t>(1, kRowBlockElements / std::max<int64_t>(work_per_item, 1));
  const int64_t blocks = (count + per_block - 1) / per_block;
  auto run_block = [&](int64_t block) {
    const int64_t end = std::min(count, (block + 1) * per_block);
    for (int64_t i = block * per_block; i < end; ++i) body(i);
  };
  if (blocks == 1) {
    run_block(0);
  } else {
    device::run_blocks(blocks, run_block);
  }
}

}  // namespace ordo::kernels
