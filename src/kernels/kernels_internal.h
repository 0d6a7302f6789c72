// What the kernel files share: one kernel per op, dtype visiting limited to
// the types an op accepts, output allocation, and the numeric rules
// (wrapping integers, NaN-propagating max/min: core/arithmetic.h, shared
// with the collectives' reduce types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/arithmetic.h"
#include "core/check.h"
#include "ir/op_attrs.h"
#include "kernels/kernel.h"
#include "ordo/error.h"

namespace ordo::kernels {

// The kernel of one op: an explicit specialization, defined in the file of
// the op's group. A new op in op_list.def without a kernel fails to link.
template <ir::OpKind kOp>
void run(const KernelArgs& args);

#define ORDO_OP(name, str, group, attrs) \
  template <>                            \
  void run<ir::OpKind::k##name>(const KernelArgs& args);
#include "ir/op_list.def"
#undef ORDO_OP

template <typename... Ts>
struct TypeList {};
using AllTypes = TypeList<bool, int32_t, int64_t, float, double>;
using NumericTypes = TypeList<int32_t, int64_t, float, double>;
using IntegerTypes = TypeList<int32_t, int64_t>;
using FloatingTypes = TypeList<float, double>;
// Every dtype, the 16-bit floats as their bits: for ops that only move
// elements. Arithmetic never sees the 16-bit floats (lazy::trace widens
// them to float32).
using StoredTypes = TypeList<bool, int32_t, int64_t, float, double, BFloat16, Float16>;

template <typename T>
using TypeTag = std::type_identity<T>;

// Calls f(TypeTag<T>{}) for the T of dtype. Unlike ORDO_DISPATCH_DTYPE only
// the listed types are instantiated, so a body need only compile for the
// types its op accepts; any other dtype is a builder bug.
template <typename... Ts, typename F>
void visit_dtype(TypeList<Ts...>, DType dtype, F&& f) {
  bool matched = ((dtype == dtype_of<Ts>() ? (f(TypeTag<Ts>{}), true) : false) || ...);
  ORDO_CHECK(matched, ": kernel got unexpected dtype ", dtype_name(dtype));
}

// Allocates output i with the type the builder recorded and hands it to the
// executor right away: if the kernel throws later, the executor discards
// every output of the graph anyway.
inline const device::Buffer& make_output(const KernelArgs& args, size_t i = 0) {
  const ir::ValueType& type = args.output_types[i];
  std::shared_ptr<device::Buffer> buffer = device::allocate_buffer(type.dtype, type.shape);
  const device::Buffer& result = *buffer;
  args.outputs[i] = std::move(buffer);
  return result;
}

}  // namespace ordo::kernels
