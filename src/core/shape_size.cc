// The checked element and byte counts of a shape (ordo/dtype.h). The check
// runs for every traced op, so the accepting path is a plain loop; the
// messages are built only when a shape is refused.
#include <algorithm>
#include <limits>
#include <string>

#include "ordo/dtype.h"
#include "ordo/error.h"

namespace ordo {
namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

using Wide = unsigned __int128;

std::string to_decimal(Wide value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

// The exact product of the nonzero dimensions of a shape whose dimensions
// are all non-negative, as a decimal number ("more than 2^128 - 1" past
// what 128 bits hold).
std::string nonzero_product(std::span<const int64_t> shape, Wide factor) {
  Wide product = factor;
  for (int64_t d : shape) {
    if (d != 0 && __builtin_mul_overflow(product, static_cast<Wide>(d), &product)) {
      return "more than " + to_decimal(~Wide{0});
    }
  }
  return to_decimal(product);
}

[[noreturn]] void refuse_negative(std::string_view what, std::span<const int64_t> shape, size_t dim) {
  throw_error<InvalidArgument>(what, ": dimension ", dim, " of shape ", shape_to_string(shape), " is ",
                               shape[dim], "; dimensions must not be negative");
}

[[noreturn]] void refuse_elements(std::string_view what, std::span<const int64_t> shape, size_t dim,
                                  bool empty) {
  const std::string count = nonzero_product(shape, 1);
  const std::string limit = str_cat("more than int64 can hold (", kMaxCount, ")");
  const std::string culprit = str_cat("dimension ", dim, " (", shape[dim], ") takes the count past it");
  if (empty) {
    // numpy refuses these too: the strides of the other dimensions overflow.
    throw_error<InvalidArgument>(what, ": shape ", shape_to_string(shape),
                                 " is empty, but its nonzero dimensions multiply to ", count, ", ", limit,
                                 "; ", culprit);
  }
  throw_error<InvalidArgument>(what, ": shape ", shape_to_string(shape), " has ", count, " elements, ",
                               limit, "; ", culprit);
}

[[noreturn]] void refuse_bytes(std::string_view what, std::span<const int64_t> shape, DType dtype,
                               bool empty) {
  const size_t element = dtype_size(dtype);
  throw_error<InvalidArgument>(what, ": shape ", shape_to_string(shape), " of ", dtype_name(dtype),
                               empty ? " is empty, but its nonzero dimensions would need " : " needs ",
                               nonzero_product(shape, element), " bytes (", element,
                               " per element), more than int64 can hold (", kMaxCount, ")");
}

}  // namespace

ShapeSize checked_shape_size(std::string_view what, std::span<const int64_t> shape, DType dtype) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) refuse_negative(what, shape, d);
  }
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  int64_t nonzero = 1;  // the product of the nonzero dimensions
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 0 && __builtin_mul_overflow(nonzero, shape[d], &nonzero)) {
      refuse_elements(what, shape, d, empty);
    }
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(nonzero, static_cast<int64_t>(dtype_size(dtype)), &nbytes)) {
    refuse_bytes(what, shape, dtype, empty);
  }
  if (empty) return {0, 0};
  return {nonzero, nbytes};
}

}  // namespace ordo
