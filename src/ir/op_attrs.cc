#include "ir/op_attrs.h"

#include "core/check.h"
#include "ordo/error.h"

namespace ordo::ir {
namespace {

constexpr std::string_view kStructNames[] = {
#define ORDO_OP(name, str, group, attrs) #attrs,
#include "ir/op_list.def"
#undef ORDO_OP
};

void check_counts(const Attrs& attrs, size_t ints, size_t reals, std::string_view what) {
  ORDO_CHECK(attrs.ints.size() == ints && attrs.reals.size() == reals, ": ", what, " attrs hold ", attrs.ints.size(),
             " ints and ", attrs.reals.size(), " reals, not ", ints, " and ", reals);
}

std::array<int64_t, 2> pair_at(const AttrInts& ints, size_t at) { return {ints[at], ints[at + 1]}; }

// A pooling node's first six ints, then two of its own (one allocation).
AttrInts window_and(const PoolWindowAttr& w, int64_t a, int64_t b) {
  return {w.kernel[0], w.kernel[1], w.stride[0], w.stride[1], w.padding[0], w.padding[1], a, b};
}

PoolWindowAttr window_at_front(const AttrInts& ints) { return {pair_at(ints, 0), pair_at(ints, 2), pair_at(ints, 4)}; }

}  // namespace

std::string_view attrs_struct_name(OpKind op) { return kStructNames[static_cast<int>(op)]; }

void attrs_detail::wrong_struct(OpKind op, std::string_view what) {
  throw_error<InternalError>("op ", op_name(op), "'s attrs are ", attrs_struct_name(op), ", not ", what);
}

NoAttrs NoAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 0, 0, "NoAttrs");
  return {};
}

Attrs FullAttrs::encode() const { return {{value.as_int}, {value.as_real}, false}; }

FullAttrs FullAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 1, 1, "FullAttrs");
  return {{attrs.ints[0], attrs.reals[0]}};
}

Attrs ArangeAttrs::encode() const { return {{start.as_int, step.as_int}, {start.as_real, step.as_real}, false}; }

ArangeAttrs ArangeAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 2, 2, "ArangeAttrs");
  return {{attrs.ints[0], attrs.reals[0]}, {attrs.ints[1], attrs.reals[1]}};
}

Attrs CastAttrs::encode() const { return {{}, {}, float32_compute}; }

CastAttrs CastAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 0, 0, "CastAttrs");
  return {attrs.flag};
}

Attrs ReduceAttrs::encode() const { return {{axes.begin(), axes.end()}, {}, keepdim}; }

ReduceAttrs ReduceAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, attrs.ints.size(), 0, "ReduceAttrs");
  return {attrs.ints, attrs.flag};
}

Attrs MatmulAttrs::encode() const { return {{transpose_a, transpose_b}, {}, false}; }

MatmulAttrs MatmulAttrs::decode(const Attrs& attrs) {
  if (attrs.ints.empty()) return {};
  check_counts(attrs, 2, 0, "MatmulAttrs");
  return {attrs.ints[0] != 0, attrs.ints[1] != 0};
}

Attrs PermuteAttrs::encode() const { return {{permutation.begin(), permutation.end()}, {}, false}; }

PermuteAttrs PermuteAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, attrs.ints.size(), 0, "PermuteAttrs");
  return {attrs.ints};
}

Attrs SliceAttrs::encode() const { return {{axis, start, step}, {}, false}; }

SliceAttrs SliceAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 3, 0, "SliceAttrs");
  return {attrs.ints[0], attrs.ints[1], attrs.ints[2]};
}

Attrs AxisAttrs::encode() const { return {{axis}, {}, false}; }

AxisAttrs AxisAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 1, 0, "AxisAttrs");
  return {attrs.ints[0]};
}

Attrs RandomUniformAttrs::encode() const { return {{}, {low, high}, false}; }

RandomUniformAttrs RandomUniformAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 0, 2, "RandomUniformAttrs");
  return {attrs.reals[0], attrs.reals[1]};
}

Attrs MaxPoolAttrs::encode() const {
  return {window_and(window, dilation[0], dilation[1]), {}, with_indices};
}

MaxPoolAttrs MaxPoolAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 8, 0, "MaxPoolAttrs");
  return {window_at_front(attrs.ints), pair_at(attrs.ints, 6), attrs.flag};
}

Attrs AvgPoolAttrs::encode() const {
  return {window_and(window, count_include_pad ? 1 : 0, divisor_override), {}, false};
}

AvgPoolAttrs AvgPoolAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 8, 0, "AvgPoolAttrs");
  return {window_at_front(attrs.ints), attrs.ints[6] != 0, attrs.ints[7]};
}

Attrs BatchNormAttrs::encode() const { return {{}, {eps}, false}; }

BatchNormAttrs BatchNormAttrs::decode(const Attrs& attrs) {
  check_counts(attrs, 0, 1, "BatchNormAttrs");
  return {attrs.reals[0]};
}

}  // namespace ordo::ir
