#include "ordo/dtype.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "ordo/error.h"

namespace ordo {

size_t dtype_size(DType dtype) {
  switch (dtype) {
#define ORDO_DTYPE_SIZE(name, type, str) \
  case DType::name:                      \
    return sizeof(type);
    ORDO_DTYPES(ORDO_DTYPE_SIZE)
#undef ORDO_DTYPE_SIZE
  }
  throw InternalError("dtype_size: unknown dtype");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
#define ORDO_DTYPE_NAME(name, type, str) \
  case DType::name:                      \
    return str;
    ORDO_DTYPES(ORDO_DTYPE_NAME)
#undef ORDO_DTYPE_NAME
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || is_half_float(dtype);
}
bool is_integral(DType dtype) { return dtype == DType::kInt32 || dtype == DType::kInt64; }
bool is_half_float(DType dtype) { return dtype == DType::kBFloat16 || dtype == DType::kFloat16; }

namespace {

// A dtype's place in promotion: category first, then width. The two 16-bit
// floats share a place (promote_types settles that pair).
int promotion_rank(DType dtype) {
  switch (dtype) {
    case DType::kBool: return 0;
    case DType::kInt32: return 1;
    case DType::kInt64: return 2;
    case DType::kBFloat16:
    case DType::kFloat16: return 3;
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 5;
  }
  throw InternalError("promote_types: unknown dtype");
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_half_float(a) && is_half_float(b)) return DType::kFloat32;
  return promotion_rank(a) < promotion_rank(b) ? b : a;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

DType Scalar::default_dtype() const {
  switch (kind_) {
    case Kind::kBool:
      return DType::kBool;
    case Kind::kInt:
      return DType::kInt64;
    case Kind::kFloat:
      return DType::kFloat32;
  }
  return DType::kFloat32;
}

bool Scalar::fits(DType dtype) const {
  if (!ordo::is_integral(dtype)) return true;
  const bool narrow = dtype == DType::kInt32;
  const int64_t low = narrow ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const int64_t high = narrow ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  if (kind_ != Kind::kFloat) return i_ >= low && i_ <= high;
  // -low is a power of two, so exact in double, unlike high.
  const double limit = -static_cast<double>(low);
  const double truncated = std::trunc(d_);
  return truncated >= -limit && truncated < limit;  // false for NaN
}

namespace {

// The shortest text that reads back as v (1e+10, 2147483648.5).
std::string float_text(double v) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), v);
  return std::string(text, result.ptr);
}

}  // namespace

void check_fits(std::string_view what, const Scalar& value, DType dtype) {
  if (value.fits(dtype)) return;
  const std::string_view type = dtype_name(dtype);
  if (!value.is_floating()) {
    throw_error<OutOfRange>(what, ": integer ", value.to_int(), " out of bounds for ", type);
  }
  const double v = value.to_double();
  ORDO_ARG_CHECK(!std::isnan(v), what, ": cannot convert float NaN to ", type);
  if (std::isinf(v)) throw_error<OutOfRange>(what, ": cannot convert float ", float_text(v), " to ", type);
  throw_error<OutOfRange>(what, ": float ", float_text(v), " out of bounds for ", type);
}

}  // namespace ordo
