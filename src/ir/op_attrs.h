// Typed op attributes. Each line of op_list.def names the struct its op's
// attributes are (the fourth column); each struct writes itself into the
// hashed ir::Attrs (encode) and reads itself back (decode), the one place
// its layout is written. Everything else reads fields by name:
//
//   // a builder (the op picks the struct: a wrong one does not compile)
//   trace1(OpKind::kSlice, {&x}, type, ir::encode<OpKind::kSlice>({axis, start, step}));
//   // a kernel, run<OpKind::kSlice>
//   const ir::SliceAttrs slice = ir::decode<OpKind::kSlice>(args.attrs);
//   // code shared by ops, the op known at run time (checked: a mismatch is
//   // an InternalError naming the op and the struct it takes)
//   const ir::ReduceAttrs reduce = ir::decode<ir::ReduceAttrs>(op, attrs);
//
// A new op names its struct on its op_list.def line; a line without one, or
// a struct without encode and decode, does not compile. Encodings are what
// graphs hash, so they stay as they were when these structs came in.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "ir/collective_attrs.h"
#include "ir/conv_attrs.h"
#include "ir/node.h"

namespace ordo::ir {

// What a struct of the op list must provide.
template <typename T>
concept AttrsStruct = requires(const T& t, const Attrs& attrs) {
  { t.encode() } -> std::same_as<Attrs>;
  { T::decode(attrs) } -> std::same_as<T>;
};

// Ops without attributes: everything they need is in their operands and
// output types.
struct NoAttrs {
  Attrs encode() const { return {}; }
  static NoAttrs decode(const Attrs& attrs);
};

// A fill value, or an arange bound, as the dtypes read it: integers take
// as_int, floats and bool as_real (so full(0.5) is a true bool).
struct ScalarAttr {
  int64_t as_int = 0;
  double as_real = 0;
  bool operator==(const ScalarAttr&) const = default;
};

struct FullAttrs {  // ints{as_int}, reals{as_real}
  ScalarAttr value;
  Attrs encode() const;
  static FullAttrs decode(const Attrs& attrs);
  bool operator==(const FullAttrs&) const = default;
};

struct ArangeAttrs {  // ints{start, step}, reals{start, step}
  ScalarAttr start, step;
  Attrs encode() const;
  static ArangeAttrs decode(const Attrs& attrs);
  bool operator==(const ArangeAttrs&) const = default;
};

struct CastAttrs {  // flag
  // Made by lazy::trace around an op computed in float32 for 16-bit floats
  // (widening its operands or rounding its results), not asked for by the
  // user: a widening of such a rounding may read the float32 value instead.
  bool float32_compute = false;
  Attrs encode() const;
  static CastAttrs decode(const Attrs& attrs);
  bool operator==(const CastAttrs&) const = default;
};

// Sum, Mean, Max, Min, Argmax. ints = axes, flag = keepdim.
struct ReduceAttrs {
  // Sorted, unique. A view: of the caller's list when encoding, of the
  // decoded Attrs (which must outlive it) when decoding.
  std::span<const int64_t> axes;
  bool keepdim = false;
  Attrs encode() const;
  static ReduceAttrs decode(const Attrs& attrs);
};

// A matmul's node has none (an untransposed product, decoded as such); a
// plan step that folds a transpose into it gets ints{transpose_a,
// transpose_b} (executor/transpose_folding.h).
struct MatmulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  Attrs encode() const;
  static MatmulAttrs decode(const Attrs& attrs);
  bool operator==(const MatmulAttrs&) const = default;
};

struct PermuteAttrs {  // ints = permutation
  std::span<const int64_t> permutation;  // a view, as ReduceAttrs::axes
  Attrs encode() const;
  static PermuteAttrs decode(const Attrs& attrs);
};

struct SliceAttrs {  // ints{axis, start, step}
  int64_t axis = 0;
  int64_t start = 0;
  int64_t step = 1;
  Attrs encode() const;
  static SliceAttrs decode(const Attrs& attrs);
  bool operator==(const SliceAttrs&) const = default;
};

// Concat, IndexSelect, Gather, ScatterAdd: the (non-negative) axis they
// work along. ints{axis}.
struct AxisAttrs {
  int64_t axis = 0;
  Attrs encode() const;
  static AxisAttrs decode(const Attrs& attrs);
  bool operator==(const AxisAttrs&) const = default;
};

struct RandomUniformAttrs {  // reals{low, high}
  double low = 0;
  double high = 1;
  Attrs encode() const;
  static RandomUniformAttrs decode(const Attrs& attrs);
  bool operator==(const RandomUniformAttrs&) const = default;
};

// A pooling window's geometry; index 0 is height, 1 width.
struct PoolWindowAttr {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  bool operator==(const PoolWindowAttr&) const = default;
};

// MaxPool2d and MaxPool2dBackward. ints{kernel, stride, padding,
// dilation}, two each; flag = with_indices.
struct MaxPoolAttrs {
  PoolWindowAttr window;
  std::array<int64_t, 2> dilation{1, 1};
  // MaxPool2d's second output: the int64 index of each maximum in its input
  // plane (torch's). Always false for the backward op.
  bool with_indices = false;
  Attrs encode() const;
  static MaxPoolAttrs decode(const Attrs& attrs);
  bool operator==(const MaxPoolAttrs&) const = default;
};

// AvgPool2d and AvgPool2dBackward. ints{kernel, stride, padding (two
// each), count_include_pad, divisor_override}.
struct AvgPoolAttrs {
  PoolWindowAttr window;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
  Attrs encode() const;
  static AvgPoolAttrs decode(const Attrs& attrs);
  bool operator==(const AvgPoolAttrs&) const = default;
};

struct BatchNormAttrs {  // BatchNormTraining and its backward: reals{eps}
  double eps = 1e-5;
  Attrs encode() const;
  static BatchNormAttrs decode(const Attrs& attrs);
  bool operator==(const BatchNormAttrs&) const = default;
};

// ---- The op list's mapping. ----

namespace attrs_detail {
template <OpKind op>
struct Of;
#define ORDO_OP(name, str, group, attrs)                                                         \
  template <>                                                                                    \
  struct Of<OpKind::k##name> {                                                                   \
    static_assert(AttrsStruct<attrs>, "op_list.def: " #name "'s attrs struct " #attrs            \
                                      " needs `Attrs encode() const` and `static decode(Attrs)`"); \
    using type = attrs;                                                                          \
  };
#include "ir/op_list.def"
#undef ORDO_OP

// Whether each op takes T, in op order.
template <typename T>
inline constexpr bool kTakes[] = {
#define ORDO_OP(name, str, group, attrs) std::is_same_v<T, attrs>,
#include "ir/op_list.def"
#undef ORDO_OP
};
static_assert(std::size(kTakes<NoAttrs>) == kNumOps, "one attrs struct per op of op_list.def");

// Throws InternalError: op's attrs are not the struct `what` names.
[[noreturn]] void wrong_struct(OpKind op, std::string_view what);
}  // namespace attrs_detail

// The struct op's attributes are.
template <OpKind op>
using OpAttrs = typename attrs_detail::Of<op>::type;

// Its name ("SliceAttrs"), for messages and tests.
std::string_view attrs_struct_name(OpKind op);

template <typename T>
bool op_takes(OpKind op) {
  return attrs_detail::kTakes<T>[static_cast<int>(op)];
}

template <OpKind op>
Attrs encode(const OpAttrs<op>& attrs) {
  return attrs.encode();
}

template <OpKind op>
OpAttrs<op> decode(const Attrs& attrs) {
  return OpAttrs<op>::decode(attrs);
}

// The same with the op known at run time: T must be the op's struct.
template <AttrsStruct T>
Attrs encode(OpKind op, const T& attrs) {
  if (!op_takes<T>(op)) attrs_detail::wrong_struct(op, "the struct encoded");
  return attrs.encode();
}

template <AttrsStruct T>
T decode(OpKind op, const Attrs& attrs) {
  if (!op_takes<T>(op)) attrs_detail::wrong_struct(op, "the struct decoded");
  return T::decode(attrs);
}

// A node's attributes (views in them live as long as the node).
template <AttrsStruct T>
T attrs_of(const Node& node) {
  return decode<T>(node.op(), node.attrs());
}

}  // namespace ordo::ir
