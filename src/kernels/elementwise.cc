// Elementwise kernels: unary ops, Cast, binary ops and Where. Each is a
// functor handed to map_elementwise, which picks the cheapest loop the
// operand shapes allow: one flat loop when every operand matches the output
// or is a single element, else a broadcasting walk row by row.
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "kernels/kernels_internal.h"
#include "kernels/strided_walk.h"

namespace ordo::kernels {
namespace {

template <typename T>
struct Operand {
  const T* data;
  int64_t stride;  // 0 when the operand is broadcast along the row
};

// dst[i] = f(src[i]...) over dense rows. dst is a fresh output, so it
// aliases no input; __restrict says so, which lets the compiler vectorize
// without a runtime overlap check. The fixed-width blocks are for -O2
// builds: GCC 12 there vectorizes loops of known length only.
template <typename Out, typename F, typename... Ins>
void map_dense(Out* __restrict dst, int64_t n, const F& f, const Ins* __restrict... src) {
  constexpr int64_t kBlock = 8;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t u = 0; u < kBlock; ++u) dst[i + u] = f(src[i + u]...);
  }
  for (; i < n; ++i) dst[i] = f(src[i]...);
}

// A binary op against one element (x * 2, a row minus its mean) is common
// enough to get dense loops with the scalar bound into the op. Returns
// whether it applied.
template <typename Out, typename F, typename A, typename B>
bool map_row_with_scalar(Out* dst, int64_t n, const F& f, Operand<A> a, Operand<B> b) {
  if (a.stride == 0 && b.stride == 1) {
    map_dense(dst, n, [f, x = *a.data](B y) { return f(x, y); }, b.data);
  } else if (a.stride == 1 && b.stride == 0) {
    map_dense(dst, n, [f, y = *b.data](A x) { return f(x, y); }, a.data);
  } else {
    return false;
  }
  return true;
}

template <typename Out, typename F, typename... Ins>
void map_row(Out* dst, int64_t n, const F& f, Operand<Ins>... src) {
  if constexpr (sizeof...(Ins) == 2) {
    if (map_row_with_scalar(dst, n, f, src...)) return;
  }
  if (((src.stride == 1) && ...)) {
    map_dense(dst, n, f, src.data...);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = f(src.data[i * src.stride]...);
}

template <typename Out, typename... Ins, typename F, size_t... I>
void map_elementwise_impl(const KernelArgs& args, const F& f, std::index_sequence<I...>) {
  const device::Buffer& out = make_output(args);
  Out* dst = out.mutable_data<Out>();
  const std::array<const device::Buffer*, sizeof...(Ins)> in{args.inputs[I]...};
  const bool flat = ((in[I]->numel == out.numel || in[I]->numel == 1) && ...);
  if (flat) {
    if (out.numel == 0) return;
    map_row(dst, out.numel, f,
            Operand<Ins>{in[I]->template data<Ins>(), in[I]->numel == out.numel ? 1 : 0}...);
    return;
  }
  StridedWalk<sizeof...(Ins) + 1> walk{
      out.shape, {contiguous_strides(out.shape), broadcast_strides(in[I]->shape, out.shape)...}};
  for_each_row(walk, [&](const auto& offset, int64_t n, const auto& stride) {
    map_row(dst + offset[0], n, f,
            Operand<Ins>{in[I]->template data<Ins>() + offset[I + 1], stride[I + 1]}...);
  });
}

// out = f(in0, in1, ...) with numpy broadcasting; Ins are the C++ types of
// args.inputs in order, Out that of the output.
template <typename Out, typename... Ins, typename F>
void map_elementwise(const KernelArgs& args, const F& f) {
  map_elementwise_impl<Out, Ins...>(args, f, std::index_sequence_for<Ins...>{});
}

// An op whose operands and result all have the output's dtype, one of Types.
template <size_t kArity, typename Types, typename F>
void map_same_type(const KernelArgs& args, Types types, const F& f) {
  visit_dtype(types, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    if constexpr (kArity == 1) {
      map_elementwise<T, T>(args, f);
    } else {
      map_elementwise<T, T, T>(args, f);
    }
  });
}

template <typename Compare>
void map_compare(const KernelArgs& args, Compare compare) {
  visit_dtype(AllTypes{}, args.inputs[0]->dtype,
              [&]<typename T>(TypeTag<T>) { map_elementwise<bool, T, T>(args, compare); });
}

struct Negate {
  template <typename T>
  T operator()(T x) const {
    // 0 - x would turn -0.0 into +0.0; integers wrap so that -INT_MIN is not UB.
    if constexpr (std::is_floating_point_v<T>) {
      return -x;
    } else {
      return wrapping(T{0}, x, std::minus<>{});
    }
  }
};

struct Absolute {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(x);
    } else {
      return x < 0 ? Negate{}(x) : x;  // abs(INT_MIN) stays INT_MIN, like numpy
    }
  }
};

// Integer power by repeated squaring, wrapping on overflow like numpy. A
// negative exponent gives the truncated real result, as torch does: 1 for
// base 1, ±1 for base -1, and 0 for every other base (0 included, where
// numpy would raise).
template <typename T>
T integer_pow(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  using U = std::make_unsigned_t<T>;
  U result = 1;
  U factor = static_cast<U>(base);
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

struct Power {
  template <typename T>
  T operator()(T base, T exponent) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(base, exponent);
    } else {
      return integer_pow(base, exponent);
    }
  }
};

template <typename Op>
struct Wrapping {
  template <typename T>
  T operator()(T a, T b) const {
    return wrapping(a, b, Op{});
  }
};

// static_cast where it is well defined. Otherwise: to bool means != 0, and
// float to int truncates toward zero but clamps to the int range and maps
// NaN to 0, where static_cast would be undefined behaviour.
template <typename To, typename From>
To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From{0};
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // 2^31 or 2^63: a power of two, so exact in double, unlike INT_MAX.
    constexpr double kLimit = -static_cast<double>(std::numeric_limits<To>::min());
    const double v = x;
    if (std::isnan(v)) return 0;
    if (v <= -kLimit) return std::numeric_limits<To>::min();
    if (v >= kLimit) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace

using ir::OpKind;

template <>
void run<OpKind::kNeg>(const KernelArgs& args) {
  map_same_type<1>(args, NumericTypes{}, Negate{});
}

template <>
void run<OpKind::kAbs>(const KernelArgs& args) {
  map_same_type<1>(args, NumericTypes{}, Absolute{});
}

template <>
void run<OpKind::kRelu>(const KernelArgs& args) {
  // Written so that NaN, which is not < 0, passes through.
  map_same_type<1>(args, NumericTypes{}, [](auto x) { return x < 0 ? decltype(x){0} : x; });
}

template <>
void run<OpKind::kExp>(const KernelArgs& args) {
  map_same_type<1>(args, FloatingTypes{}, [](auto x) { return std::exp(x); });
}

template <>
void run<OpKind::kLog>(const KernelArgs& args) {
  map_same_type<1>(args, FloatingTypes{}, [](auto x) { return std::log(x); });
}

template <>
void run<OpKind::kSqrt>(const KernelArgs& args) {
  map_same_type<1>(args, FloatingTypes{}, [](auto x) { return std::sqrt(x); });
}

template <>
void run<OpKind::kRsqrt>(const KernelArgs& args) {
  map_same_type<1>(args, FloatingTypes{}, [](auto x) { return decltype(x){1} / std::sqrt(x); });
}

template <>
void run<OpKind::kTanh>(const KernelArgs& args) {
  map_same_type<1>(args, FloatingTypes{}, [](auto x) { return std::tanh(x); });
}

template <>
void run<OpKind::kSigmoid>(const KernelArgs& args) {
  // exp(-x) overflowing to inf for very negative x still gives the right 0.
  map_same_type<1>(args, FloatingTypes{}, [](auto x) {
    using T = decltype(x);
    return T{1} / (T{1} + std::exp(-x));
  });
}

template <>
void run<OpKind::kLogicalNot>(const KernelArgs& args) {
  map_elementwise<bool, bool>(args, std::logical_not<>{});
}

template <>
void run<OpKind::kCast>(const KernelArgs& args) {
  const device::Buffer& in = *args.inputs[0];
  const DType to = args.output_types[0].dtype;
  if (in.dtype == to) {
    // Buffers are immutable once written, so the result can share storage.
    args.outputs[0] = device::view_buffer(in, args.output_types[0].shape);
    return;
  }
  visit_dtype(AllTypes{}, in.dtype, [&]<typename From>(TypeTag<From>) {
    visit_dtype(AllTypes{}, to, [&]<typename To>(TypeTag<To>) {
      map_elementwise<To, From>(args, [](From x) { return convert<To>(x); });
    });
  });
}

template <>
void run<OpKind::kAdd>(const KernelArgs& args) {
  map_same_type<2>(args, NumericTypes{}, Wrapping<std::plus<>>{});
}

template <>
void run<OpKind::kSub>(const KernelArgs& args) {
  map_same_type<2>(args, NumericTypes{}, Wrapping<std::minus<>>{});
}

template <>
void run<OpKind::kMul>(const KernelArgs& args) {
  map_same_type<2>(args, NumericTypes{}, Wrapping<std::multiplies<>>{});
}

template <>
void run<OpKind::kDiv>(const KernelArgs& args) {
  map_same_type<2>(args, FloatingTypes{}, std::divides<>{});
}

template <>
void run<OpKind::kPow>(const KernelArgs& args) {
  map_same_type<2>(args, NumericTypes{}, Power{});
}

template <>
void run<OpKind::kMaximum>(const KernelArgs& args) {
  map_same_type<2>(args, AllTypes{}, Extreme<std::greater<>>{});
}

template <>
void run<OpKind::kMinimum>(const KernelArgs& args) {
  map_same_type<2>(args, AllTypes{}, Extreme<std::less<>>{});
}

template <>
void run<OpKind::kEq>(const KernelArgs& args) {
  map_compare(args, std::equal_to<>{});
}

template <>
void run<OpKind::kNe>(const KernelArgs& args) {
  map_compare(args, std::not_equal_to<>{});
}

template <>
void run<OpKind::kLt>(const KernelArgs& args) {
  map_compare(args, std::less<>{});
}

template <>
void run<OpKind::kLe>(const KernelArgs& args) {
  map_compare(args, std::less_equal<>{});
}

template <>
void run<OpKind::kGt>(const KernelArgs& args) {
  map_compare(args, std::greater<>{});
}

template <>
void run<OpKind::kGe>(const KernelArgs& args) {
  map_compare(args, std::greater_equal<>{});
}

template <>
void run<OpKind::kLogicalAnd>(const KernelArgs& args) {
  map_elementwise<bool, bool, bool>(args, std::logical_and<>{});
}

template <>
void run<OpKind::kLogicalOr>(const KernelArgs& args) {
  map_elementwise<bool, bool, bool>(args, std::logical_or<>{});
}

template <>
void run<OpKind::kWhere>(const KernelArgs& args) {
  visit_dtype(AllTypes{}, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    map_elementwise<T, bool, T, T>(args, [](bool c, T a, T b) { return c ? a : b; });
  });
}

}  // namespace ordo::kernels
