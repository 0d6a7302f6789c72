// Element types and shapes of ordo tensors.
//
//   ordo::DType t = ordo::DType::kFloat32;
//   ordo::dtype_size(t);            // 4
//   ordo::dtype_name(t);            // "float32"
//   ordo::Shape s{2, 3};
//   ordo::shape_numel(s);           // 6
//   ordo::checked_shape_size("f", s, t).nbytes;  // 24; throws if it overflows
//   ordo::promote_types(DType::kBFloat16, DType::kFloat16);  // kFloat32
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ordo/small_block_allocator.h"

namespace ordo {

// The 16-bit floats are storage types: their bits, nothing to compute
// with. Kernels widen them to float32 and round back once
// (core/half_float.h); only conversions, data movement and collectives
// handle them as they are.
struct BFloat16 {
  uint16_t bits;
};
struct Float16 {
  uint16_t bits;
};

// The list of element types. Each entry: enum name, C++ type, printable name.
// New types go last: the enum's values are in saved checkpoints' pickles
// (by name) and in the Python binding (by value) alike.
#define ORDO_DTYPES(X)                 \
  X(kBool, bool, "bool")               \
  X(kInt32, int32_t, "int32")          \
  X(kInt64, int64_t, "int64")          \
  X(kFloat32, float, "float32")        \
  X(kFloat64, double, "float64")       \
  X(kBFloat16, BFloat16, "bfloat16")   \
  X(kFloat16, Float16, "float16")

enum class DType : uint8_t {
#define ORDO_DTYPE_ENUM(name, type, str) name,
  ORDO_DTYPES(ORDO_DTYPE_ENUM)
#undef ORDO_DTYPE_ENUM
};
inline constexpr int kNumDTypes = 7;

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);  // the 16-bit floats too
bool is_integral(DType dtype);  // int32 and int64 (not bool)
// bfloat16 and float16: stored in 16 bits, computed in float32.
bool is_half_float(DType dtype);

// The result type of a binary operation, as torch's: the higher category
// wins (bool < integer < floating), then the wider type within it;
// bfloat16 with float16 is float32 (neither holds the other).
DType promote_types(DType a, DType b);

template <typename T>
constexpr DType dtype_of();
#define ORDO_DTYPE_OF(name, type, str) \
  template <>                          \
  constexpr DType dtype_of<type>() {   \
    return DType::name;                \
  }
ORDO_DTYPES(ORDO_DTYPE_OF)
#undef ORDO_DTYPE_OF

// Dense row-major shape; an empty shape is a 0-d scalar. Every traced op
// makes one or two, so they come from the small-block allocator.
using Shape = std::vector<int64_t, SmallBlockAllocator<int64_t>>;

// The element count of a shape that checked_shape_size accepted.
int64_t shape_numel(const Shape& shape);
std::string shape_to_string(std::span<const int64_t> shape);

// The element and byte counts of a dense tensor.
struct ShapeSize {
  int64_t numel;
  int64_t nbytes;
};

// Every shape ordo makes or is given passes here. A shape is refused, with
// InvalidArgument (starting with `what`, naming the dimension and why), when
// a dimension is negative or when its element or byte count does not fit
// int64. As in numpy, the nonzero dimensions must fit even when another is
// 0, so that every stride and offset of an accepted shape fits as well.
ShapeSize checked_shape_size(std::string_view what, std::span<const int64_t> shape, DType dtype);

// A number given by the caller, kept exact for integers.
class Scalar {
 public:
  Scalar(bool v) : kind_(Kind::kBool), i_(v), d_(v) {}
  Scalar(int v) : kind_(Kind::kInt), i_(v), d_(v) {}
  Scalar(int64_t v) : kind_(Kind::kInt), i_(v), d_(static_cast<double>(v)) {}
  Scalar(double v) : kind_(Kind::kFloat), i_(saturating_int(v)), d_(v) {}
  Scalar(float v) : Scalar(static_cast<double>(v)) {}

  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_integral() const { return kind_ == Kind::kInt; }
  bool is_floating() const { return kind_ == Kind::kFloat; }
  int64_t to_int() const { return i_; }
  double to_double() const { return d_; }
  // The dtype a tensor made from this scalar alone gets.
  DType default_dtype() const;
  // Whether this number converts to dtype without overflow: bool and the
  // float types take any number (a float type rounds, and overflows to inf
  // as in numpy); an integer type takes the integers in its range and the
  // finite floats whose truncation is in it (not NaN).
  bool fits(DType dtype) const;

 private:
  enum class Kind : uint8_t { kBool, kInt, kFloat };
  // static_cast of a NaN or out-of-range double is undefined: saturate.
  static int64_t saturating_int(double v) {
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(v);
  }
  Kind kind_;
  int64_t i_;
  double d_;
};

// Throws OutOfRange naming `what` when value does not fit dtype
// (InvalidArgument for NaN, which is no number of any integer type).
void check_fits(std::string_view what, const Scalar& value, DType dtype);

}  // namespace ordo
