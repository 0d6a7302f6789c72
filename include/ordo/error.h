// Errors raised by ordo. Every failure is an exception derived from
// ordo::Error; the Python binding maps InvalidArgument to ValueError and
// DTypeError to TypeError.
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

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad arguments detected when an op is traced: nothing was recorded.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// An argument of the wrong element type.
class DTypeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A failure while a graph ran on a device; names the op that failed.
class ExecutionError : public Error {
 public:
  using Error::Error;
};

// A broken internal invariant: a bug in ordo, never the caller's fault.
class InternalError : public Error {
 public:
  using Error::Error;
};

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
