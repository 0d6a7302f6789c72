// Counters whose names are known only at run time: the PyTorch front end
// counts each op that falls back to PyTorch's CPU kernels as
// "aten::<op>", as torch_xla does. Counted at the rate of fallbacks (each
// one copies tensors to the host and back), so one mutex serves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ordo::metrics {

// slot: the device's index in its process.
void count_named(std::string_view name, int slot);
// Every named counter that is not zero, summed over the slots (slot -1)
// or of one slot, sorted by name.
std::vector<std::pair<std::string, int64_t>> named_counters(int slot = -1);
void clear_named_counters();

}  // namespace ordo::metrics
