// Movement kernels. Reshape is a zero-copy view; Permute, Slice and
// BroadcastTo are one strided copy with different source strides (a
// permute that moves the contiguous dim, in tiles); Concat and
// IndexSelect move contiguous blocks; Gather and OneHot go element by
// element because each element has its own index.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernels_internal.h"
#include "kernels/strided_walk.h"

namespace ordo::kernels {
namespace {

// Fills the dense dst, whose element at output index (i0, i1, ...) is
// src[offset + i0 * strides[0] + i1 * strides[1] + ...].
void copy_strided(const device::Buffer& src, const device::Buffer& dst, Strides strides,
                  int64_t offset) {
  visit_dtype(StoredTypes{}, dst.dtype, [&]<typename T>(TypeTag<T>) {
    const StridedWalk<2> walk{dst.shape, {contiguous_strides(dst.shape), std::move(strides)}};
    for_each_row(walk, [&](const auto& at, int64_t n, const auto& stride) {
      const T* from = src.data<T>() + offset + at[1];
      T* to = dst.mutable_data<T>() + at[0];
      if (stride[1] == 1) {
        std::copy_n(from, n, to);
      } else if (stride[1] == 0) {
        std::fill_n(to, n, *from);
      } else {
        for (int64_t i = 0; i < n; ++i) to[i] = from[i * stride[1]];
      }
    });
  });
}

// A permute that takes the input's contiguous dim away from the output's
// last dim reads a column for each output row: a line per element, which
// made a 1024 x 1024 float transpose take 4.2 ms. Copied in tiles of
// kTile x kTile elements it takes 0.7 ms (0.35 at 1000 x 1000). Tiles of 8:
// with power-of-two rows, the input lines of a tile all fall in one set of
// L1, which holds 8 of them (tiles of 32 took 2.5 ms, 16 1.2 ms).
constexpr int64_t kTile = 8;

// dst[i * dst_row + j] = src[i + j * src_column] for i < rows, j < columns.
template <typename T>
void transpose_plane(const T* src, T* dst, int64_t rows, int64_t columns, int64_t src_column, int64_t dst_row) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    for (int64_t j0 = 0; j0 < columns; j0 += kTile) {
      const T* from = src + i0 + j0 * src_column;
      T* to = dst + i0 * dst_row + j0;
      if (i0 + kTile <= rows && j0 + kTile <= columns) {  // fixed bounds: unrolled
        for (int64_t i = 0; i < kTile; ++i) {
          for (int64_t j = 0; j < kTile; ++j) to[i * dst_row + j] = from[i + j * src_column];
        }
        continue;
      }
      const int64_t height = std::min(kTile, rows - i0), width = std::min(kTile, columns - j0);
      for (int64_t i = 0; i < height; ++i) {
        for (int64_t j = 0; j < width; ++j) to[i * dst_row + j] = from[i + j * src_column];
      }
    }
  }
}

// Returns false, copying nothing, for a permute that keeps the input's
// contiguous dim last (a plain strided copy reads whole rows there).
template <typename T>
bool copy_in_tiles(const device::Buffer& src, const device::Buffer& dst, const Strides& strides) {
  const StridedWalk<2> merged = coalesce(StridedWalk<2>{dst.shape, {contiguous_strides(dst.shape), strides}});
  const size_t rank = merged.shape.size();
  if (rank < 2 || merged.strides[1][rank - 1] == 1) return false;
  // The output dim that walks the input's contiguous dim; dst's last stride is 1.
  const auto unit = std::find(merged.strides[1].begin(), merged.strides[1].end() - 1, 1);
  if (unit == merged.strides[1].end() - 1) return false;
  const size_t rows_dim = static_cast<size_t>(unit - merged.strides[1].begin());
  StridedWalk<2> planes;  // every other dim but the last
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (d == rows_dim) continue;
    planes.shape.push_back(merged.shape[d]);
    for (size_t k = 0; k < 2; ++k) planes.strides[k].push_back(merged.strides[k][d]);
  }
  const T* from = src.data<T>();
  T* to = dst.mutable_data<T>();
  for_each_row(planes, [&](const auto& at, int64_t n, const auto& stride) {
    for (int64_t p = 0; p < n; ++p) {
      transpose_plane(from + at[1] + p * stride[1], to + at[0] + p * stride[0], merged.shape[rows_dim],
                      merged.shape[rank - 1], merged.strides[1][rank - 1], merged.strides[0][rows_dim]);
    }
  });
  return true;
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// A dense array seen as [outer, size along axis, inner], with inner in bytes:
// the blocks Concat and IndexSelect move are `inner` bytes each.
struct AxisSplit {
  int64_t outer;
  int64_t size;
  size_t inner_bytes;
};

AxisSplit split_at(const device::Buffer& buffer, int64_t axis) {
  const size_t a = static_cast<size_t>(axis);
  return {product(buffer.shape, 0, a), buffer.shape[a],
          static_cast<size_t>(product(buffer.shape, a + 1, buffer.shape.size())) *
              dtype_size(buffer.dtype)};
}

// Python-style: negative counts from the end. Kernels throw plain messages;
// the executor prefixes the op that failed.
int64_t normalize_index(int64_t index, int64_t size, int64_t axis) {
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size) {
    throw_error<ExecutionError>("index ", index, " is out of range for axis ", axis, " of size ",
                                size);
  }
  return i;
}

// Checked up front, so that a bad index throws before anything is copied.
std::vector<int64_t> normalized_indices(const device::Buffer& index, int64_t size, int64_t axis) {
  std::vector<int64_t> result(static_cast<size_t>(index.numel));
  visit_dtype(IntegerTypes{}, index.dtype, [&]<typename I>(TypeTag<I>) {
    const I* values = index.data<I>();
    for (size_t i = 0; i < result.size(); ++i) result[i] = normalize_index(values[i], size, axis);
  });
  return result;
}

}  // namespace

using ir::OpKind;

template <>
void run<OpKind::kReshape>(const KernelArgs& args) {
  // Buffers are immutable once written, so the result can share storage.
  args.outputs[0] = device::view_buffer(*args.inputs[0], args.output_types[0].shape);
}

template <>
void run<OpKind::kPermute>(const KernelArgs& args) {
  const device::Buffer& in = *args.inputs[0];
  const Strides in_strides = contiguous_strides(in.shape);
  Strides strides;
  for (int64_t axis : ir::decode<OpKind::kPermute>(args.attrs).permutation) {
    strides.push_back(in_strides[static_cast<size_t>(axis)]);
  }
  const device::Buffer& out = make_output(args);
  if (out.numel == 0) return;
  bool tiled = false;
  visit_dtype(StoredTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) { tiled = copy_in_tiles<T>(in, out, strides); });
  if (!tiled) copy_strided(in, out, std::move(strides), 0);
}

template <>
void run<OpKind::kSlice>(const KernelArgs& args) {
  const device::Buffer& in = *args.inputs[0];
  const ir::SliceAttrs slice = ir::decode<OpKind::kSlice>(args.attrs);
  const auto axis = static_cast<size_t>(slice.axis);
  const int64_t start = slice.start;
  const int64_t step = slice.step;
  Strides strides = contiguous_strides(in.shape);
  const int64_t offset = start * strides[axis];
  // A step past the end (0:n:INT64_MAX takes one element) would overflow
  // the stride; with one element along the axis the stride is never used.
  if (args.output_types[0].shape[axis] > 1) strides[axis] *= step;
  copy_strided(in, make_output(args), std::move(strides), offset);
}

template <>
void run<OpKind::kBroadcastTo>(const KernelArgs& args) {
  const device::Buffer& in = *args.inputs[0];
  const device::Buffer& out = make_output(args);
  copy_strided(in, out, broadcast_strides(in.shape, out.shape), 0);
}

template <>
void run<OpKind::kConcat>(const KernelArgs& args) {
  const int64_t axis = ir::decode<OpKind::kConcat>(args.attrs).axis;
  const device::Buffer& out = make_output(args);
  std::vector<size_t> blocks;
  for (const device::Buffer* in : args.inputs) {
    const AxisSplit split = split_at(*in, axis);
    blocks.push_back(static_cast<size_t>(split.size) * split.inner_bytes);
  }
  // Each outer slice of the output is every input's slice, in input order.
  std::byte* dst = out.storage.get();
  for (int64_t o = 0, outer = split_at(out, axis).outer; o < outer; ++o) {
    for (size_t k = 0; k < blocks.size(); ++k) {
      if (blocks[k] == 0) continue;
      std::memcpy(dst, args.inputs[k]->storage.get() + static_cast<size_t>(o) * blocks[k], blocks[k]);
      dst += blocks[k];
    }
  }
}

template <>
void run<OpKind::kIndexSelect>(const KernelArgs& args) {
  const device::Buffer& x = *args.inputs[0];
  const int64_t axis = ir::decode<OpKind::kIndexSelect>(args.attrs).axis;
  const AxisSplit split = split_at(x, axis);
  const std::vector<int64_t> index = normalized_indices(*args.inputs[1], split.size, axis);
  const device::Buffer& out = make_output(args);
  if (split.inner_bytes == 0) return;
  std::byte* dst = out.storage.get();
  for (int64_t o = 0; o < split.outer; ++o) {
    const std::byte* src = x.storage.get() + static_cast<size_t>(o * split.size) * split.inner_bytes;
    for (int64_t i : index) {
      std::memcpy(dst, src + static_cast<size_t>(i) * split.inner_bytes, split.inner_bytes);
      dst += split.inner_bytes;
    }
  }
}

template <>
void run<OpKind::kGather>(const KernelArgs& args) {
  const device::Buffer& x = *args.inputs[0];
  const device::Buffer& index = *args.inputs[1];
  const device::Buffer& out = make_output(args);
  const int64_t axis = ir::decode<OpKind::kGather>(args.attrs).axis;
  const int64_t size = x.shape[static_cast<size_t>(axis)];
  // Walk the index's shape (which the output shares). x is read at the same
  // coordinates except along axis, where the index value says where to read.
  Strides x_strides = contiguous_strides(x.shape);
  const int64_t axis_stride = x_strides[static_cast<size_t>(axis)];
  x_strides[static_cast<size_t>(axis)] = 0;
  const StridedWalk<2> walk{index.shape, {contiguous_strides(index.shape), std::move(x_strides)}};
  visit_dtype(StoredTypes{}, x.dtype, [&]<typename T>(TypeTag<T>) {
    visit_dtype(IntegerTypes{}, index.dtype, [&]<typename I>(TypeTag<I>) {
      for_each_row(walk, [&](const auto& at, int64_t n, const auto& stride) {
        const I* idx = index.data<I>() + at[0];
        T* dst = out.mutable_data<T>() + at[0];
        const T* src = x.data<T>() + at[1];
        for (int64_t i = 0; i < n; ++i) {
          const int64_t position = normalize_index(idx[i * stride[0]], size, axis);
          dst[i * stride[0]] = src[i * stride[1] + position * axis_stride];
        }
      });
    });
  });
}

// In the index's row-major order, one element at a time: the sums of
// repeated indices are added in one fixed order on every run.
template <>
void run<OpKind::kScatterAdd>(const KernelArgs& args) {
  const device::Buffer& self = *args.inputs[0];
  const device::Buffer& index = *args.inputs[1];
  const device::Buffer& src = *args.inputs[2];
  const device::Buffer& out = make_output(args);
  if (out.nbytes() != 0) std::memcpy(out.storage.get(), self.storage.get(), out.nbytes());
  const int64_t axis = ir::decode<OpKind::kScatterAdd>(args.attrs).axis;
  const int64_t size = self.shape[static_cast<size_t>(axis)];
  Strides out_strides = contiguous_strides(out.shape);
  const int64_t axis_stride = out_strides[static_cast<size_t>(axis)];
  out_strides[static_cast<size_t>(axis)] = 0;
  const StridedWalk<2> walk{index.shape, {contiguous_strides(index.shape), std::move(out_strides)}};
  visit_dtype(AllTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    visit_dtype(IntegerTypes{}, index.dtype, [&]<typename I>(TypeTag<I>) {
      for_each_row(walk, [&](const auto& at, int64_t n, const auto& stride) {
        const I* idx = index.data<I>() + at[0];
        const T* from = src.data<T>() + at[0];
        T* dst = out.mutable_data<T>() + at[1];
        for (int64_t i = 0; i < n; ++i) {
          const int64_t position = normalize_index(idx[i * stride[0]], size, axis);
          T& target = dst[i * stride[1] + position * axis_stride];
          if constexpr (std::is_same_v<T, bool>) {
            target = target || from[i * stride[0]];
          } else {
            target = static_cast<T>(target + from[i * stride[0]]);
          }
        }
      });
    });
  });
}

template <>
void run<OpKind::kOneHot>(const KernelArgs& args) {
  const device::Buffer& indices = *args.inputs[0];
  const device::Buffer& out = make_output(args);
  const int64_t depth = out.shape.back();
  visit_dtype(AllTypes{}, out.dtype, [&]<typename T>(TypeTag<T>) {
    T* dst = out.mutable_data<T>();
    std::fill_n(dst, out.numel, T{0});
    visit_dtype(IntegerTypes{}, indices.dtype, [&]<typename I>(TypeTag<I>) {
      const I* values = indices.data<I>();
      for (int64_t e = 0; e < indices.numel; ++e) {
        const int64_t c = values[e];
        if (c < 0 || c >= depth) {
          throw_error<ExecutionError>("one_hot index ", c, " is out of range for depth ", depth);
        }
        dst[e * depth + c] = T{1};
      }
    });
  });
}

}  // namespace ordo::kernels
