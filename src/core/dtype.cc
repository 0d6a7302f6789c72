#include "ordo/dtype.h"

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

bool is_floating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }
bool is_integral(DType dtype) { return dtype == DType::kInt32 || dtype == DType::kInt64; }

// The enum is declared in promotion order, so the wider type is the larger.
DType promote_types(DType a, DType b) { return a < b ? b : a; }

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

}  // namespace ordo
