#include "comm/in_process/data_movement.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/kernel.h"

namespace ordo::comm {
namespace {

using Calls = std::span<const CollectiveCall* const>;

std::byte* bytes_of(const device::Buffer* buffer) { return buffer->storage.get(); }

// dst[i] = dst[i] (op) src[i]. One loop per reduce type, so each vectorizes;
// the per-element order (rank 0, 1, 2, ...) is fixed, so results are the
// same bitwise whoever computes them.
template <typename T>
void combine(ReduceType reduce, T* dst, const T* src, int64_t n) {
  switch (reduce) {
    case ReduceType::kSum:
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] || src[i];
      } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;  // wraps like numpy, never UB
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<U>(dst[i]) + static_cast<U>(src[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      }
      return;
    case ReduceType::kMul:
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] && src[i];
      } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<U>(dst[i]) * static_cast<U>(src[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] *= src[i];
      }
      return;
    case ReduceType::kMin:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < dst[i] || src[i] != src[i] ? src[i] : dst[i];
      return;
    case ReduceType::kMax:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > dst[i] || src[i] != src[i] ? src[i] : dst[i];
      return;
    case ReduceType::kAnd:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] & src[i]);
      }
      return;
    case ReduceType::kOr:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] | src[i]);
      }
      return;
  }
}

template <typename T>
void apply_scale(T* dst, int64_t n, double scale) {
  if constexpr (!std::is_same_v<T, bool>) {
    if (scale == 1.0) return;
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] * scale);
  }
}

// dst = scale * (srcs[0] op srcs[1] op ...), n elements.
template <typename T>
void reduce_into(T* dst, std::span<const T* const> srcs, int64_t n, ReduceType reduce, double scale) {
  std::memcpy(dst, srcs[0], static_cast<size_t>(n) * sizeof(T));
  for (size_t q = 1; q < srcs.size(); ++q) combine(reduce, dst, srcs[q], n);
  apply_scale(dst, n, scale);
}

// The reduction runs in blocks that stay in L1 while every input is
// folded in and the block is copied to every participant's output.
constexpr int64_t kBlockBytes = 16 * 1024;
// Outputs at least this large are written with non-temporal stores: they
// do not fit in cache anyway, and streaming them skips reading every output
// line from memory before overwriting it, a third of the traffic.
constexpr int64_t kStreamingBytes = 8 << 20;

// memcpy that bypasses the cache where it can; call store_fence() after.
void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Streaming stores are weakly ordered: fence them before peers are told
// (by the finish barrier) that the outputs are written.
void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <typename T>
void all_reduce_typed(Calls calls, size_t rank, size_t tensor) {
  const size_t n = calls.size();
  const ir::CollectiveAttrs& attrs = calls[rank]->attrs;
  const int64_t numel = calls[rank]->inputs[tensor]->numel;
  const int64_t begin = numel * static_cast<int64_t>(rank) / static_cast<int64_t>(n);
  const int64_t end = numel * static_cast<int64_t>(rank + 1) / static_cast<int64_t>(n);
  constexpr int64_t kBlock = kBlockBytes / sizeof(T);
  const bool streaming = numel * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
  alignas(64) static thread_local T scratch[kBlock];
  std::vector<const T*> srcs(n);
  for (int64_t lo = begin; lo < end; lo += kBlock) {
    const int64_t count = std::min(kBlock, end - lo);
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    for (size_t q = 0; q < n; ++q) srcs[q] = calls[q]->inputs[tensor]->template data<T>() + lo;
    if (streaming) {
      reduce_into<T>(scratch, srcs, count, attrs.reduce, attrs.scale);
      for (size_t p = 0; p < n; ++p) {
        stream_copy(calls[p]->outputs[tensor]->template mutable_data<T>() + lo, scratch, bytes);
      }
      continue;
    }
    T* first = calls[0]->outputs[tensor]->template mutable_data<T>() + lo;
    reduce_into<T>(first, srcs, count, attrs.reduce, attrs.scale);
    for (size_t p = 1; p < n; ++p) {
      std::memcpy(calls[p]->outputs[tensor]->template mutable_data<T>() + lo, first, bytes);
    }
  }
  if (streaming) store_fence();
}

// Every participant reduces its own chunk of every input and writes it to
// every output.
void all_reduce(Calls calls, size_t rank) {
  for (size_t t = 0; t < calls[rank]->inputs.size(); ++t) {
    ORDO_DISPATCH_DTYPE(calls[rank]->inputs[t]->dtype, T, all_reduce_typed<T>(calls, rank, t));
  }
}

// prod(shape[begin:end]).
int64_t extent(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// Each participant fills its own output from every input, in rank order.
void all_gather(Calls calls, size_t rank) {
  const auto dim = static_cast<size_t>(calls[rank]->attrs.dim0);
  const device::Buffer* out = calls[rank]->outputs[0];
  const Shape& in_shape = calls[rank]->inputs[0]->shape;
  const int64_t outer = extent(in_shape, 0, dim);
  const size_t block = static_cast<size_t>(extent(in_shape, dim, in_shape.size())) * dtype_size(out->dtype);
  const size_t n = calls.size();
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t q = 0; q < n; ++q) {
      std::memcpy(bytes_of(out) + (o * n + q) * block, bytes_of(calls[q]->inputs[0]) + o * block, block);
    }
  }
}

template <typename T>
void reduce_scatter_typed(Calls calls, size_t rank) {
  const ir::CollectiveAttrs& attrs = calls[rank]->attrs;
  const auto dim = static_cast<size_t>(attrs.dim0);
  const Shape& shape = calls[rank]->inputs[0]->shape;
  const int64_t outer = extent(shape, 0, dim);
  const int64_t row = extent(shape, dim, shape.size());
  const int64_t chunk = row / static_cast<int64_t>(calls.size());
  T* out = calls[rank]->outputs[0]->template mutable_data<T>();
  std::vector<const T*> srcs(calls.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t q = 0; q < calls.size(); ++q) {
      srcs[q] = calls[q]->inputs[0]->template data<T>() + o * row + static_cast<int64_t>(rank) * chunk;
    }
    reduce_into<T>(out + o * chunk, srcs, chunk, attrs.reduce, attrs.scale);
  }
}

// Each participant reduces its own shard from every input.
void reduce_scatter(Calls calls, size_t rank) {
  ORDO_DISPATCH_DTYPE(calls[rank]->inputs[0]->dtype, T, reduce_scatter_typed<T>(calls, rank));
}

// Copies a block of `shape` between two row-major arrays whose strides (in
// elements) are given; the last dimension is contiguous in both.
void copy_block(const std::byte* src, const Shape& src_strides, std::byte* dst,
                const Shape& dst_strides, const Shape& shape, size_t element) {
  if (shape_numel(shape) == 0) return;
  const size_t rank = shape.size();
  if (rank == 0) {
    std::memcpy(dst, src, element);
    return;
  }
  const size_t run = static_cast<size_t>(shape.back()) * element;
  std::vector<int64_t> index(rank - 1, 0);  // over every dimension but the last
  for (;;) {
    int64_t s = 0, d = 0;
    for (size_t i = 0; i + 1 < rank; ++i) {
      s += index[i] * src_strides[i];
      d += index[i] * dst_strides[i];
    }
    std::memcpy(dst + d * static_cast<int64_t>(element), src + s * static_cast<int64_t>(element), run);
    size_t i = rank - 1;
    for (;;) {
      if (i == 0) return;
      --i;
      if (++index[i] < shape[i]) break;
      index[i] = 0;
    }
  }
}

Shape row_major_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// Rank r takes chunk r (along split) of every input and lays input q's
// chunk at position q along concat.
void all_to_all(Calls calls, size_t rank) {
  const ir::CollectiveAttrs& attrs = calls[rank]->attrs;
  const auto split = static_cast<size_t>(attrs.dim0), concat = static_cast<size_t>(attrs.dim1);
  const device::Buffer* out = calls[rank]->outputs[0];
  const Shape& in_shape = calls[rank]->inputs[0]->shape;
  Shape chunk = in_shape;
  chunk[split] /= static_cast<int64_t>(calls.size());
  const Shape in_strides = row_major_strides(in_shape);
  const Shape out_strides = row_major_strides(out->shape);
  const size_t element = dtype_size(out->dtype);
  for (size_t q = 0; q < calls.size(); ++q) {
    const std::byte* src = bytes_of(calls[q]->inputs[0]) +
                           static_cast<int64_t>(rank) * chunk[split] * in_strides[split] * static_cast<int64_t>(element);
    std::byte* dst = bytes_of(out) + static_cast<int64_t>(q) * chunk[concat] * out_strides[concat] * static_cast<int64_t>(element);
    copy_block(src, in_strides, dst, out_strides, chunk, element);
  }
}

void copy_or_zero(const device::Buffer* source, const device::Buffer* out) {
  if (source != nullptr) {
    std::memcpy(bytes_of(out), bytes_of(source), out->nbytes());
  } else {
    std::memset(bytes_of(out), 0, out->nbytes());
  }
}

// The world's participants are in ordinal order, so rank == ordinal.
void collective_permute(Calls calls, size_t rank) {
  const device::Buffer* source = nullptr;
  for (const auto& [from, to] : calls[rank]->attrs.pairs) {
    if (static_cast<size_t>(to) == rank) source = calls[from]->inputs[0];
  }
  copy_or_zero(source, calls[rank]->outputs[0]);
}

void collective_broadcast(Calls calls, size_t rank) {
  const CollectiveCall* root = nullptr;
  for (const CollectiveCall* call : calls) {
    if (call->device == calls[rank]->attrs.dim0) root = call;
  }
  for (size_t t = 0; t < calls[rank]->outputs.size(); ++t) {
    copy_or_zero(root ? root->inputs[t] : nullptr, calls[rank]->outputs[t]);
  }
}

}  // namespace

void move_data(ir::OpKind op, Calls calls, size_t rank) {
  switch (op) {
    case ir::OpKind::kAllReduce:
      return all_reduce(calls, rank);
    case ir::OpKind::kAllGather:
      return all_gather(calls, rank);
    case ir::OpKind::kReduceScatter:
      return reduce_scatter(calls, rank);
    case ir::OpKind::kAllToAll:
      return all_to_all(calls, rank);
    case ir::OpKind::kCollectivePermute:
      return collective_permute(calls, rank);
    case ir::OpKind::kCollectiveBroadcast:
      return collective_broadcast(calls, rank);
    default:
      throw_error<InternalError>("move_data: ", ir::op_name(op), " is not a collective");
  }
}

}  // namespace ordo::comm
