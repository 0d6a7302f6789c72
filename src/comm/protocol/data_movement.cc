#include "comm/protocol/data_movement.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define ORDO_X86_64 1
#endif

#include "comm/reduction.h"
#include "core/check.h"
#include "core/dtype_dispatch.h"

namespace ordo::comm {
namespace {

using Calls = std::span<const CollectiveCall* const>;

std::byte* bytes_of(const device::Buffer* buffer) { return buffer->storage.get(); }

// Rank q's elements of one input: its buffer from an element offset on.
template <typename T>
struct InputsAt {
  Calls calls;
  size_t tensor;
  int64_t offset;
  [[gnu::always_inline]] const T* operator()(size_t q) const {
    return calls[q]->inputs[tensor]->template data<T>() + offset;
  }
};

// Rank q's elements of one staged input: its copy from a byte offset on.
template <typename T>
struct StagedAt {
  std::span<const std::byte* const> staged;
  size_t offset;
  [[gnu::always_inline]] const T* operator()(size_t q) const {
    return reinterpret_cast<const T*>(staged[q] + offset);
  }
};

// The reduction runs in blocks that stay in L1 while every input is
// folded in and the block is copied to every participant's output.
constexpr size_t kBlockBytes = 16 * 1024;
// An all_reduce whose participants write at least this much in all (every
// tensor, every output) writes with non-temporal stores: that does not
// stay in cache anyway, and streaming it skips reading every output line
// from memory before overwriting it, a third of the traffic. It is the
// whole collective that counts, not each tensor: a training step's
// gradients are one coalesced all_reduce of many tensors below the bound
// (the wide MLP's 1024 x 1024 weight is 4 MiB, its 7.5 MB of gradients
// 15 MB across two devices), and streaming them too made that step 4%
// faster (24.96 -> 24.01 ms, medians of 10 interleaved runs).
constexpr size_t kStreamingBytes = 8 << 20;

using CopyFn = void (*)(void* dst, const void* src, size_t bytes);

void copy_cached(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

#if ORDO_X86_64
// memcpy that bypasses the cache; call store_fence() after. dst is
// normally cache-line aligned (shares and blocks start on lines).
void stream_sse2(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  std::memcpy(d + i, s + i, bytes - i);
}

// The same with 32-byte stores, half the instructions per line.
__attribute__((target("avx2"))) void stream_avx2(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (32 - reinterpret_cast<uintptr_t>(d) % 32) % 32);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), lo);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), hi);
  }
  std::memcpy(d + i, s + i, bytes - i);
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Streaming stores are weakly ordered: fence them before peers are told
// (by the done mark) that the outputs are written.
void store_fence() { _mm_sfence(); }
#else
void store_fence() {}
#endif

// One rank's share of one input of an all_reduce.
struct Share {
  Calls calls;
  size_t tensor;
  int64_t begin, end;  // elements
};

template <typename T, CopyFn kCopyOut>
[[gnu::always_inline]] inline void reduce_share(const Share& share) {
  alignas(64) static thread_local std::byte scratch_bytes[kBlockBytes];
  T* scratch = reinterpret_cast<T*>(scratch_bytes);
  constexpr int64_t kBlock = kBlockBytes / sizeof(T);
  const ir::CollectiveAttrs& attrs = share.calls[0]->attrs;
  for (int64_t lo = share.begin; lo < share.end; lo += kBlock) {
    const int64_t count = std::min(kBlock, share.end - lo);
    reduce_ranks(scratch, share.calls.size(), InputsAt<T>{share.calls, share.tensor, lo}, count, attrs.reduce,
                 attrs.scale);
    for (const CollectiveCall* call : share.calls) {
      kCopyOut(call->outputs[share.tensor]->template mutable_data<T>() + lo, scratch,
               static_cast<size_t>(count) * sizeof(T));
    }
  }
}

template <typename T>
void reduce_share_baseline(const Share& share, bool streaming) {
#if ORDO_X86_64
  if (streaming) return reduce_share<T, stream_sse2>(share);
#endif
  reduce_share<T, copy_cached>(share);
}

#if ORDO_X86_64
// static_cast<float>(sum * scale) on 8 floats, the product in double as
// apply_scale does.
__attribute__((target("avx2"))) __m256 scaled(__m256 sum, double scale) {
  const __m256d factor = _mm256_set1_pd(scale);
  const __m128 low = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(sum)), factor));
  const __m128 high = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(sum, 1)), factor));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(low), high, 1);
}

// A large float sum (gradients), 64 bytes at a time: added across ranks in
// registers and streamed to every output at once, so that reading the
// inputs and writing the outputs overlap. Reducing a 16 KiB block and then
// copying it out alternates the two: at 64 MiB that ran at 52-61% of
// memcpy, this at 70-97%. Bitwise the same as reduce_ranks: the same adds
// in rank order, and the same scaling.
__attribute__((target("avx2"))) void stream_float_sum(const Share& share) {
  constexpr int64_t kLine = 16;
  const size_t ranks = share.calls.size();
  const double scale = share.calls[0]->attrs.scale;
  std::vector<const float*> inputs(ranks);
  std::vector<float*> outputs(ranks);
  for (size_t q = 0; q < ranks; ++q) {
    inputs[q] = share.calls[q]->inputs[share.tensor]->data<float>();
    outputs[q] = share.calls[q]->outputs[share.tensor]->mutable_data<float>();
  }
  // Shares start on a line; only the last one may end inside a line.
  const int64_t lines_end = share.begin + (share.end - share.begin) / kLine * kLine;
  for (int64_t i = share.begin; i < lines_end; i += kLine) {
    __m256 low = _mm256_loadu_ps(inputs[0] + i);
    __m256 high = _mm256_loadu_ps(inputs[0] + i + 8);
    for (size_t q = 1; q < ranks; ++q) {
      low = _mm256_add_ps(low, _mm256_loadu_ps(inputs[q] + i));
      high = _mm256_add_ps(high, _mm256_loadu_ps(inputs[q] + i + 8));
    }
    if (scale != 1.0) {
      low = scaled(low, scale);
      high = scaled(high, scale);
    }
    for (float* out : outputs) {
      _mm256_stream_ps(out + i, low);
      _mm256_stream_ps(out + i + 8, high);
    }
  }
  if (lines_end == share.end) return;
  float tail[kLine];
  const int64_t rest = share.end - lines_end;
  reduce_ranks(tail, ranks, InputsAt<float>{share.calls, share.tensor, lines_end}, rest, ReduceType::kSum, scale);
  for (float* out : outputs) std::memcpy(out + lines_end, tail, static_cast<size_t>(rest) * sizeof(float));
}

template <typename T>
__attribute__((target("avx2"))) void reduce_share_avx2(const Share& share, bool streaming) {
  if constexpr (std::is_same_v<T, float>) {
    if (streaming && share.calls[0]->attrs.reduce == ReduceType::kSum) return stream_float_sum(share);
  }
  if (streaming) return reduce_share<T, stream_avx2>(share);
  reduce_share<T, copy_cached>(share);
}
#endif

// Rank r's share: equal parts whose boundaries fall on cache lines, so that
// no two ranks write one line of an output.
int64_t share_boundary(int64_t numel, size_t rank, size_t ranks, size_t element) {
  if (rank == ranks) return numel;
  const auto line = static_cast<int64_t>(std::max<size_t>(1, 64 / element));
  return numel * static_cast<int64_t>(rank) / static_cast<int64_t>(ranks) / line * line;
}

template <typename T>
void all_reduce_typed(Calls calls, size_t rank, size_t tensor, bool streaming) {
  const int64_t numel = calls[rank]->inputs[tensor]->numel;
  const Share share{calls, tensor, share_boundary(numel, rank, calls.size(), sizeof(T)),
                    share_boundary(numel, rank + 1, calls.size(), sizeof(T))};
#if ORDO_X86_64
  if (cpu_has_avx2()) {
    reduce_share_avx2<T>(share, streaming);
  } else {
    reduce_share_baseline<T>(share, streaming);
  }
#else
  reduce_share_baseline<T>(share, streaming);
#endif
  if (streaming) store_fence();
}

// Every participant reduces its own share of every input and writes it to
// every output.
void all_reduce(Calls calls, size_t rank) {
  const std::span<const device::Buffer* const> inputs = calls[rank]->inputs;
  size_t written = 0;
  for (const device::Buffer* input : inputs) written += input->nbytes() * calls.size();
  const bool streaming = written >= kStreamingBytes;
  for (size_t t = 0; t < inputs.size(); ++t) {
    ORDO_DISPATCH_DTYPE(inputs[t]->dtype, T, all_reduce_typed<T>(calls, rank, t, streaming));
  }
}

size_t align_to_line(size_t bytes) { return (bytes + 63) / 64 * 64; }

// prod(shape[begin:end]).
int64_t extent(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// Each participant fills its own output from every input, in rank order.
void all_gather(Calls calls, size_t rank) {
  const auto dim = static_cast<size_t>(calls[rank]->attrs.dim);
  const device::Buffer* out = calls[rank]->outputs[0];
  const Shape& in_shape = calls[rank]->inputs[0]->shape;
  const int64_t outer = extent(in_shape, 0, dim);
  const size_t block = static_cast<size_t>(extent(in_shape, dim, in_shape.size())) * dtype_size(out->dtype);
  const size_t n = calls.size();
  // An empty input may have no storage at all (a stand-in for another
  // process's member): memcpy must not see its null pointer.
  if (block == 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t q = 0; q < n; ++q) {
      std::memcpy(bytes_of(out) + (o * n + q) * block, bytes_of(calls[q]->inputs[0]) + o * block, block);
    }
  }
}

template <typename T>
void reduce_scatter_typed(Calls calls, size_t rank) {
  const ir::CollectiveAttrs& attrs = calls[rank]->attrs;
  const auto dim = static_cast<size_t>(attrs.dim);
  const Shape& shape = calls[rank]->inputs[0]->shape;
  const int64_t outer = extent(shape, 0, dim);
  const int64_t row = extent(shape, dim, shape.size());
  const int64_t chunk = row / static_cast<int64_t>(calls.size());
  T* out = calls[rank]->outputs[0]->template mutable_data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    const InputsAt<T> shard{calls, 0, o * row + static_cast<int64_t>(rank) * chunk};
    reduce_ranks<T>(out + o * chunk, calls.size(), shard, chunk, attrs.reduce, attrs.scale);
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
  const auto split = static_cast<size_t>(attrs.dim), concat = static_cast<size_t>(attrs.concat_dim);
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
  if (out->nbytes() == 0) return;  // its storage may be null
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
    if (call->device == GlobalOrdinal(calls[rank]->attrs.root)) root = call;
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
      ORDO_UNREACHABLE(": move_data: ", ir::op_name(op), " is not a collective");
  }
}

size_t staged_bytes(const CollectiveCall& call) {
  size_t bytes = 0;
  for (const device::Buffer* input : call.inputs) bytes = align_to_line(bytes) + input->nbytes();
  return bytes;
}

void stage_inputs(const CollectiveCall& call, std::byte* staged) {
  size_t at = 0;
  for (const device::Buffer* input : call.inputs) {
    at = align_to_line(at);
    if (input->nbytes() > 0) std::memcpy(staged + at, bytes_of(input), input->nbytes());
    at += input->nbytes();
  }
}

namespace {

#if ORDO_X86_64
template <typename T>
__attribute__((target("avx2"))) void reduce_staged_avx2(T* dst, const StagedAt<T>& source, int64_t n,
                                                        ReduceType reduce, double scale) {
  reduce_ranks<T>(dst, source.staged.size(), source, n, reduce, scale);
}
#endif

// reduce_ranks over staged copies, in AVX2 where the CPU has it: the
// baseline build converts a float to double and back through the stack,
// 4 elements at a time, which cost as much as the rest of the meeting.
template <typename T>
void reduce_staged(T* dst, const StagedAt<T>& source, int64_t n, ReduceType reduce, double scale) {
#if ORDO_X86_64
  if (cpu_has_avx2()) return reduce_staged_avx2<T>(dst, source, n, reduce, scale);
#endif
  reduce_ranks<T>(dst, source.staged.size(), source, n, reduce, scale);
}

}  // namespace

void all_reduce_staged(const CollectiveCall& call, std::span<const std::byte* const> staged) {
  const ir::CollectiveAttrs& attrs = call.attrs;
  // Every peer's copy is in its writer's cache: ask for all of its lines at
  // once, so that they cross over together instead of one miss at a time.
  const size_t bytes = staged_bytes(call);
  for (const std::byte* copy : staged) {
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(copy + line);
  }
  size_t at = 0;
  for (size_t t = 0; t < call.inputs.size(); ++t) {
    at = align_to_line(at);
    const device::Buffer* out = call.outputs[t];
    ORDO_DISPATCH_DTYPE(out->dtype, T,
                        reduce_staged<T>(out->mutable_data<T>(), StagedAt<T>{staged, at}, out->numel,
                                         attrs.reduce, attrs.scale));
    at += call.inputs[t]->nbytes();
  }
}

void reduce_pointers(DType dtype, std::byte* dst, std::span<const std::byte* const> inputs, int64_t numel,
                     ReduceType reduce, double scale) {
  ORDO_DISPATCH_DTYPE(dtype, T,
                      reduce_staged<T>(reinterpret_cast<T*>(dst), StagedAt<T>{inputs, 0}, numel, reduce, scale));
}

}  // namespace ordo::comm
