#include "kernels/streaming_rows.h"

#include <cmath>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ordo::kernels {

#if defined(__SSE2__)
namespace {

// SSE2 is in every x86-64, so the loops need no dispatch: the stores, not
// the vector width, are what saves the traffic (measured: SSE2 and AVX2
// plain loops run alike here; memory is the limit).
struct F32 {
  using T = float;
  using V = __m128;
  static constexpr int64_t kLanes = 4;
  static V load(const T* p) { return _mm_loadu_ps(p); }
  static V splat(T x) { return _mm_set1_ps(x); }
  static void stream(T* p, V v) { _mm_stream_ps(p, v); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V div(V a, V b) { return _mm_div_ps(a, b); }
  // isnan(a) ? a : b, lane by lane
  static V nan_of_first(V a, V b) {
    const V nan = _mm_cmpunord_ps(a, a);
    return _mm_or_ps(_mm_and_ps(nan, a), _mm_andnot_ps(nan, b));
  }
};

struct F64 {
  using T = double;
  using V = __m128d;
  static constexpr int64_t kLanes = 2;
  static V load(const T* p) { return _mm_loadu_pd(p); }
  static V splat(T x) { return _mm_set1_pd(x); }
  static void stream(T* p, V v) { _mm_stream_pd(p, v); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static V sub(V a, V b) { return _mm_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm_mul_pd(a, b); }
  static V div(V a, V b) { return _mm_div_pd(a, b); }
  static V nan_of_first(V a, V b) {
    const V nan = _mm_cmpunord_pd(a, a);
    return _mm_or_pd(_mm_and_pd(nan, a), _mm_andnot_pd(nan, b));
  }
};

// The ops, on vectors and on single elements alike. + and * take the first
// operand's NaN when both are NaN, as the plain rows do (elementwise.cc's
// Commutative); - and / are what the instruction does.
struct Add {
  template <typename Isa, typename V>
  static V vector(V a, V b) { return Isa::add(a, Isa::nan_of_first(a, b)); }
  template <typename T>
  static T scalar(T a, T b) { return a + (std::isnan(a) ? a : b); }
};
struct Mul {
  template <typename Isa, typename V>
  static V vector(V a, V b) { return Isa::mul(a, Isa::nan_of_first(a, b)); }
  template <typename T>
  static T scalar(T a, T b) { return a * (std::isnan(a) ? a : b); }
};
struct Sub {
  template <typename Isa, typename V>
  static V vector(V a, V b) { return Isa::sub(a, b); }
  template <typename T>
  static T scalar(T a, T b) { return a - b; }
};
struct Div {
  template <typename Isa, typename V>
  static V vector(V a, V b) { return Isa::div(a, b); }
  template <typename T>
  static T scalar(T a, T b) { return a / b; }
};

// dst[i] = op(a[i * a_stride], b[i * b_stride]), strides 1 or 0.
template <typename Isa, typename Op>
void streaming_row(void* dst_bytes, int64_t n, const RowOperand* operands) {
  using T = typename Isa::T;
  T* const dst = static_cast<T*>(dst_bytes);
  const T* const a = static_cast<const T*>(operands[0].data);
  const T* const b = static_cast<const T*>(operands[1].data);
  const int64_t sa = operands[0].stride, sb = operands[1].stride;
  const auto element = [&](int64_t i) { return Op::scalar(a[i * sa], b[i * sb]); };
  int64_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 16 != 0; ++i) dst[i] = element(i);
  const auto operand = [](const T* p, int64_t stride, int64_t at) {
    return stride == 0 ? Isa::splat(*p) : Isa::load(p + at);
  };
  for (; i + Isa::kLanes <= n; i += Isa::kLanes) {
    Isa::stream(dst + i, Op::template vector<Isa>(operand(a, sa, i), operand(b, sb, i)));
  }
  for (; i < n; ++i) dst[i] = element(i);
  _mm_sfence();  // the streamed lines before the release that hands dst on
}

template <typename Isa>
RowFn streaming_row_of(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kAdd:
      return &streaming_row<Isa, Add>;
    case ir::OpKind::kSub:
      return &streaming_row<Isa, Sub>;
    case ir::OpKind::kMul:
      return &streaming_row<Isa, Mul>;
    case ir::OpKind::kDiv:
      return &streaming_row<Isa, Div>;
    default:
      return nullptr;
  }
}

}  // namespace

RowFn streaming_row_fn(ir::OpKind op, DType dtype) {
  if (dtype == DType::kFloat32) return streaming_row_of<F32>(op);
  if (dtype == DType::kFloat64) return streaming_row_of<F64>(op);
  return nullptr;
}
#else
RowFn streaming_row_fn(ir::OpKind, DType) { return nullptr; }
#endif

}  // namespace ordo::kernels
