// The random state of each device: the seeds of the random ops made on it.
// A draw's seed derives from (the device's manual seed, its global ordinal,
// the draws it took since), so devices seeded alike still draw different
// numbers (ordo's own manual_seed), or, seeded with SeedScope::kShared (the
// PyTorch front end's torch.manual_seed in a replica and xm.set_rng_state,
// as torch_xla's devices draw), from (the seed, the draws) alone, so that
// replicas seeded alike draw alike. A device's numbers never depend on what
// other devices or threads draw. Both front ends set the same state.
//
//   ordo::manual_seed(0);                      // the calling thread's device
//   ordo::Tensor mask = ordo::random_uniform({4}, ordo::next_seed());
#pragma once

#include <cstdint>

#include "ordo/tensor.h"

namespace ordo {

// Whether the device's ordinal enters each draw's seed.
enum class SeedScope { kPerDevice, kShared };

// device: this process's device (-1: the calling thread's current device).
void manual_seed(uint64_t seed, int device = -1, SeedScope scope = SeedScope::kPerDevice);
void manual_seed_all(uint64_t seed);
// The seed last given to the device (0 until one is).
uint64_t manual_seed_of(int device = -1);
// The next draw's seed as a 0-d int64 device-data tensor on the device:
// a new seed each step reuses the compiled graph.
Tensor next_seed(int device = -1, Caller caller = Caller::current());
// The next seed for initializing parameters: from the manual seed and the
// initializations since, not from the ordinal, so that every device seeded
// alike builds a model with the same weights, as torch does.
uint64_t next_init_seed(int device = -1);

}  // namespace ordo
