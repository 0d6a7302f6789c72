// Reductions over attrs.ints (sorted, unique axes; keepdim is already in the
// output shape). Every kernel folds the input in memory order into one slot
// per output element. Restricted to one slot, row-major order of the whole
// input is row-major order of the reduced axes, so each result is computed
// in that one fixed order (bitwise deterministic) while the input is still
// read sequentially, whichever axes are reduced.
#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "core/check.h"
#include "kernels/kernels_internal.h"
#include "kernels/strided_walk.h"

namespace ordo::kernels {
namespace {

// Array 0 is the input; array 1 the output slot (dense over the kept axes,
// 0 on reduced ones); array 2 the position within the reduced axes (dense
// over them, 0 on kept ones), which Argmax reports.
StridedWalk<3> reduction_walk(const Shape& shape, std::span<const int64_t> axes) {
  StridedWalk<3> walk{shape, {contiguous_strides(shape), Strides(shape.size(), 0),
                              Strides(shape.size(), 0)}};
  int64_t kept_step = 1;
  int64_t reduced_step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    int64_t& step = reduced ? reduced_step : kept_step;
    walk.strides[reduced ? 2 : 1][d] = step;
    step *= shape[d];
  }
  return walk;
}

// Calls step(slot, value, position) for every input element in memory
// order, with the slot of its output element and its position within the
// reduced axes.
template <typename In, typename Slot, typename Step>
void fold(const KernelArgs& args, Slot* slots, const Step& step) {
  const device::Buffer& in = *args.inputs[0];
  const In* data = in.data<In>();
  for_each_row(reduction_walk(in.shape, args.attrs.ints),
               [&](const auto& offset, int64_t n, const auto& stride) {
                 // The input is dense, so along a row it steps by one.
                 const In* x = data + offset[0];
                 Slot* slot = slots + offset[1];
                 if (stride[1] == 0) {
                   // The whole row lands in one slot: keep it in a register.
                   Slot acc = *slot;
                   for (int64_t i = 0; i < n; ++i) step(acc, x[i], offset[2] + i * stride[2]);
                   *slot = acc;
                 } else {
                   for (int64_t i = 0; i < n; ++i) {
                     step(slot[i * stride[1]], x[i], offset[2] + i * stride[2]);
                   }
                 }
               });
}

// Integer sums wrap in uint64 (like numpy, and never UB); floating sums
// accumulate in double and round once at the end.
template <typename Out>
using SumSlot = std::conditional_t<std::is_floating_point_v<Out>, double, uint64_t>;

template <typename In, typename Slot>
std::vector<Slot> sum_slots(const KernelArgs& args, int64_t count) {
  std::vector<Slot> slots(static_cast<size_t>(count), Slot{0});
  fold<In>(args, slots.data(), [](Slot& acc, In x, int64_t) { acc += static_cast<Slot>(x); });
  return slots;
}

int64_t reduced_count(const Shape& shape, std::span<const int64_t> axes) {
  int64_t count = 1;
  for (int64_t axis : axes) count *= shape[static_cast<size_t>(axis)];
  return count;
}

// The start value of a max (Better = greater) or min (less) reduction: every
// element beats or ties it, so a tie keeps element 0 for Argmax.
template <typename T, typename Better>
T worst() {
  using Limits = std::numeric_limits<T>;
  constexpr bool kMax = std::is_same_v<Better, std::greater<>>;
  if constexpr (Limits::has_infinity) {
    return kMax ? -Limits::infinity() : Limits::infinity();
  } else {
    return kMax ? Limits::lowest() : Limits::max();
  }
}

template <typename Better>
void run_extreme(const KernelArgs& args) {
  visit_dtype(AllTypes{}, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    T* slots = out.mutable_data<T>();
    std::fill_n(slots, out.numel, worst<T, Better>());
    fold<T>(args, slots, [](T& acc, T x, int64_t) { acc = Extreme<Better>{}(acc, x); });
  });
}

template <typename T>
struct ArgmaxSlot {
  T value;
  int64_t position;
};

}  // namespace

using ir::OpKind;

template <>
void run<OpKind::kSum>(const KernelArgs& args) {
  visit_dtype(AllTypes{}, args.inputs[0]->dtype, [&]<typename In>(TypeTag<In>) {
    visit_dtype(NumericTypes{}, args.output_types[0].dtype, [&]<typename Out>(TypeTag<Out>) {
      if constexpr (std::is_floating_point_v<In> && !std::is_floating_point_v<Out>) {
        ORDO_UNREACHABLE(": sum of floats into an integer output");
      } else {
        const device::Buffer& out = make_output(args);
        std::vector<SumSlot<Out>> slots = sum_slots<In, SumSlot<Out>>(args, out.numel);
        Out* dst = out.mutable_data<Out>();
        for (int64_t i = 0; i < out.numel; ++i) dst[i] = static_cast<Out>(slots[i]);
      }
    });
  });
}

template <>
void run<OpKind::kMean>(const KernelArgs& args) {
  visit_dtype(FloatingTypes{}, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    std::vector<double> sums = sum_slots<T, double>(args, out.numel);
    const int64_t count = reduced_count(args.inputs[0]->shape, args.attrs.ints);
    T* dst = out.mutable_data<T>();
    for (int64_t i = 0; i < out.numel; ++i) {
      dst[i] = count == 0 ? std::numeric_limits<T>::quiet_NaN()
                          : static_cast<T>(sums[i] / static_cast<double>(count));
    }
  });
}

template <>
void run<OpKind::kMax>(const KernelArgs& args) {
  run_extreme<std::greater<>>(args);
}

template <>
void run<OpKind::kMin>(const KernelArgs& args) {
  run_extreme<std::less<>>(args);
}

template <>
void run<OpKind::kArgmax>(const KernelArgs& args) {
  visit_dtype(AllTypes{}, args.inputs[0]->dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    std::vector<ArgmaxSlot<T>> slots(static_cast<size_t>(out.numel),
                                     ArgmaxSlot<T>{worst<T, std::greater<>>(), 0});
    // Strictly greater keeps the first maximum; the first NaN beats every
    // number and nothing beats it (numpy's argmax).
    fold<T>(args, slots.data(), [](ArgmaxSlot<T>& best, T x, int64_t position) {
      if (!is_nan(best.value) && (is_nan(x) || x > best.value)) best = {x, position};
    });
    int64_t* dst = out.mutable_data<int64_t>();
    for (int64_t i = 0; i < out.numel; ++i) dst[i] = slots[i].position;
  });
}

}  // namespace ordo::kernels
