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
T arange_element(const ir::Attrs& attrs, int64_t i) {
  if constexpr (kIsHalfFloat<T>) {
    return float_to_half<T>(arange_element<float>(attrs, i));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(attrs.reals[0] + static_cast<double>(i) * attrs.reals[1]);
  } else {
    const int64_t offset = wrapping(i, attrs.ints[1], std::multiplies<>{});
    return from_int<T>(wrapping(attrs.ints[0], offset, std::plus<>{}));
  }
}

}  // namespace

template <>
void run<ir::OpKind::kFull>(const KernelArgs& args) {
  const device::Buffer& out = make_output(args);
  visit_dtype(StoredTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T value;
    if constexpr (kIsHalfFloat<T>) {
      value = float_to_half<T>(static_cast<float>(args.attrs.reals[0]));  // through float32, as torch
    } else if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(args.attrs.reals[0]);
    } else if constexpr (std::is_same_v<T, bool>) {
      // Like a cast of the fill value: full(0.5) is true. reals[0] is
      // nonzero exactly when the value is, whether it was given as an
      // integer or not, while ints[0] truncated 0.5 to 0.
      value = args.attrs.reals[0] != 0;
    } else {
      value = from_int<T>(args.attrs.ints[0]);
    }
    std::fill_n(out.mutable_data<T>(), out.numel, value);
  });
}

template <>
void run<ir::OpKind::kArange>(const KernelArgs& args) {
  const device::Buffer& out = make_output(args);
  visit_dtype(StoredTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T* dst = out.mutable_data<T>();
    for (int64_t i = 0; i < out.numel; ++i) dst[i] = arange_element<T>(args.attrs, i);
  });
}

}  // namespace ordo::kernels
