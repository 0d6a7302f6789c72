// Errors raised by ordo. Every failure is an exception derived from
// ordo::Error; the Python binding maps InvalidArgument to ValueError,
// DTypeError to TypeError, OutOfRange to OverflowError and OutOfMemoryError
// to a MemoryError.
//
//   try {
//     ordo::add(a, b);
//   } catch (const ordo::InvalidArgument& e) {
//     std::cerr << e.what();  // "add: shapes [2, 3] and [4] do not broadcast"
//   }
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ordo {

// What kind of failure an Error is; lets a failure cross threads (a worker
// records it, a reader rethrows it) without losing its class.
enum class ErrorCode {
  kInvalidArgument,
  kDType,
  kOutOfRange,
  kExecution,
  kOutOfMemory,
  kCollective,
  kCollectiveMismatch,
  kCollectiveTimeout,
  kInternal,
};

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual ErrorCode code() const = 0;
};

#define ORDO_ERROR_CLASS(Name, Base, Code)               \
  class Name : public Base {                              \
   public:                                                \
    using Base::Base;                                     \
    ErrorCode code() const override { return ErrorCode::Code; } \
  };

// Bad arguments detected when an op is traced: nothing was recorded.
ORDO_ERROR_CLASS(InvalidArgument, Error, kInvalidArgument)
// An argument of the wrong element type.
ORDO_ERROR_CLASS(DTypeError, InvalidArgument, kDType)
// A number that does not fit where it goes (2^32 as an int32 value).
ORDO_ERROR_CLASS(OutOfRange, InvalidArgument, kOutOfRange)
// A failure while a graph ran on a device; names the op that failed.
ORDO_ERROR_CLASS(ExecutionError, Error, kExecution)
// A buffer could not be allocated: says how many bytes, for what shape.
ORDO_ERROR_CLASS(OutOfMemoryError, ExecutionError, kOutOfMemory)
// A collective failed: a peer failed or is gone.
ORDO_ERROR_CLASS(CollectiveError, ExecutionError, kCollective)
// Participants of one collective brought different ops.
ORDO_ERROR_CLASS(CollectiveMismatchError, CollectiveError, kCollectiveMismatch)
// A participant waited past the collective timeout.
ORDO_ERROR_CLASS(CollectiveTimeoutError, CollectiveError, kCollectiveTimeout)
// A broken internal invariant: a bug in ordo, never the caller's fault.
ORDO_ERROR_CLASS(InternalError, Error, kInternal)

#undef ORDO_ERROR_CLASS

// Throws the class that code stands for.
[[noreturn]] void throw_error_code(ErrorCode code, const std::string& message);

template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename E, typename... Parts>
[[noreturn]] void throw_error(const Parts&... parts) {
  throw E(str_cat(parts...));
}

}  // namespace ordo

// Argument checks at trace time: ORDO_ARG_CHECK(ok, "message parts", ...).
#define ORDO_ARG_CHECK(cond, ...)                               \
  do {                                                          \
    if (!(cond)) ::ordo::throw_error<::ordo::InvalidArgument>(__VA_ARGS__); \
  } while (0)

#define ORDO_DTYPE_CHECK(cond, ...)                             \
  do {                                                          \
    if (!(cond)) ::ordo::throw_error<::ordo::DTypeError>(__VA_ARGS__); \
  } while (0)
