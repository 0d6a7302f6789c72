// Convolution kernels: Conv, ConvInputGrad and ConvWeightGrad over 1 or 2
// spatial dims (a 1-d convolution runs as a 2-d one of height 1), float32
// and float64. float32 runs in oneDNN where the build has it
// (onednn/conv_onednn.h; ran_in_onednn below says when). Otherwise each
// is a product per group on a patch matrix (im2col):
// column j of a tile's matrix holds the input window of output position j,
// row r one (channel, kernel row, kernel column) of it. Then
//   forward        y_g  = w_g [Og, patch] * cols [patch, n]
//   input grad     cols = w_g^T * g_g [Og, n], added back into dx (col2im)
//   weight grad    dw_g = sum over tiles of g_g [Og, n] * cols^T
// The products go through the matmul's BLAS or ordo's tiles (blas.h,
// tile_gemm.h) on the calling thread.
//
// Determinism: the tiles, the blocks and the weight gradient's chunks of
// tiles are fixed by the shape, every block writes its own part of the
// output (a block of the input gradient owns whole samples, so col2im's
// sums run in one order), and the weight gradient's chunks are summed in
// chunk order after the blocks. So the bits do not depend on
// ORDO_KERNEL_THREADS.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "device/free_cores.h"
#include "ir/op_attrs.h"
#include "kernels/blas.h"
#include "kernels/conv_problem.h"
#include "kernels/kernels_internal.h"
#include "kernels/onednn/conv_onednn.h"
#include "kernels/tile_gemm.h"

namespace ordo::kernels {
namespace {

// A tile's patch matrix stays within this (L2-sized), so the product reads
// it from the cache right after im2col wrote it.
constexpr int64_t kTileBytes = int64_t{512} << 10;
// The weight gradient sums at most this many partial products of tile
// chunks (the blocks it can spread over cores).
constexpr int64_t kWeightChunks = 8;

// Columns of the products: whole samples side by side when one fits a
// tile, else a few output rows of one sample. A tile never holds part of
// two samples, so a sample's rows lie in one tile or in tiles of its own.
struct Tile {
  int64_t first_sample, samples, first_row, rows;
};

class Tiling {
 public:
  template <typename T>
  static Tiling of(const ConvProblem& p) {
    Tiling t;
    const int64_t columns = std::max<int64_t>(1, kTileBytes / (p.patch() * int64_t{sizeof(T)}));
    if (p.out_area() <= columns) {
      t.samples_per_tile_ = std::max<int64_t>(1, columns / std::max<int64_t>(p.out_area(), 1));
      t.rows_per_tile_ = p.out_h;
      t.count_ = (p.batch + t.samples_per_tile_ - 1) / t.samples_per_tile_;
    } else {
      t.rows_per_tile_ = std::max<int64_t>(1, columns / p.out_w);
      t.tiles_per_sample_ = (p.out_h + t.rows_per_tile_ - 1) / t.rows_per_tile_;
      t.count_ = p.batch * t.tiles_per_sample_;
    }
    t.batch_ = p.batch;
    t.out_h_ = p.out_h;
    return t;
  }

  int64_t count() const { return count_; }
  // The tiles that together hold whole samples (what an input gradient
  // block owns): one tile of samples, or every tile of one sample.
  int64_t tiles_per_owner() const { return tiles_per_sample_; }
  Tile at(int64_t index) const {
    if (tiles_per_sample_ == 1) {
      const int64_t first = index * samples_per_tile_;
      return {first, std::min(samples_per_tile_, batch_ - first), 0, out_h_};
    }
    const int64_t first_row = (index % tiles_per_sample_) * rows_per_tile_;
    return {index / tiles_per_sample_, 1, first_row, std::min(rows_per_tile_, out_h_ - first_row)};
  }

 private:
  int64_t samples_per_tile_ = 1, rows_per_tile_ = 1, tiles_per_sample_ = 1, count_ = 0;
  int64_t batch_ = 0, out_h_ = 0;
};

// Scratch of a thread, kept between calls (slot: which of a block's buffers).
template <typename T>
T* scratch(int slot, int64_t count) {
  thread_local std::vector<T> buffers[3];
  std::vector<T>& buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// c = op(a) * op(b) on the calling thread: ordo's tiles for the forms they
// take, else the BLAS.
template <typename T>
void product(int64_t m, int64_t n, int64_t k, blas::Operand<T> a, blas::Operand<T> b, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    const tile_gemm::ProductShape shape{m, n, k, a.transposed, b.transposed};
    if (tile_gemm::takes(shape)) {
      tile_gemm::gemm(shape, a, b, c, ldc);
      return;
    }
  }
  blas::gemm(m, n, k, a, b, c, ldc);
}

// The output positions [first, end) along one dim whose input position
// (out * stride - pad_begin + offset) lies in [0, size).
struct Span {
  int64_t first, end;
};
Span inside(const ir::ConvDim& d, int64_t offset, int64_t size, int64_t out_size) {
  const int64_t shift = offset - d.pad_begin;  // input position of output 0
  const int64_t first = shift >= 0 ? 0 : (-shift + d.stride - 1) / d.stride;
  const int64_t end = size - shift <= 0 ? 0 : (size - shift - 1) / d.stride + 1;
  return {std::min(first, out_size), std::clamp(end, first, out_size)};
}

// Calls f(column, input) for each output position of a tile row (the out_w
// columns starting at `column` of a patch matrix row) and the input
// element it reads for patch row (kh, kw) of one channel plane; `outside`
// for the positions that read padding.
template <typename Inside, typename Outside>
void walk_row(const ConvProblem& p, int64_t oh, int64_t kh, int64_t kw, Inside f, Outside outside) {
  const int64_t ih = oh * p.along_h.stride - p.along_h.pad_begin + kh * p.along_h.dilation;
  if (ih < 0 || ih >= p.height) {
    outside(0, p.out_w);
    return;
  }
  const Span span = inside(p.along_w, kw * p.along_w.dilation, p.width, p.out_w);
  outside(0, span.first);
  outside(span.end, p.out_w);
  const int64_t iw0 = ih * p.width + span.first * p.along_w.stride - p.along_w.pad_begin + kw * p.along_w.dilation;
  f(span.first, span.end, iw0);
}

// The tile's patch matrix of group g: [patch, columns], columns ordered
// (sample, output row, output column).
template <typename T>
void im2col(const ConvProblem& p, const T* x, const Tile& tile, int64_t g, T* cols) {
  const int64_t columns = tile.samples * tile.rows * p.out_w;
  const int64_t stride = p.along_w.stride;
  for (int64_t s = 0; s < tile.samples; ++s) {
    const T* sample = x + ((tile.first_sample + s) * p.channels + g * p.group_channels()) * p.in_area();
    for (int64_t c = 0; c < p.group_channels(); ++c) {
      const T* plane = sample + c * p.in_area();
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          T* row = cols + ((c * p.kernel_h + kh) * p.kernel_w + kw) * columns + s * tile.rows * p.out_w;
          for (int64_t r = 0; r < tile.rows; ++r) {
            T* out = row + r * p.out_w;
            walk_row(
                p, tile.first_row + r, kh, kw,
                [&](int64_t first, int64_t end, int64_t in) {
                  if (stride == 1) {
                    std::copy(plane + in, plane + in + (end - first), out + first);
                  } else {
                    for (int64_t j = first; j < end; ++j) out[j] = plane[in + (j - first) * stride];
                  }
                },
                [&](int64_t first, int64_t end) { std::fill(out + first, out + end, T{0}); });
          }
        }
      }
    }
  }
}

// dx of group g += the tile's patch matrix put back where im2col took it.
template <typename T>
void col2im(const ConvProblem& p, const T* cols, const Tile& tile, int64_t g, T* dx) {
  const int64_t columns = tile.samples * tile.rows * p.out_w;
  const int64_t stride = p.along_w.stride;
  for (int64_t s = 0; s < tile.samples; ++s) {
    T* sample = dx + ((tile.first_sample + s) * p.channels + g * p.group_channels()) * p.in_area();
    for (int64_t c = 0; c < p.group_channels(); ++c) {
      T* plane = sample + c * p.in_area();
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          const T* row = cols + ((c * p.kernel_h + kh) * p.kernel_w + kw) * columns + s * tile.rows * p.out_w;
          for (int64_t r = 0; r < tile.rows; ++r) {
            const T* in = row + r * p.out_w;
            walk_row(
                p, tile.first_row + r, kh, kw,
                [&](int64_t first, int64_t end, int64_t at) {
                  for (int64_t j = first; j < end; ++j) plane[at + (j - first) * stride] += in[j];
                },
                [](int64_t, int64_t) {});
          }
        }
      }
    }
  }
}

// A matrix view: data and the distance between its rows.
template <typename T>
struct Rows {
  T* data;
  int64_t stride;
};

// Group g's [Og, columns] part of a [batch, out_channels, out_area] tensor
// over the tile: in place when the tile is within one sample, else copied
// into `gathered`.
template <typename T>
Rows<const T> output_rows(const ConvProblem& p, const T* y, const Tile& tile, int64_t g, T* gathered) {
  const int64_t first = (tile.first_sample * p.out_channels + g * p.group_out_channels()) * p.out_area() +
                        tile.first_row * p.out_w;
  if (tile.samples == 1) return {y + first, p.out_area()};
  const int64_t columns = tile.samples * p.out_area();
  for (int64_t o = 0; o < p.group_out_channels(); ++o) {
    for (int64_t s = 0; s < tile.samples; ++s) {
      const T* from = y + first + (s * p.out_channels + o) * p.out_area();
      std::copy(from, from + p.out_area(), gathered + o * columns + s * p.out_area());
    }
  }
  return {gathered, columns};
}

// The tile's patch matrix of group g: x itself for a pointwise kernel on
// one sample, else im2col into `buffer`.
template <typename T>
Rows<const T> patches(const ConvProblem& p, const T* x, const Tile& tile, int64_t g, T* buffer) {
  if (p.pointwise() && tile.samples == 1) {
    return {x + (tile.first_sample * p.channels + g * p.group_channels()) * p.in_area() + tile.first_row * p.out_w,
            p.in_area()};
  }
  im2col(p, x, tile, g, buffer);
  return {buffer, tile.samples * tile.rows * p.out_w};
}

int64_t columns_of(const ConvProblem& p, const Tile& tile) { return tile.samples * tile.rows * p.out_w; }

template <typename T>
void forward_tile(const ConvProblem& p, const T* x, const T* w, T* y, const Tile& tile, int64_t g) {
  const int64_t og = p.group_out_channels(), n = columns_of(p, tile);
  const Rows<const T> cols = patches(p, x, tile, g, scratch<T>(0, p.patch() * n));
  const T* w_g = w + g * og * p.patch();
  T* first = y + (tile.first_sample * p.out_channels + g * og) * p.out_area() + tile.first_row * p.out_w;
  if (tile.samples == 1) {
    product<T>(og, n, p.patch(), {w_g, p.patch(), false}, {cols.data, cols.stride, false}, first, p.out_area());
    return;
  }
  T* result = scratch<T>(1, og * n);
  product<T>(og, n, p.patch(), {w_g, p.patch(), false}, {cols.data, cols.stride, false}, result, n);
  for (int64_t s = 0; s < tile.samples; ++s) {
    for (int64_t o = 0; o < og; ++o) {
      const T* from = result + o * n + s * p.out_area();
      std::copy(from, from + p.out_area(), first + (s * p.out_channels + o) * p.out_area());
    }
  }
}

// The input gradient of the samples that tiles [first, first + count) hold.
template <typename T>
void input_grad_tiles(const ConvProblem& p, const T* gy, const T* w, T* dx, const Tiling& tiling, int64_t first,
                      int64_t count, int64_t g) {
  const int64_t og = p.group_out_channels();
  const Tile whole = tiling.at(first);
  for (int64_t s = 0; s < whole.samples; ++s) {
    T* plane = dx + ((whole.first_sample + s) * p.channels + g * p.group_channels()) * p.in_area();
    std::fill(plane, plane + p.group_channels() * p.in_area(), T{0});
  }
  for (int64_t t = first; t < first + count; ++t) {
    const Tile tile = tiling.at(t);
    const int64_t n = columns_of(p, tile);
    const Rows<const T> g_rows = output_rows(p, gy, tile, g, scratch<T>(1, og * n));
    T* cols = scratch<T>(0, p.patch() * n);
    product<T>(p.patch(), n, og, {w + g * og * p.patch(), p.patch(), true}, {g_rows.data, g_rows.stride, false},
               cols, n);
    col2im(p, cols, tile, g, dx);
  }
}

// sum over tiles [first, first + count) of g_g * cols^T into partial [Og, patch].
template <typename T>
void weight_grad_tiles(const ConvProblem& p, const T* x, const T* gy, T* partial, const Tiling& tiling,
                       int64_t first, int64_t count, int64_t g) {
  const int64_t og = p.group_out_channels(), size = og * p.patch();
  T* single = scratch<T>(2, size);
  for (int64_t t = first; t < first + count; ++t) {
    const Tile tile = tiling.at(t);
    const int64_t n = columns_of(p, tile);
    const Rows<const T> cols = patches(p, x, tile, g, scratch<T>(0, p.patch() * n));
    const Rows<const T> g_rows = output_rows(p, gy, tile, g, scratch<T>(1, og * n));
    T* target = t == first ? partial : single;
    product<T>(og, p.patch(), n, {g_rows.data, g_rows.stride, false}, {cols.data, cols.stride, true}, target,
               p.patch());
    if (t != first) {
      for (int64_t i = 0; i < size; ++i) partial[i] += single[i];
    }
  }
}

// Runs the pass in oneDNN where the build has it and it serves: float32,
// but for the gradients of a one-channel input, where a patch is a single
// plane's window and the products here are the faster (MNIST's first
// convolution: 3x oneDNN's on its input gradient, 2x on its weights').
template <typename T>
bool ran_in_onednn(onednn::ConvPass pass, const ConvProblem& p, const T* a, const T* b, T* out) {
#ifdef ORDO_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (pass != onednn::ConvPass::kForward && p.channels == 1) return false;
    const bool empty = p.batch == 0 || p.channels == 0 || p.out_channels == 0 || p.in_area() == 0 || p.out_area() == 0;
    return !empty && onednn::convolve(pass, p, a, b, out);
  }
#endif
  return false;
}

template <typename Body>
void run_spread(int64_t blocks, Body&& body) {
  if (blocks == 1) {
    body(0);
  } else if (blocks > 1) {
    device::run_blocks(blocks, body);
  }
}

struct Operands {
  const device::Buffer& a;
  const device::Buffer& b;
  const device::Buffer& out;
};

Operands operands_of(const KernelArgs& args) { return {*args.inputs[0], *args.inputs[1], make_output(args)}; }

template <typename T>
void forward(const device::Buffer& x, const device::Buffer& w, const device::Buffer& y, const ir::ConvAttrs& conv) {
  const ConvProblem p = conv_problem_of(x.shape, w.shape, y.shape, conv);
  if (y.numel == 0) return;
  if (ran_in_onednn(onednn::ConvPass::kForward, p, x.data<T>(), w.data<T>(), y.mutable_data<T>())) return;
  const Tiling tiling = Tiling::of<T>(p);
  run_spread(p.groups * tiling.count(), [&](int64_t block) {
    forward_tile(p, x.data<T>(), w.data<T>(), y.mutable_data<T>(), tiling.at(block % tiling.count()),
                 block / tiling.count());
  });
}

template <typename T>
void input_grad(const device::Buffer& gy, const device::Buffer& w, const device::Buffer& dx,
                const ir::ConvAttrs& conv) {
  const ConvProblem p = conv_problem_of(dx.shape, w.shape, gy.shape, conv);
  if (dx.numel == 0) return;
  if (ran_in_onednn(onednn::ConvPass::kInputGrad, p, gy.data<T>(), w.data<T>(), dx.mutable_data<T>())) return;
  const Tiling tiling = Tiling::of<T>(p);
  const int64_t per_owner = tiling.tiles_per_owner(), owners = tiling.count() / per_owner;
  run_spread(p.groups * owners, [&](int64_t block) {
    input_grad_tiles(p, gy.data<T>(), w.data<T>(), dx.mutable_data<T>(), tiling, (block % owners) * per_owner,
                     per_owner, block / owners);
  });
}

template <typename T>
void weight_grad(const device::Buffer& x, const device::Buffer& gy, const device::Buffer& dw,
                 const ir::ConvAttrs& conv) {
  const ConvProblem p = conv_problem_of(x.shape, dw.shape, gy.shape, conv);
  T* out = dw.mutable_data<T>();
  if (dw.numel == 0) return;
  const int64_t size = p.group_out_channels() * p.patch();
  if (gy.numel == 0) {  // an empty batch: a sum of nothing
    std::fill(out, out + dw.numel, T{0});
    return;
  }
  if (ran_in_onednn(onednn::ConvPass::kWeightGrad, p, x.data<T>(), gy.data<T>(), out)) return;
  const Tiling tiling = Tiling::of<T>(p);
  const int64_t per_chunk = (tiling.count() + kWeightChunks - 1) / kWeightChunks;
  const int64_t chunks = (tiling.count() + per_chunk - 1) / per_chunk;
  // Chunk 0 of each group writes straight into dw; the others into partials.
  std::vector<T> partials(static_cast<size_t>(p.groups * (chunks - 1) * size));
  run_spread(p.groups * chunks, [&](int64_t block) {
    const int64_t g = block / chunks, chunk = block % chunks;
    T* target = chunk == 0 ? out + g * size : partials.data() + (g * (chunks - 1) + chunk - 1) * size;
    const int64_t first = chunk * per_chunk;
    weight_grad_tiles(p, x.data<T>(), gy.data<T>(), target, tiling, first,
                      std::min(per_chunk, tiling.count() - first), g);
  });
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      const T* partial = partials.data() + (g * (chunks - 1) + chunk - 1) * size;
      for (int64_t i = 0; i < size; ++i) out[g * size + i] += partial[i];
    }
  }
}

}  // namespace

template <>
void run<ir::OpKind::kConv>(const KernelArgs& args) {
  const Operands o = operands_of(args);
  const ir::ConvAttrs conv = ir::decode<ir::OpKind::kConv>(args.attrs);
  visit_dtype(FloatingTypes{}, o.out.dtype, [&]<typename T>(TypeTag<T>) { forward<T>(o.a, o.b, o.out, conv); });
}

template <>
void run<ir::OpKind::kConvInputGrad>(const KernelArgs& args) {
  const Operands o = operands_of(args);
  const ir::ConvAttrs conv = ir::decode<ir::OpKind::kConvInputGrad>(args.attrs);
  visit_dtype(FloatingTypes{}, o.out.dtype, [&]<typename T>(TypeTag<T>) { input_grad<T>(o.a, o.b, o.out, conv); });
}

template <>
void run<ir::OpKind::kConvWeightGrad>(const KernelArgs& args) {
  const Operands o = operands_of(args);
  const ir::ConvAttrs conv = ir::decode<ir::OpKind::kConvWeightGrad>(args.attrs);
  visit_dtype(FloatingTypes{}, o.out.dtype, [&]<typename T>(TypeTag<T>) { weight_grad<T>(o.a, o.b, o.out, conv); });
}

}  // namespace ordo::kernels
