// ORDO_DISPATCH_DTYPE(dtype, T, body): body with T bound to the C++ type
// of a run-time dtype, for code that handles every dtype (data movement,
// tests). Kernels that accept only some dtypes use visit_dtype
// (kernels/kernels_internal.h), which instantiates only those.
#pragma once

#include <cstdint>

#include "ordo/dtype.h"

#define ORDO_DISPATCH_DTYPE(dtype, T, ...)           \
  switch (dtype) {                                   \
    case ::ordo::DType::kBool: {                     \
      using T = bool;                                \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kInt32: {                    \
      using T = int32_t;                             \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kInt64: {                    \
      using T = int64_t;                             \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kFloat32: {                  \
      using T = float;                               \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kFloat64: {                  \
      using T = double;                              \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kBFloat16: {                 \
      using T = ::ordo::BFloat16;                    \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case ::ordo::DType::kFloat16: {                  \
      using T = ::ordo::Float16;                     \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
  }
