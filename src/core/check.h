// Internal invariants: a failed check is a bug in ordo, never the caller's
// fault (bad arguments are ORDO_ARG_CHECK, in ordo/error.h). It throws
// InternalError naming the file, the line, the condition and, for the
// comparisons, both values:
//
//   ORDO_CHECK_EQ(inputs.size(), 2u, "for ", op_name(op));
//   // src/kernels/x.cc:12: check failed: inputs.size() == 2u (3 vs 2) for add
//
// Checks stay on in every build: they guard against writing out of bounds
// on a device, where going on costs more than one comparison.
#pragma once

#include "ordo/error.h"

namespace ordo::check_internal {

template <typename A, typename B, typename... Parts>
[[noreturn]] void fail_comparison(const char* file, int line, const char* text, const A& a, const B& b,
                                  const Parts&... parts) {
  throw_error<InternalError>(file, ":", line, ": check failed: ", text, " (", a, " vs ", b, ")", parts...);
}

}  // namespace ordo::check_internal

#define ORDO_CHECK(cond, ...)                                                                             \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      ::ordo::throw_error<::ordo::InternalError>(__FILE__, ":", __LINE__, ": check failed: ", #cond \
                                                 __VA_OPT__(, ) __VA_ARGS__);                                          \
    }                                                                                                     \
  } while (0)

// A place the code cannot reach: as ORDO_CHECK(false, ...), but the
// compiler knows that it does not return.
#define ORDO_UNREACHABLE(...) \
  ::ordo::throw_error<::ordo::InternalError>(__FILE__, ":", __LINE__, ": unreachable" __VA_OPT__(, ) __VA_ARGS__)

// Evaluates each operand once.
#define ORDO_CHECK_OP_(a, op, b, ...)                                                                  \
  do {                                                                                                 \
    const auto& ordo_check_a_ = (a);                                                                   \
    const auto& ordo_check_b_ = (b);                                                                   \
    if (!(ordo_check_a_ op ordo_check_b_)) {                                                           \
      ::ordo::check_internal::fail_comparison(__FILE__, __LINE__, #a " " #op " " #b, ordo_check_a_, \
                                              ordo_check_b_ __VA_OPT__(, ) __VA_ARGS__);                           \
    }                                                                                                  \
  } while (0)

#define ORDO_CHECK_EQ(a, b, ...) ORDO_CHECK_OP_(a, ==, b __VA_OPT__(, ) __VA_ARGS__)
#define ORDO_CHECK_NE(a, b, ...) ORDO_CHECK_OP_(a, !=, b __VA_OPT__(, ) __VA_ARGS__)
#define ORDO_CHECK_LT(a, b, ...) ORDO_CHECK_OP_(a, <, b __VA_OPT__(, ) __VA_ARGS__)
#define ORDO_CHECK_LE(a, b, ...) ORDO_CHECK_OP_(a, <=, b __VA_OPT__(, ) __VA_ARGS__)
#define ORDO_CHECK_GE(a, b, ...) ORDO_CHECK_OP_(a, >=, b __VA_OPT__(, ) __VA_ARGS__)
#define ORDO_CHECK_GT(a, b, ...) ORDO_CHECK_OP_(a, >, b __VA_OPT__(, ) __VA_ARGS__)
