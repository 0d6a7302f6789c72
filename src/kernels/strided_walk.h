// Row-major walks over a shape that touch several arrays at once, each
// through its own element strides (0 along a dim it is broadcast on).
// Broadcasting elementwise ops, strided copies, reductions and batched
// matmul all walk this way, so the odometer lives only here.
//
//   StridedWalk<2> walk{out_shape, {contiguous_strides(out_shape),
//                                   broadcast_strides(in_shape, out_shape)}};
//   for_each_row(walk, [&](const auto& offset, int64_t n, const auto& stride) {
//     for (int64_t i = 0; i < n; ++i) out[offset[0] + i] = in[offset[1] + i * stride[1]];
//   });
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ordo/dtype.h"

namespace ordo::kernels {

using Strides = std::vector<int64_t>;

// Element strides of a dense row-major array.
inline Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
  return strides;
}

// Strides that read a dense array of shape `from` as if broadcast to `to`
// (numpy rules: dims align from the right; missing and size-1 dims repeat).
inline Strides broadcast_strides(const Shape& from, const Shape& to) {
  Strides dense = contiguous_strides(from);
  Strides strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1) strides[lead + d] = dense[d];
  }
  return strides;
}

template <size_t N>
struct StridedWalk {
  Shape shape;
  std::array<Strides, N> strides;  // per array, one per dim of shape
};

// Drops size-1 dims of shape and merges neighbours that every array steps
// through as one dim, so the innermost loop is as long as it can be. The
// order in which elements are visited does not change (reductions rely on
// that). StridesList is a std::array or std::vector of Strides, one per
// array; merged has as many entries as strides, each empty.
template <typename StridesList>
void merge_dims(const Shape& shape, const StridesList& strides, Shape& dims, StridesList& merged) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t size = shape[d];
    if (size == 1) continue;
    bool joins = !dims.empty();
    for (size_t k = 0; k < strides.size() && joins; ++k) joins = merged[k].back() == strides[k][d] * size;
    if (joins) {
      dims.back() *= size;
      for (size_t k = 0; k < strides.size(); ++k) merged[k].back() = strides[k][d];
    } else {
      dims.push_back(size);
      for (size_t k = 0; k < strides.size(); ++k) merged[k].push_back(strides[k][d]);
    }
  }
}

template <size_t N>
StridedWalk<N> coalesce(const StridedWalk<N>& walk) {
  StridedWalk<N> merged;
  merge_dims(walk.shape, walk.strides, merged.shape, merged.strides);
  return merged;
}

// Moves a row-major odometer over dims[0, inner) on by one row: index, and
// offset[k] of each array k by its strides[k] (one per dim).
template <typename StridesList, typename Offsets>
void next_row(const Shape& dims, size_t inner, const StridesList& strides, std::vector<int64_t>& index,
              Offsets& offset) {
  for (size_t d = inner; d-- > 0;) {
    for (size_t k = 0; k < offset.size(); ++k) offset[k] += strides[k][d];
    if (++index[d] < dims[d]) return;
    for (size_t k = 0; k < offset.size(); ++k) offset[k] -= strides[k][d] * dims[d];
    index[d] = 0;
  }
}

// Sets index and offset to where next_row has them `row` rows after the
// start (index all 0, offset all 0), so that a walk can begin mid-way.
template <typename StridesList, typename Offsets>
void seek_row(const Shape& dims, size_t inner, const StridesList& strides, int64_t row, std::vector<int64_t>& index,
              Offsets& offset) {
  for (auto& o : offset) o = 0;
  for (size_t d = inner; d-- > 0;) {
    index[d] = row % dims[d];
    row /= dims[d];
    for (size_t k = 0; k < offset.size(); ++k) offset[k] += index[d] * strides[k][d];
  }
}

// Calls row(offset, n, stride) for each innermost row, in row-major order:
// element i of the row is at offset[k] + i * stride[k] in array k. A 0-d
// shape is one row of one element; a shape with a 0 dim has no rows.
template <size_t N, typename RowFn>
void for_each_row(const StridedWalk<N>& walk, RowFn&& row) {
  if (shape_numel(walk.shape) == 0) return;
  const StridedWalk<N> merged = coalesce(walk);
  std::array<int64_t, N> offset{};
  std::array<int64_t, N> stride{};
  if (merged.shape.empty()) {
    row(offset, int64_t{1}, stride);
    return;
  }
  const size_t inner = merged.shape.size() - 1;
  const int64_t length = merged.shape[inner];
  for (size_t k = 0; k < N; ++k) stride[k] = merged.strides[k][inner];
  std::vector<int64_t> index(inner, 0);
  const int64_t rows = shape_numel(merged.shape) / length;
  for (int64_t r = 0; r < rows; ++r) {
    row(offset, length, stride);
    next_row(merged.shape, inner, merged.strides, index, offset);
  }
}

}  // namespace ordo::kernels
