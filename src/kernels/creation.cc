// Creation kernels: Full and Arange. Both take their numbers from attrs in
// two forms (ints and reals) so integer outputs stay exact past 2^53.
#include <algorithm>
#include <functional>

#include "core/half_float.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {
namespace {

// An int64 value in the output's dtype; bool means != 0.
template <typename T>
T from_int(int64_t value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else {
    return static_cast<T>(value);
  }
}

// Element i of an arange, in the output's own domain: integers step exactly
// (wrapping rather than UB on overflow); floats compute start + i * step in
// double and round once, so rounding error does not build up along the range.
template <typename T>
T arange_element(const ir::ArangeAttrs& range, int64_t i) {
  if constexpr (kIsHalfFloat<T>) {
    return float_to_half<T>(arange_element<float>(range, i));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(range.start.as_real + static_cast<double>(i) * range.step.as_real);
  } else {
    const int64_t offset = wrapping(i, range.step.as_int, std::multiplies<>{});
    return from_int<T>(wrapping(range.start.as_int, offset, std::plus<>{}));
  }
}

}  // namespace

template <>
void run<ir::OpKind::kFull>(const KernelArgs& args) {
  const device::Buffer& out = make_output(args);
  const ir::ScalarAttr fill = ir::decode<ir::OpKind::kFull>(args.attrs).value;
  visit_dtype(StoredTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T value;
    if constexpr (kIsHalfFloat<T>) {
      value = float_to_half<T>(static_cast<float>(fill.as_real));  // through float32, as torch
    } else if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(fill.as_real);
    } else if constexpr (std::is_same_v<T, bool>) {
      // Like a cast of the fill value: full(0.5) is true. as_real is
      // nonzero exactly when the value is, whether it was given as an
      // integer or not, while as_int truncated 0.5 to 0.
      value = fill.as_real != 0;
    } else {
      value = from_int<T>(fill.as_int);
    }
    std::fill_n(out.mutable_data<T>(), out.numel, value);
  });
}

template <>
void run<ir::OpKind::kArange>(const KernelArgs& args) {
  const device::Buffer& out = make_output(args);
  const ir::ArangeAttrs range = ir::decode<ir::OpKind::kArange>(args.attrs);
  visit_dtype(StoredTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T* dst = out.mutable_data<T>();
    for (int64_t i = 0; i < out.numel; ++i) dst[i] = arange_element<T>(range, i);
  });
}

}  // namespace ordo::kernels
