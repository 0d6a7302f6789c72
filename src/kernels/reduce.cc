// Reductions over ReduceAttrs::axes (sorted, unique; keepdim is already in the
// output shape), vectorized and split across free cores, in an order fixed
// by the shape alone (so bitwise the same on every run, device and thread
// count):
//
// The shape is collapsed into groups: size-1 dims dropped, neighbouring
// dims that are both reduced or both kept merged. Then
// - an innermost reduced group is a contiguous row per output slot. A row
//   is cut into chunks of kChunk elements, each reduced by the lanes of
//   reduce_lanes.h; the chunks' results fold into the slot in chunk order,
//   and the rows of one slot (when reduced groups lie further out) in
//   memory order;
// - an innermost kept group is a run of contiguous slots: each input row
//   folds into them element by element, rows in memory order.
// Blocks (device::run_blocks) never change that order: they cover whole
// slots (ranges of the outermost kept group, or column ranges when a
// reduced group lies outside the kept one) or, for a row longer than
// kChunksPerBlock chunks, ranges of its chunks whose results are kept and
// folded in chunk order afterwards.
//
// Sums of floats add each chunk in lanes (float32 lanes for float32, as
// torch and numpy do; double for float64), the chunks in double, and round
// once at the end; integer sums wrap in uint64 (like numpy, never UB). Max
// and min propagate NaN and keep the first NaN, and of +0 and -0 the first
// one (an in-order fold's result); argmax is the first position of the
// maximum, or of the first NaN (numpy's).
#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "core/check.h"
#include "device/free_cores.h"
#include "kernels/kernels_internal.h"
#include "kernels/reduce_lanes.h"

namespace ordo::kernels {
namespace {

constexpr int64_t kChunk = 4096;          // elements of a row reduced by the lanes at once
constexpr int64_t kChunksPerBlock = 16;   // chunks of one long row per block
constexpr int64_t kBlockElements = 1 << 16;  // input elements per block, at least
constexpr int64_t kColumnBlock = 256;     // slots per block, reduced group outside

struct Group {
  int64_t size;
  bool reduced;
  int64_t input_stride = 0;
  int64_t slot_stride = 0;      // kept groups
  int64_t position_stride = 0;  // reduced groups: Argmax's position
};

std::vector<Group> collapse(const Shape& shape, std::span<const int64_t> axes) {
  std::vector<Group> groups;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!groups.empty() && groups.back().reduced == reduced) {
      groups.back().size *= shape[d];
    } else {
      groups.push_back({shape[d], reduced});
    }
  }
  if (groups.empty()) groups.push_back({1, true});  // one element
  int64_t input = 1, slot = 1, position = 1;
  for (size_t g = groups.size(); g-- > 0;) {
    Group& group = groups[g];
    group.input_stride = input;
    (group.reduced ? group.position_stride : group.slot_stride) = group.reduced ? position : slot;
    input *= group.size;
    (group.reduced ? position : slot) *= group.size;
  }
  return groups;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Folds the row x[0, n) (at reduced position `position`) into slot.
template <typename Op, typename In>
void reduce_row(typename Op::Slot& slot, const In* x, int64_t n, int64_t position) {
  const int64_t chunks = ceil_div(n, kChunk);
  auto chunk = [&](int64_t c) {
    return Op::chunk(x + c * kChunk, std::min(kChunk, n - c * kChunk), position + c * kChunk);
  };
  if (chunks <= kChunksPerBlock) {
    for (int64_t c = 0; c < chunks; ++c) Op::combine(slot, chunk(c));
    return;
  }
  // Not a std::vector: vector<bool>'s packed bits would race between blocks.
  std::unique_ptr<typename Op::Partial[]> partials = std::make_unique<typename Op::Partial[]>(chunks);
  device::run_blocks(ceil_div(chunks, kChunksPerBlock), [&](int64_t block) {
    const int64_t end = std::min(chunks, (block + 1) * kChunksPerBlock);
    for (int64_t c = block * kChunksPerBlock; c < end; ++c) partials[c] = chunk(c);
  });
  for (int64_t c = 0; c < chunks; ++c) Op::combine(slot, partials[c]);
}

template <typename Op, typename In>
struct Reduction {
  const std::vector<Group>& groups;
  const In* x;
  typename Op::Slot* slots;

  // Every row below groups[level], in memory order.
  void walk(size_t level, int64_t input, int64_t slot, int64_t position) const {
    const Group& group = groups[level];
    if (level + 1 == groups.size()) {
      if (group.reduced) {
        reduce_row<Op>(slots[slot], x + input, group.size, position);
      } else {
        Op::columns(slots + slot, x + input, group.size, position);
      }
      return;
    }
    for (int64_t i = 0; i < group.size; ++i) {
      walk(level + 1, input + i * group.input_stride, slot + i * group.slot_stride,
           position + i * group.position_stride);
    }
  }

  void run() const {
    const Group& outer = groups.front();
    if (!outer.reduced && groups.size() > 1) {
      // Each index of the outermost kept group owns its slots.
      const int64_t per_block = std::max<int64_t>(1, kBlockElements / outer.input_stride);
      device::run_blocks(ceil_div(outer.size, per_block), [&](int64_t block) {
        const int64_t end = std::min(outer.size, (block + 1) * per_block);
        for (int64_t i = block * per_block; i < end; ++i) walk(1, i * outer.input_stride, i * outer.slot_stride, 0);
      });
    } else if (groups.size() == 2 && !groups[1].reduced) {
      // Reduced rows over kept columns: blocks of columns.
      const int64_t rows = outer.size, columns = groups[1].size;
      const int64_t width = rows * columns < kBlockElements ? columns : kColumnBlock;
      device::run_blocks(ceil_div(columns, width), [&](int64_t block) {
        const int64_t begin = block * width, n = std::min(columns, begin + width) - begin;
        for (int64_t r = 0; r < rows; ++r) Op::columns(slots + begin, x + r * columns + begin, n, r);
      });
    } else {
      walk(0, 0, 0, 0);
    }
  }
};

template <typename Op, typename In>
void reduce_into(const KernelArgs& args, std::span<const int64_t> axes, typename Op::Slot* slots) {
  const device::Buffer& in = *args.inputs[0];
  if (in.numel == 0) return;
  const std::vector<Group> groups = collapse(in.shape, axes);
  Reduction<Op, In>{groups, in.data<In>(), slots}.run();
}

// Integer sums wrap in uint64 (like numpy, and never UB); floating sums
// gather their chunks in double and round once at the end.
template <typename Out>
using SumSlot = std::conditional_t<std::is_floating_point_v<Out>, double, uint64_t>;

template <typename In, typename Acc>
struct SumOp {
  using Slot = Acc;
  using Partial = Acc;
  static Partial chunk(const In* x, int64_t n, int64_t) { return sum_chunk<In, Acc>(x, n); }
  static void combine(Slot& slot, Partial partial) { slot += partial; }
  static void columns(Slot* slots, const In* x, int64_t n, int64_t) { add_to_slots<In, Acc>(slots, x, n); }
};

template <typename In, typename Slot>
std::vector<Slot> sum_slots(const KernelArgs& args, std::span<const int64_t> axes, int64_t count) {
  std::vector<Slot> slots(static_cast<size_t>(count), Slot{0});
  reduce_into<SumOp<In, Slot>, In>(args, axes, slots.data());
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

template <typename Better, typename T>
struct ExtremeOp {
  using Slot = T;
  using Partial = T;
  // Values that compare equal are the same bits but for NaNs and zeros:
  // of those, the chunk's first.
  static Partial chunk(const T* x, int64_t n, int64_t) {
    const T value = extreme_chunk<Better, T>(x, n);
    if constexpr (std::is_floating_point_v<T>) {
      if (is_nan(value) || value == 0) return x[first_match(x, n, value)];
    }
    return value;
  }
  static void combine(Slot& slot, Partial partial) { slot = Extreme<Better>{}(slot, partial); }
  static void columns(Slot* slots, const T* x, int64_t n, int64_t) { extreme_into_slots<Better, T>(slots, x, n); }
};

template <typename Better>
void run_extreme(const KernelArgs& args, std::span<const int64_t> axes) {
  visit_dtype(AllTypes{}, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    T* slots = out.mutable_data<T>();
    std::fill_n(slots, out.numel, worst<T, Better>());
    reduce_into<ExtremeOp<Better, T>, T>(args, axes, slots);
  });
}

template <typename T>
struct ArgmaxSlot {
  T value;
  int64_t position;
};

template <typename T>
struct ArgmaxOp {
  using Slot = ArgmaxSlot<T>;
  using Partial = ArgmaxSlot<T>;
  // Strictly greater keeps the first maximum; the first NaN beats every
  // number and nothing beats it (numpy's argmax).
  static void combine(Slot& best, const Partial& candidate) {
    if (!is_nan(best.value) && (is_nan(candidate.value) || candidate.value > best.value)) best = candidate;
  }
  static Partial chunk(const T* x, int64_t n, int64_t position) {
    const int64_t first = argmax_chunk(x, n);
    return {x[first], position + first};
  }
  static void columns(Slot* slots, const T* x, int64_t n, int64_t position) {
    for (int64_t i = 0; i < n; ++i) combine(slots[i], {x[i], position});
  }
};

}  // namespace

using ir::OpKind;

template <>
void run<OpKind::kSum>(const KernelArgs& args) {
  const ir::ReduceAttrs reduce = ir::decode<OpKind::kSum>(args.attrs);
  visit_dtype(AllTypes{}, args.inputs[0]->dtype, [&]<typename In>(TypeTag<In>) {
    visit_dtype(NumericTypes{}, args.output_types[0].dtype, [&]<typename Out>(TypeTag<Out>) {
      if constexpr (std::is_floating_point_v<In> && !std::is_floating_point_v<Out>) {
        ORDO_UNREACHABLE(": sum of floats into an integer output");
      } else {
        const device::Buffer& out = make_output(args);
        std::vector<SumSlot<Out>> slots = sum_slots<In, SumSlot<Out>>(args, reduce.axes, out.numel);
        Out* dst = out.mutable_data<Out>();
        for (int64_t i = 0; i < out.numel; ++i) dst[i] = static_cast<Out>(slots[i]);
      }
    });
  });
}

template <>
void run<OpKind::kMean>(const KernelArgs& args) {
  const ir::ReduceAttrs reduce = ir::decode<OpKind::kMean>(args.attrs);
  visit_dtype(FloatingTypes{}, args.output_types[0].dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    std::vector<double> sums = sum_slots<T, double>(args, reduce.axes, out.numel);
    const int64_t count = reduced_count(args.inputs[0]->shape, reduce.axes);
    T* dst = out.mutable_data<T>();
    for (int64_t i = 0; i < out.numel; ++i) {
      dst[i] = count == 0 ? std::numeric_limits<T>::quiet_NaN()
                          : static_cast<T>(sums[i] / static_cast<double>(count));
    }
  });
}

template <>
void run<OpKind::kMax>(const KernelArgs& args) {
  run_extreme<std::greater<>>(args, ir::decode<OpKind::kMax>(args.attrs).axes);
}

template <>
void run<OpKind::kMin>(const KernelArgs& args) {
  run_extreme<std::less<>>(args, ir::decode<OpKind::kMin>(args.attrs).axes);
}

template <>
void run<OpKind::kArgmax>(const KernelArgs& args) {
  const ir::ReduceAttrs reduce = ir::decode<OpKind::kArgmax>(args.attrs);
  visit_dtype(AllTypes{}, args.inputs[0]->dtype, [&]<typename T>(TypeTag<T>) {
    const device::Buffer& out = make_output(args);
    std::vector<ArgmaxSlot<T>> slots(static_cast<size_t>(out.numel),
                                     ArgmaxSlot<T>{worst<T, std::greater<>>(), 0});
    reduce_into<ArgmaxOp<T>, T>(args, reduce.axes, slots.data());
    int64_t* dst = out.mutable_data<int64_t>();
    for (int64_t i = 0; i < out.numel; ++i) dst[i] = slots[i].position;
  });
}

}  // namespace ordo::kernels
