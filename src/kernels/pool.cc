// max_pool2d, avg_pool2d and adaptive_avg_pool2d with their backward ops.
// Every op works plane by plane ((n, c) pairs of an NCHW buffer): a plane's
// result depends on that plane alone, computed in one fixed order, and the
// blocks of planes (fixed by the shape) go to the free cores, so the bits
// are the same whatever the thread count. Window bounds are worked out once
// per output row and column, as torch 1.13's loops clip them.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/simd.h"
#include "ir/op_attrs.h"
#include "kernels/item_blocks.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {
namespace {

// One output position's window along an axis: input indices [begin, end)
// (clipped to the input), and for avg_pool2d its extent counting padding.
struct AxisWindow {
  int64_t begin, end, padded_extent;
};

struct AxisParams {
  int64_t kernel, stride, pad, dilation;
};

// Axis 0 is height, 1 width; avg_pool2d has no dilation.
AxisParams axis_params(const ir::PoolWindowAttr& window, int axis, int64_t dilation) {
  const auto a = static_cast<size_t>(axis);
  return {window.kernel[a], window.stride[a], window.padding[a], dilation};
}

// max_pool2d's windows: the first in-input position reached from the start
// by whole dilation steps, up to the last position the kernel covers.
std::vector<AxisWindow> max_windows(const AxisParams& p, int64_t input, int64_t output) {
  std::vector<AxisWindow> windows(static_cast<size_t>(output));
  for (int64_t o = 0; o < output; ++o) {
    int64_t begin = o * p.stride - p.pad;
    const int64_t end = std::min(begin + (p.kernel - 1) * p.dilation + 1, input);
    while (begin < 0) begin += p.dilation;
    windows[static_cast<size_t>(o)] = {begin, end, 0};
  }
  return windows;
}

// avg_pool2d's windows: the padded extent stops at the right padding (a
// ceil_mode window may reach past it), then the bounds are clipped.
std::vector<AxisWindow> avg_windows(const AxisParams& p, int64_t input, int64_t output) {
  std::vector<AxisWindow> windows(static_cast<size_t>(output));
  for (int64_t o = 0; o < output; ++o) {
    const int64_t begin = o * p.stride - p.pad;
    const int64_t end = std::min(begin + p.kernel, input + p.pad);
    windows[static_cast<size_t>(o)] = {std::max<int64_t>(begin, 0), std::min(end, input), end - begin};
  }
  return windows;
}

// adaptive_avg_pool2d's: floor(o * in / out) to ceil((o + 1) * in / out).
std::vector<AxisWindow> adaptive_windows(int64_t input, int64_t output) {
  std::vector<AxisWindow> windows(static_cast<size_t>(output));
  for (int64_t o = 0; o < output; ++o) {
    const int64_t begin = o * input / output;
    const int64_t end = ((o + 1) * input + output - 1) / output;
    windows[static_cast<size_t>(o)] = {begin, end, end - begin};
  }
  return windows;
}

struct Planes {
  int64_t count, in_h, in_w, out_h, out_w;
};

Planes planes_of(const Shape& input, const Shape& output) {
  return {input[0] * input[1], input[2], input[3], output[2], output[3]};
}

template <typename Body>
void for_each_plane(const Planes& planes, Body&& body) {
  for_each_item(planes.count, planes.in_h * planes.in_w + planes.out_h * planes.out_w, body);
}

// The window's maximum and its index in the plane, as torch: the first
// maximum wins, a nan wins over everything (the last nan), and a window of
// -inf keeps its first position.
template <typename T>
struct Extreme {
  T value;
  int64_t index;
};

template <typename T>
Extreme<T> window_max_in_order(const T* plane, int64_t width, const AxisWindow& r, const AxisWindow& c, int64_t dh,
                               int64_t dw) {
  Extreme<T> best{-std::numeric_limits<T>::infinity(), r.begin * width + c.begin};
  for (int64_t ih = r.begin; ih < r.end; ih += dh) {
    const T* row = plane + ih * width;
    for (int64_t iw = c.begin; iw < c.end; iw += dw) {
      const T v = row[iw];
      if (v > best.value || std::isnan(v)) best = {v, ih * width + iw};
    }
  }
  return best;
}

// window_max_in_order's result in two passes without a data-dependent
// branch (on random data the in-order one mispredicts about every other
// element, and the backward finds every window's maximum again): the
// maximum, then a bit per element equal to it (a window row a run of
// row_bits, a power of two, so that the first set bit's row and column are
// a shift and a mask), the first set bit the index. A window with a NaN,
// or too large for 64 bits, takes the in-order pass.
template <typename T>
inline Extreme<T> window_max(const T* plane, int64_t width, const AxisWindow& r, const AxisWindow& c, int64_t dh,
                             int64_t dw) {
  const int64_t rows = (r.end - r.begin + dh - 1) / dh;
  const int64_t cols = (c.end - c.begin + dw - 1) / dw;
  const int row_shift = cols > 0 ? std::bit_width(static_cast<uint64_t>(cols - 1)) : 0;
  if (rows <= 0 || cols <= 0 || (rows << row_shift) > 64) return window_max_in_order(plane, width, r, c, dh, dw);
  T best = -std::numeric_limits<T>::infinity();
  bool nan = false;
  for (int64_t ih = r.begin; ih < r.end; ih += dh) {
    const T* row = plane + ih * width;
    for (int64_t iw = c.begin; iw < c.end; iw += dw) {
      best = row[iw] > best ? row[iw] : best;
      nan |= row[iw] != row[iw];
    }
  }
  if (nan) return window_max_in_order(plane, width, r, c, dh, dw);
  uint64_t equal = 0;
  for (int64_t ih = r.begin, bit = 0; ih < r.end; ih += dh, bit += int64_t{1} << row_shift) {
    const T* row = plane + ih * width;
    for (int64_t iw = c.begin, col = 0; iw < c.end; iw += dw, ++col) equal |= uint64_t{row[iw] == best} << (bit + col);
  }
  const int first = std::countr_zero(equal);
  const int64_t row = first >> row_shift;
  const int64_t col = first & ((1 << row_shift) - 1);
  return {best, (r.begin + row * dh) * width + c.begin + col * dw};
}

struct MaxGeometry {
  Planes planes;
  std::vector<AxisWindow> rows, cols;
  int64_t dh, dw;
  bool disjoint_pairs;  // 2 x 2 windows of stride 2, each inside the plane
};

MaxGeometry max_geometry(const ir::MaxPoolAttrs& pool, const Shape& input, const Shape& output) {
  const AxisParams h = axis_params(pool.window, 0, pool.dilation[0]);
  const AxisParams w = axis_params(pool.window, 1, pool.dilation[1]);
  const Planes planes = planes_of(input, output);
  const auto pairs = [](const AxisParams& a, int64_t input, int64_t output) {
    return a.kernel == 2 && a.stride == 2 && a.pad == 0 && a.dilation == 1 && 2 * output <= input;
  };
  return {planes,     max_windows(h, planes.in_h, planes.out_h), max_windows(w, planes.in_w, planes.out_w),
          h.dilation, w.dilation, pairs(h, planes.in_h, planes.out_h) && pairs(w, planes.in_w, planes.out_w)};
}

// The larger of a and v, nan if v is (a is one already, or -inf at first):
// torch's rule, without the branch that random data mispredicts.
template <typename T>
inline T max_or_nan(T a, T v) {
  return (v > a || v != v) ? v : a;
}

// column[i] = the maximum of rows [begin, end) of the plane at column i.
template <typename T>
ORDO_SIMD_CLONES void column_max(T* __restrict column, const T* plane, int64_t width, int64_t begin, int64_t end) {
  std::copy(plane + begin * width, plane + (begin + 1) * width, column);
  for (int64_t ih = begin + 1; ih < end; ++ih) {
    const T* row = plane + ih * width;
    for (int64_t i = 0; i < width; ++i) column[i] = max_or_nan(column[i], row[i]);
  }
}

// The values alone, without dilation: each output row's window rows are
// folded into one row by a vector loop, then each window takes the maximum
// of its columns there. The same values as window_max's, but for the sign
// of a zero that ties with another zero.
template <typename T>
void max_pool_plane_by_columns(const MaxGeometry& g, const T* in, T* out, T* column) {
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const AxisWindow& r = g.rows[static_cast<size_t>(oh)];
    column_max(column, in, g.planes.in_w, r.begin, r.end);
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const AxisWindow& c = g.cols[static_cast<size_t>(ow)];
      // A plain maximum (maxss: no branch to mispredict); a NaN, rare,
      // takes max_or_nan's pass.
      T best = column[c.begin];
      bool nan = best != best;
      for (int64_t iw = c.begin + 1; iw < c.end; ++iw) {
        best = column[iw] > best ? column[iw] : best;
        nan |= column[iw] != column[iw];
      }
      if (nan) {
        best = column[c.begin];
        for (int64_t iw = c.begin + 1; iw < c.end; ++iw) best = max_or_nan(best, column[iw]);
      }
      out[oh * g.planes.out_w + ow] = best;
    }
  }
}

// A disjoint 2 x 2 window's maximum and which of its four elements (row-
// major) is the first to hold it: exactly one take is set. std::max keeps
// its first argument on a tie; the takes are computed without selects,
// which GCC turns into branches that random data mispredicts.
template <typename T>
struct FirstOfFour {
  T best;
  bool take_a, take_b, take_c, take_d;
};

template <typename T>
inline FirstOfFour<T> first_of_four(T a, T b, T c, T d) {
  const T best = std::max(std::max(a, b), std::max(c, d));
  const bool take_a = a == best;
  const bool take_b = !take_a & (b == best);
  const bool take_c = !take_a & !take_b & (c == best);
  const bool take_d = !take_a & !take_b & !take_c;
  return {best, take_a, take_b, take_c, take_d};
}

// The values and indices of 2 x 2 windows of stride 2, each inside the
// plane: a window's four elements at once, its first maximum picked without
// a branch on the data; a window with a NaN takes window_max.
template <typename T>
void max_pool_pairs_with_indices(const MaxGeometry& g, const T* in, T* out, int64_t* indices) {
  const int64_t width = g.planes.in_w;
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const T* top = in + 2 * oh * width;
    const T* bottom = top + width;
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const int64_t at = oh * g.planes.out_w + ow;
      const T a = top[2 * ow], b = top[2 * ow + 1], c = bottom[2 * ow], d = bottom[2 * ow + 1];
      if ((a != a) | (b != b) | (c != c) | (d != d)) [[unlikely]] {
        const Extreme<T> e = window_max(in, width, g.rows[static_cast<size_t>(oh)], g.cols[static_cast<size_t>(ow)],
                                        g.dh, g.dw);
        out[at] = e.value;
        indices[at] = e.index;
        continue;
      }
      const FirstOfFour<T> first = first_of_four(a, b, c, d);
      const int64_t offset =
          int64_t{first.take_b} + int64_t{first.take_c} * width + int64_t{first.take_d} * (width + 1);
      out[at] = first.best;
      indices[at] = 2 * oh * width + 2 * ow + offset;
    }
  }
}

template <typename T>
void max_pool_plane(const MaxGeometry& g, const T* in, T* out, int64_t* indices) {
  if (indices == nullptr && g.dh == 1 && g.dw == 1) {
    std::vector<T> column(static_cast<size_t>(g.planes.in_w));
    max_pool_plane_by_columns(g, in, out, column.data());
    return;
  }
  if (indices != nullptr && g.disjoint_pairs) {
    max_pool_pairs_with_indices(g, in, out, indices);
    return;
  }
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const Extreme<T> e = window_max(in, g.planes.in_w, g.rows[static_cast<size_t>(oh)],
                                      g.cols[static_cast<size_t>(ow)], g.dh, g.dw);
      out[oh * g.planes.out_w + ow] = e.value;
      if (indices != nullptr) indices[oh * g.planes.out_w + ow] = e.index;
    }
  }
}

// value when take, else +0: bits masked, since GCC turns a select on a
// comparison into a branch, which the data mispredicts.
template <typename T>
inline T share_if(bool take, T value) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  return std::bit_cast<T>(std::bit_cast<Bits>(value) & (Bits{0} - static_cast<Bits>(take)));
}

// A window's gradient goes to the window's first maximum (the last NaN
// with one), as window_max_in_order finds it; here without a branch on the
// data: the maximum, then a pass that adds the gradient where the element
// equals it and no earlier one did (and 0 elsewhere).
template <typename T>
void max_pool_backward_window(const MaxGeometry& g, T share, const T* in, T* grad_in, const AxisWindow& r,
                              const AxisWindow& c) {
  const int64_t width = g.planes.in_w;
  T best = -std::numeric_limits<T>::infinity();
  bool nan = false;
  for (int64_t ih = r.begin; ih < r.end; ih += g.dh) {
    for (int64_t iw = c.begin; iw < c.end; iw += g.dw) {
      const T v = in[ih * width + iw];
      best = v > best ? v : best;
      nan |= v != v;
    }
  }
  if (nan || best == -std::numeric_limits<T>::infinity()) {  // rare: the in-order pass
    grad_in[window_max_in_order(in, width, r, c, g.dh, g.dw).index] += share;
    return;
  }
  bool claimed = false;
  for (int64_t ih = r.begin; ih < r.end; ih += g.dh) {
    for (int64_t iw = c.begin; iw < c.end; iw += g.dw) {
      const bool take = !claimed & (in[ih * width + iw] == best);
      grad_in[ih * width + iw] += share_if(take, share);
      claimed |= take;
    }
  }
}

// 2 x 2 windows of stride 2, each inside the plane and none overlapping:
// a window's four elements at once, its gradient stored (not added) at the
// first maximum and 0 beside it; a window with a NaN takes the general
// path.
template <typename T>
void max_pool_backward_pairs(const MaxGeometry& g, const T* grad, const T* in, T* grad_in) {
  const int64_t width = g.planes.in_w;
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const T* top = in + 2 * oh * width;
    const T* bottom = top + width;
    T* grad_top = grad_in + 2 * oh * width;
    T* grad_bottom = grad_top + width;
    const T* shares = grad + oh * g.planes.out_w;
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const T a = top[2 * ow], b = top[2 * ow + 1], c = bottom[2 * ow], d = bottom[2 * ow + 1];
      if ((a != a) | (b != b) | (c != c) | (d != d)) [[unlikely]] {
        max_pool_backward_window(g, shares[ow], in, grad_in, g.rows[static_cast<size_t>(oh)],
                                 g.cols[static_cast<size_t>(ow)]);
        continue;
      }
      const FirstOfFour<T> first = first_of_four(a, b, c, d);
      grad_top[2 * ow] = share_if(first.take_a, shares[ow]);
      grad_top[2 * ow + 1] = share_if(first.take_b, shares[ow]);
      grad_bottom[2 * ow] = share_if(first.take_c, shares[ow]);
      grad_bottom[2 * ow + 1] = share_if(first.take_d, shares[ow]);
    }
  }
}

template <typename T>
void max_pool_backward_plane(const MaxGeometry& g, const T* grad, const T* in, T* grad_in) {
  std::fill(grad_in, grad_in + g.planes.in_h * g.planes.in_w, T{0});
  if (g.disjoint_pairs) {
    max_pool_backward_pairs(g, grad, in, grad_in);
    return;
  }
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const AxisWindow& r = g.rows[static_cast<size_t>(oh)];
    if (r.begin >= r.end) continue;
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const AxisWindow& c = g.cols[static_cast<size_t>(ow)];
      if (c.begin >= c.end) continue;
      max_pool_backward_window(g, grad[oh * g.planes.out_w + ow], in, grad_in, r, c);
    }
  }
}

// The windows of an average and how a window's sum becomes its mean.
struct AvgGeometry {
  Planes planes;
  std::vector<AxisWindow> rows, cols;
  enum class Divisor { kClipped, kPadded, kOverride, kAdaptive } divisor;
  int64_t divisor_override;
};

AvgGeometry avg_geometry(const ir::AvgPoolAttrs& pool, const Shape& input, const Shape& output) {
  const Planes planes = planes_of(input, output);
  const AxisParams h = axis_params(pool.window, 0, 1);
  const AxisParams w = axis_params(pool.window, 1, 1);
  const int64_t override_value = pool.divisor_override;
  const auto divisor = override_value > 0     ? AvgGeometry::Divisor::kOverride
                       : pool.count_include_pad ? AvgGeometry::Divisor::kPadded
                                                : AvgGeometry::Divisor::kClipped;
  return {planes, avg_windows(h, planes.in_h, planes.out_h), avg_windows(w, planes.in_w, planes.out_w), divisor,
          override_value};
}

AvgGeometry adaptive_geometry(const Shape& input, const Shape& output) {
  const Planes planes = planes_of(input, output);
  return {planes, adaptive_windows(planes.in_h, planes.out_h), adaptive_windows(planes.in_w, planes.out_w),
          AvgGeometry::Divisor::kAdaptive, 0};
}

// sum / divisor as torch computes it (adaptive: / kh / kw, in two steps).
template <typename T>
inline T mean_of(const AvgGeometry& g, T sum, const AxisWindow& r, const AxisWindow& c) {
  const int64_t kh = r.end - r.begin;
  const int64_t kw = c.end - c.begin;
  switch (g.divisor) {
    case AvgGeometry::Divisor::kOverride: return sum / static_cast<T>(g.divisor_override);
    case AvgGeometry::Divisor::kPadded: return sum / static_cast<T>(r.padded_extent * c.padded_extent);
    case AvgGeometry::Divisor::kClipped: return sum / static_cast<T>(kh * kw);
    case AvgGeometry::Divisor::kAdaptive: break;
  }
  return sum / static_cast<T>(kh) / static_cast<T>(kw);
}

template <typename T>
void avg_pool_plane(const AvgGeometry& g, const T* in, T* out) {
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const AxisWindow& r = g.rows[static_cast<size_t>(oh)];
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const AxisWindow& c = g.cols[static_cast<size_t>(ow)];
      T sum = 0;
      for (int64_t ih = r.begin; ih < r.end; ++ih) {
        const T* row = in + ih * g.planes.in_w;
        for (int64_t iw = c.begin; iw < c.end; ++iw) sum += row[iw];
      }
      out[oh * g.planes.out_w + ow] = mean_of(g, sum, r, c);
    }
  }
}

template <typename T>
void avg_pool_backward_plane(const AvgGeometry& g, const T* grad, T* grad_in) {
  std::fill(grad_in, grad_in + g.planes.in_h * g.planes.in_w, T{0});
  for (int64_t oh = 0; oh < g.planes.out_h; ++oh) {
    const AxisWindow& r = g.rows[static_cast<size_t>(oh)];
    for (int64_t ow = 0; ow < g.planes.out_w; ++ow) {
      const AxisWindow& c = g.cols[static_cast<size_t>(ow)];
      const T share = mean_of(g, grad[oh * g.planes.out_w + ow], r, c);
      for (int64_t ih = r.begin; ih < r.end; ++ih) {
        T* row = grad_in + ih * g.planes.in_w;
        for (int64_t iw = c.begin; iw < c.end; ++iw) row[iw] += share;
      }
    }
  }
}

// The forward (input: x; outputs: the maxima and, with_indices, their
// indices) or the backward (inputs: the output's gradient and x).
void run_max_pool(const KernelArgs& args, const ir::MaxPoolAttrs& pool, bool backward) {
  const device::Buffer& x = *args.inputs[backward ? 1 : 0];
  const device::Buffer& out = make_output(args, 0);
  int64_t* indices = !backward && pool.with_indices ? make_output(args, 1).mutable_data<int64_t>() : nullptr;
  const MaxGeometry g = max_geometry(pool, x.shape, backward ? args.inputs[0]->shape : out.shape);
  const int64_t in_plane = g.planes.in_h * g.planes.in_w;
  const int64_t out_plane = g.planes.out_h * g.planes.out_w;
  visit_dtype(FloatingTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    for_each_plane(g.planes, [&](int64_t p) {
      const T* plane = x.data<T>() + p * in_plane;
      if (backward) {
        max_pool_backward_plane(g, args.inputs[0]->data<T>() + p * out_plane, plane,
                                out.mutable_data<T>() + p * in_plane);
      } else {
        max_pool_plane(g, plane, out.mutable_data<T>() + p * out_plane,
                       indices == nullptr ? nullptr : indices + p * out_plane);
      }
    });
  });
}

// The forward (input: x) or the backward (input: the output's gradient).
void run_avg_pool(const KernelArgs& args, const AvgGeometry& g, bool backward) {
  const device::Buffer& in = *args.inputs[0];
  const device::Buffer& out = make_output(args);
  const int64_t in_plane = g.planes.in_h * g.planes.in_w;
  const int64_t out_plane = g.planes.out_h * g.planes.out_w;
  visit_dtype(FloatingTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    for_each_plane(g.planes, [&](int64_t p) {
      if (backward) {
        avg_pool_backward_plane(g, in.data<T>() + p * out_plane, out.mutable_data<T>() + p * in_plane);
      } else {
        avg_pool_plane(g, in.data<T>() + p * in_plane, out.mutable_data<T>() + p * out_plane);
      }
    });
  });
}

}  // namespace

template <>
void run<ir::OpKind::kMaxPool2d>(const KernelArgs& args) {
  run_max_pool(args, ir::decode<ir::OpKind::kMaxPool2d>(args.attrs), false);
}

template <>
void run<ir::OpKind::kMaxPool2dBackward>(const KernelArgs& args) {
  run_max_pool(args, ir::decode<ir::OpKind::kMaxPool2dBackward>(args.attrs), true);
}

template <>
void run<ir::OpKind::kAvgPool2d>(const KernelArgs& args) {
  const ir::AvgPoolAttrs pool = ir::decode<ir::OpKind::kAvgPool2d>(args.attrs);
  run_avg_pool(args, avg_geometry(pool, args.inputs[0]->shape, args.output_types[0].shape), false);
}

template <>
void run<ir::OpKind::kAvgPool2dBackward>(const KernelArgs& args) {
  const ir::AvgPoolAttrs pool = ir::decode<ir::OpKind::kAvgPool2dBackward>(args.attrs);
  run_avg_pool(args, avg_geometry(pool, args.output_types[0].shape, args.inputs[0]->shape), true);
}

template <>
void run<ir::OpKind::kAdaptiveAvgPool2d>(const KernelArgs& args) {
  run_avg_pool(args, adaptive_geometry(args.inputs[0]->shape, args.output_types[0].shape), false);
}

template <>
void run<ir::OpKind::kAdaptiveAvgPool2dBackward>(const KernelArgs& args) {
  run_avg_pool(args, adaptive_geometry(args.output_types[0].shape, args.inputs[0]->shape), true);
}

}  // namespace ordo::kernels
