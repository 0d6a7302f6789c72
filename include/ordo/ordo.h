// ordo: a lazy tensor runtime whose collectives run in order on every device.
//
//   #include <ordo/ordo.h>
//
//   ordo::init(2);
//   for (int d = 0; d < 2; ++d) {
//     ordo::DeviceGuard on(d);
//     ordo::Tensor w = ordo::rand_normal({4, 4}, /*seed=*/d);
//     ordo::Tensor y = ordo::sum(ordo::tanh(ordo::matmul(w, w)), {1});
//     ordo::mark_step();                 // compile (or reuse) and submit
//     auto values = y.to_vector<float>(); // wait for the result
//   }
#pragma once

#include "ordo/autograd.h"
#include "ordo/collectives.h"
#include "ordo/dtype.h"
#include "ordo/error.h"
#include "ordo/ir_debug.h"
#include "ordo/log.h"
#include "ordo/metrics.h"
#include "ordo/nn_ops.h"
#include "ordo/random.h"
#include "ordo/runtime.h"
#include "ordo/tensor.h"
#include "ordo/trace.h"
