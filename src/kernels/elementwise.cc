// Elementwise kernels: unary ops, Cast, binary ops and Where. Each op is a
// functor, compiled per dtype into a row function (elementwise_rows.h). The
// kernel picks the cheapest way to cover the output with rows: one row when
// every operand matches the output or is a single element, else a
// broadcasting walk row by row. Fused groups of elementwise ops
// (kernels/fused.h) call the same row functions over tiles.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/check.h"
#include "core/half_float.h"
#include "core/simd.h"
#include "kernels/elementwise_rows.h"
#include "kernels/kernels_internal.h"
#include "kernels/streaming_rows.h"
#include "kernels/strided_walk.h"
#include "kernels/vector_math.h"

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
[[gnu::always_inline]] inline void map_dense(Out* __restrict dst, int64_t n, const F& f, const Ins* __restrict... src) {
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
[[gnu::always_inline]] inline bool map_row_with_scalar(Out* dst, int64_t n, const F& f, Operand<A> a, Operand<B> b) {
  if constexpr (requires { F::kCommutative; }) {
    // A number first gives f(x, y) == f(y, x) bit for bit (only y can be
    // NaN), and the scalar second is the loop GCC vectorizes; a NaN first
    // is every result (Commutative).
    if (a.stride == 0 && b.stride == 1 && !std::isnan(*a.data)) {
      map_dense(dst, n, [f, x = *a.data](B y) { return f(y, x); }, b.data);
      return true;
    }
  }
  if (a.stride == 0 && b.stride == 1) {
    map_dense(dst, n, [f, x = *a.data](B y) { return f(x, y); }, b.data);
  } else if (a.stride == 1 && b.stride == 0) {
    map_dense(dst, n, [f, y = *b.data](A x) { return f(x, y); }, a.data);
  } else {
    return false;
  }
  return true;
}

// where(mask, x, 0) (ReLU's gradient) and where(mask, 0, x): a dense
// condition and one element on either side get a dense loop too, which
// vectorizes to a blend; the strided loop below branched on every
// element. Returns whether it applied.
template <typename Out, typename F, typename C, typename A, typename B>
[[gnu::always_inline]] inline bool map_row_with_scalar(Out* dst, int64_t n, const F& f, Operand<C> c, Operand<A> a,
                                                       Operand<B> b) {
  if (c.stride != 1) return false;
  if (a.stride == 1 && b.stride == 0) {
    map_dense(dst, n, [f, y = *b.data](C k, A x) { return f(k, x, y); }, c.data, a.data);
  } else if (a.stride == 0 && b.stride == 1) {
    map_dense(dst, n, [f, x = *a.data](C k, B y) { return f(k, x, y); }, c.data, b.data);
  } else {
    return false;
  }
  return true;
}

template <typename Out, typename F, typename... Ins>
[[gnu::always_inline]] inline void map_row(Out* dst, int64_t n, const F& f, Operand<Ins>... src) {
  if constexpr (sizeof...(Ins) >= 2) {
    if (map_row_with_scalar(dst, n, f, src...)) return;
  }
  if (((src.stride == 1) && ...)) {
    map_dense(dst, n, f, src.data...);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = f(src.data[i * src.stride]...);
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

// A negative integer exponent has no integer result (torch truncates 2**-1
// to 0): the graph fails, as numpy raises, whatever the base.
[[noreturn]] void throw_negative_exponent(int64_t base, int64_t exponent);

// Integer power by repeated squaring, wrapping on overflow like numpy.
template <typename T>
T integer_pow(T base, T exponent) {
  if (exponent < 0) throw_negative_exponent(base, exponent);
  using U = std::make_unsigned_t<T>;
  U result = 1;
  U factor = static_cast<U>(base);
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

struct IntegerPower {
  template <typename T>
  T operator()(T base, T exponent) const {
    return integer_pow(base, exponent);
  }
};

template <typename Op>
struct Wrapping {
  template <typename T>
  T operator()(T a, T b) const {
    return wrapping(a, b, Op{});
  }
};

// + and * of floats, with the NaN of a NaN first operand: when both are
// NaN, x86 returns the first source operand's, but which operand is first
// is the compiler's choice for commutative ops, and it chose differently in
// a loop's vector body and its scalar tail, so the bits depended on where a
// row ended (fused tiles, a broadcasting walk's rows). op(a, a) is a's NaN,
// quieted, in either order. (- and / cannot be swapped.)
template <typename Op>
struct Commutative {
  static constexpr bool kCommutative = true;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return Op{}(a, std::isnan(a) ? a : b);
    } else {
      return wrapping(a, b, Op{});
    }
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
    if (std::isnan(x)) return 0;
    return saturate<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <typename To>
struct Convert {
  template <typename From>
  To operator()(From x) const {
    return convert<To>(x);
  }
};

// Written so that NaN, which is not < 0, passes through.
struct Relu {
  template <typename T>
  T operator()(T x) const {
    return x < 0 ? T{0} : x;
  }
};

// Floats are picked by their bits under a mask made from c: GCC kept
// `c ? a : b` over floats a branch per element (a ReLU gradient's random
// mask mispredicts half of them), and the masks vectorize.
struct Select {
  template <typename T>
  T operator()(bool c, T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      const Bits take_a = Bits{0} - static_cast<Bits>(c);
      return std::bit_cast<T>((std::bit_cast<Bits>(a) & take_a) | (std::bit_cast<Bits>(b) & ~take_a));
    } else {
      return c ? a : b;
    }
  }
};

// The row function of F over dense operands of types Ins, into Out.
template <typename F, typename Out, typename... Ins, size_t... I>
[[gnu::always_inline]] inline void row_of(void* dst, int64_t n, const RowOperand* src, std::index_sequence<I...>) {
  map_row(static_cast<Out*>(dst), n, F{},
          Operand<Ins>{static_cast<const Ins*>(src[I].data), src[I].stride}...);
}

template <typename F, typename Out, typename... Ins>
ORDO_SIMD_CLONES void row(void* dst, int64_t n, const RowOperand* src) {
  row_of<F, Out, Ins...>(dst, n, src, std::index_sequence_for<Ins...>{});
}

// An op whose operands and result all have dtype, one of Types.
template <size_t kArity, typename F, typename Types>
RowFn same_type_row(Types types, DType dtype) {
  RowFn fn = nullptr;
  visit_dtype(types, dtype, [&]<typename T>(TypeTag<T>) {
    if constexpr (kArity == 1) {
      fn = &row<F, T, T>;
    } else {
      fn = &row<F, T, T, T>;
    }
  });
  return fn;
}

template <typename Compare>
RowFn compare_row(DType operand) {
  RowFn fn = nullptr;
  visit_dtype(AllTypes{}, operand, [&]<typename T>(TypeTag<T>) { fn = &row<Compare, bool, T, T>; });
  return fn;
}

// A cast from or to a 16-bit float goes through float32, as torch's do, a
// chunk at a time through a buffer on the stack; from or to float32 itself
// it is one bulk conversion.
template <typename To, typename From>
void half_cast_row(void* dst, int64_t n, const RowOperand* src) {
  constexpr int64_t kChunk = 256;
  float wide[kChunk];
  const auto* from = static_cast<const From*>(src[0].data);
  const int64_t stride = src[0].stride;
  auto* to = static_cast<To*>(dst);
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    const float* floats = wide;
    if constexpr (std::is_same_v<From, float>) {
      if (stride == 1) floats = from + begin;
    }
    if constexpr (kIsHalfFloat<From>) {
      if (stride == 1) {
        if constexpr (std::is_same_v<To, float>) {
          widen_rows(dtype_of<From>(), to + begin, from + begin, m);  // straight into the output
          continue;
        }
        widen_rows(dtype_of<From>(), wide, from + begin, m);
      } else {
        for (int64_t i = 0; i < m; ++i) wide[i] = half_to_float(from[(begin + i) * stride]);
      }
    } else if (floats == wide) {
      for (int64_t i = 0; i < m; ++i) wide[i] = convert<float>(from[(begin + i) * stride]);
    }
    if constexpr (kIsHalfFloat<To>) {
      narrow_rows(dtype_of<To>(), to + begin, floats, m);
    } else {
      for (int64_t i = 0; i < m; ++i) to[begin + i] = convert<To>(floats[i]);
    }
  }
}

RowFn cast_row(DType from, DType to) {
  RowFn fn = nullptr;
  if (is_half_float(from) || is_half_float(to)) {
    visit_dtype(StoredTypes{}, from, [&]<typename From>(TypeTag<From>) {
      visit_dtype(StoredTypes{}, to, [&]<typename To>(TypeTag<To>) {
        if constexpr (kIsHalfFloat<From> || kIsHalfFloat<To>) fn = &half_cast_row<To, From>;
      });
    });
    return fn;
  }
  visit_dtype(AllTypes{}, from, [&]<typename From>(TypeTag<From>) {
    visit_dtype(AllTypes{}, to, [&]<typename To>(TypeTag<To>) { fn = &row<Convert<To>, To, From>; });
  });
  return fn;
}

RowFn where_row(DType result) {
  RowFn fn = nullptr;
  visit_dtype(AllTypes{}, result, [&]<typename T>(TypeTag<T>) { fn = &row<Select, T, bool, T, T>; });
  return fn;
}

// Covers the output with rows of fn: one row when the shapes allow it,
// else one per innermost row of a broadcasting walk; in blocks on the
// free cores when it is large (elementwise_rows.h). One row of an output
// past the caches is written by op's streaming row function, where it has
// one (streaming_rows.h).
template <size_t kArity>
void run_rows(const KernelArgs& args, ir::OpKind op, RowFn fn) {
  const device::Buffer& out = make_output(args);
  if (out.numel == 0) return;
  std::byte* const out_data = out.storage.get();
  const int64_t out_size = static_cast<int64_t>(dtype_size(out.dtype));
  std::array<const std::byte*, kArity> in_data;
  std::array<int64_t, kArity> in_size;
  bool flat = true;
  for (size_t k = 0; k < kArity; ++k) {
    const device::Buffer& in = *args.inputs[k];
    in_data[k] = in.storage.get();
    in_size[k] = static_cast<int64_t>(dtype_size(in.dtype));
    flat = flat && (in.numel == out.numel || in.numel == 1);
  }
  if (flat) {
    RowFn flat_fn = fn;
    if (out.numel * out_size >= kStreamingOutputBytes && args.inputs[0]->dtype == out.dtype) {
      if (const RowFn streaming = streaming_row_fn(op, out.dtype)) flat_fn = streaming;
    }
    run_row_blocks(1, out.numel, [&](const RowBlock& block) {
      std::array<RowOperand, kArity> operands;
      for (size_t k = 0; k < kArity; ++k) {
        const bool dense = args.inputs[k]->numel == out.numel;
        operands[k] = {in_data[k] + (dense ? block.first_column * in_size[k] : 0), dense ? 1 : 0};
      }
      flat_fn(out_data + block.first_column * out_size, block.columns, operands.data());
    });
    return;
  }
  StridedWalk<kArity + 1> walk{out.shape, {}};
  walk.strides[0] = contiguous_strides(out.shape);
  for (size_t k = 0; k < kArity; ++k) walk.strides[k + 1] = broadcast_strides(args.inputs[k]->shape, out.shape);
  const StridedWalk<kArity + 1> merged = coalesce(walk);
  const size_t inner = merged.shape.size() - 1;  // out has more than one element here
  const int64_t length = merged.shape[inner];
  run_row_blocks(out.numel / length, length, [&](const RowBlock& block) {
    std::vector<int64_t> index(inner);
    std::array<int64_t, kArity + 1> offset;
    seek_row(merged.shape, inner, merged.strides, block.first_row, index, offset);
    for (int64_t row = 0; row < block.rows; ++row) {
      std::array<RowOperand, kArity> operands;
      for (size_t k = 0; k < kArity; ++k) {
        const int64_t stride = merged.strides[k + 1][inner];
        operands[k] = {in_data[k] + (offset[k + 1] + block.first_column * stride) * in_size[k], stride};
      }
      fn(out_data + (offset[0] + block.first_column) * out_size, block.columns, operands.data());
      next_row(merged.shape, inner, merged.strides, index, offset);
    }
  });
}

template <ir::OpKind kOp>
void run_elementwise(const KernelArgs& args) {
  const RowFn fn = row_fn(kOp, args.inputs[0]->dtype, args.output_types[0].dtype);
  switch (args.inputs.size()) {
    case 1:
      return run_rows<1>(args, kOp, fn);
    case 2:
      return run_rows<2>(args, kOp, fn);
  }
  ORDO_CHECK_EQ(args.inputs.size(), 3u, ": the inputs of ", ir::op_name(kOp));
  return run_rows<3>(args, kOp, fn);
}

RowFn float_math_row(ir::OpKind op, DType dtype) {
  const RowFn fn = vector_math_row(op, dtype, best_vector_isa());
  ORDO_CHECK(fn != nullptr, ": kernel got unexpected dtype ", dtype_name(dtype), " for ", ir::op_name(op));
  return fn;
}

void throw_negative_exponent(int64_t base, int64_t exponent) {
  throw_error<ExecutionError>("integers to negative integer powers are not allowed (", base, " ** ", exponent,
                              "); cast to a float dtype first");
}

}  // namespace

using ir::OpKind;

RowFn row_fn(OpKind op, DType operand, DType result) {
  switch (op) {
    case OpKind::kNeg:
      return same_type_row<1, Negate>(NumericTypes{}, result);
    case OpKind::kAbs:
      return same_type_row<1, Absolute>(NumericTypes{}, result);
    case OpKind::kRelu:
      return same_type_row<1, Relu>(NumericTypes{}, result);
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kTanh:
    case OpKind::kSigmoid:
    case OpKind::kErf:
      return float_math_row(op, result);
    case OpKind::kLogicalNot:
      return &row<std::logical_not<>, bool, bool>;
    case OpKind::kCast:
      return cast_row(operand, result);
    case OpKind::kAdd:
      return same_type_row<2, Commutative<std::plus<>>>(NumericTypes{}, result);
    case OpKind::kSub:
      return same_type_row<2, Wrapping<std::minus<>>>(NumericTypes{}, result);
    case OpKind::kMul:
      return same_type_row<2, Commutative<std::multiplies<>>>(NumericTypes{}, result);
    case OpKind::kDiv:
      return same_type_row<2, std::divides<>>(FloatingTypes{}, result);
    case OpKind::kPow:
      return is_floating(result) ? float_math_row(op, result) : same_type_row<2, IntegerPower>(IntegerTypes{}, result);
    case OpKind::kMaximum:
      return same_type_row<2, Extreme<std::greater<>>>(AllTypes{}, result);
    case OpKind::kMinimum:
      return same_type_row<2, Extreme<std::less<>>>(AllTypes{}, result);
    case OpKind::kEq:
      return compare_row<std::equal_to<>>(operand);
    case OpKind::kNe:
      return compare_row<std::not_equal_to<>>(operand);
    case OpKind::kLt:
      return compare_row<std::less<>>(operand);
    case OpKind::kLe:
      return compare_row<std::less_equal<>>(operand);
    case OpKind::kGt:
      return compare_row<std::greater<>>(operand);
    case OpKind::kGe:
      return compare_row<std::greater_equal<>>(operand);
    case OpKind::kLogicalAnd:
      return &row<std::logical_and<>, bool, bool, bool>;
    case OpKind::kLogicalOr:
      return &row<std::logical_or<>, bool, bool, bool>;
    case OpKind::kWhere:
      return where_row(result);
    default:
      return nullptr;
  }
}

template <>
void run<OpKind::kCast>(const KernelArgs& args) {
  const device::Buffer& in = *args.inputs[0];
  if (in.dtype == args.output_types[0].dtype) {
    // Buffers are immutable once written, so the result can share storage.
    args.outputs[0] = device::view_buffer(in, args.output_types[0].shape);
    return;
  }
  run_elementwise<OpKind::kCast>(args);
}

#define ORDO_ELEMENTWISE_KERNEL(name)                  \
  template <>                                          \
  void run<OpKind::k##name>(const KernelArgs& args) {  \
    run_elementwise<OpKind::k##name>(args);            \
  }
ORDO_ELEMENTWISE_KERNEL(Neg)
ORDO_ELEMENTWISE_KERNEL(Abs)
ORDO_ELEMENTWISE_KERNEL(Relu)
ORDO_ELEMENTWISE_KERNEL(Exp)
ORDO_ELEMENTWISE_KERNEL(Log)
ORDO_ELEMENTWISE_KERNEL(Sqrt)
ORDO_ELEMENTWISE_KERNEL(Rsqrt)
ORDO_ELEMENTWISE_KERNEL(Tanh)
ORDO_ELEMENTWISE_KERNEL(Sigmoid)
ORDO_ELEMENTWISE_KERNEL(Erf)
ORDO_ELEMENTWISE_KERNEL(LogicalNot)
ORDO_ELEMENTWISE_KERNEL(Add)
ORDO_ELEMENTWISE_KERNEL(Sub)
ORDO_ELEMENTWISE_KERNEL(Mul)
ORDO_ELEMENTWISE_KERNEL(Div)
ORDO_ELEMENTWISE_KERNEL(Pow)
ORDO_ELEMENTWISE_KERNEL(Maximum)
ORDO_ELEMENTWISE_KERNEL(Minimum)
ORDO_ELEMENTWISE_KERNEL(Eq)
ORDO_ELEMENTWISE_KERNEL(Ne)
ORDO_ELEMENTWISE_KERNEL(Lt)
ORDO_ELEMENTWISE_KERNEL(Le)
ORDO_ELEMENTWISE_KERNEL(Gt)
ORDO_ELEMENTWISE_KERNEL(Ge)
ORDO_ELEMENTWISE_KERNEL(LogicalAnd)
ORDO_ELEMENTWISE_KERNEL(LogicalOr)
ORDO_ELEMENTWISE_KERNEL(Where)
#undef ORDO_ELEMENTWISE_KERNEL

}  // namespace ordo::kernels
