// oneDNN's convolution primitives over ordo's dense NCHW tensors: each
// pass is one primitive per block size (the layouts it works in are its
// own choice, "any"), with reorders from ordo's layouts into its layouts
// and back around it. Primitives are kept per thread (a device's worker
// sees the same shapes every step), as are the buffers of the reorders and
// the primitives' scratchpads (ordo's, not the library's, so primitives
// run concurrently on several threads without sharing one).
#include "kernels/onednn/conv_onednn.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/free_cores.h"

namespace ordo::kernels::onednn {
namespace {

using dnnl::memory;

// A pass runs in at most this many blocks of samples (fixed by the batch):
// enough to spread over a few cores, and few enough that a weight
// gradient's partials cost little (ResNet-18's at batch 8 ran at 0.96-1.03x
// torch's speed in 4 blocks, 0.86-1.00x in 8).
constexpr int64_t kMaxBlocks = 4;
// Primitives a thread keeps; past this the thread's cache starts afresh.
constexpr size_t kKeptPrimitives = 64;

// Never destroyed: threads' streams and kept primitives refer to it, and
// some of them end after static destructors have run.
const dnnl::engine& cpu() {
  static const auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// oneDNN sizes its OpenMP team by omp_get_max_threads(), a setting of the
// calling thread (and picks its kernels by it): one, so that it starts no
// threads of its own and chooses the same way on every thread.
dnnl::stream& this_thread_stream() {
  thread_local dnnl::stream stream = [] {
    omp_set_num_threads(1);
    return dnnl::stream(cpu());
  }();
  return stream;
}

// Scratch memory of a thread, 64-byte aligned, kept between calls (slot:
// which buffer: a block's operands and scratchpad 0-3, shared weights 4-5).
void* scratch(int slot, size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<void, Free> data;
    size_t bytes = 0;
  };
  thread_local std::array<Buffer, 6> buffers;
  Buffer& buffer = buffers[static_cast<size_t>(slot)];
  if (buffer.bytes < bytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    buffer.data.reset(std::aligned_alloc(64, rounded));
    if (!buffer.data) throw std::bad_alloc();
    buffer.bytes = rounded;
  }
  return buffer.data.get();
}

memory::desc dense(memory::dims dims, memory::format_tag layout) {
  return memory::desc(dims, memory::data_type::f32, layout);
}

memory::desc any_layout(const memory::desc& d) { return dense(d.dims(), memory::format_tag::any); }

memory::desc weights_of(const ConvProblem& p) {
  if (p.groups == 1) return dense({p.out_channels, p.channels, p.kernel_h, p.kernel_w}, memory::format_tag::oihw);
  return dense({p.groups, p.group_out_channels(), p.group_channels(), p.kernel_h, p.kernel_w},
               memory::format_tag::goihw);
}

// One pass over blocks of a number of samples: the primitive, and where
// its layouts differ from ordo's, the reorders into them (a, b) and out
// of them (out).
struct Prepared {
  dnnl::primitive conv;
  std::array<int, 3> roles;                // oneDNN's argument of a, b, out
  std::array<memory::desc, 3> plain;       // a, b, out as ordo stores them
  std::array<memory::desc, 3> chosen;      // as the primitive takes them
  std::array<std::optional<dnnl::reorder>, 3> reorders;
  memory::desc scratchpad;
};

// A convolution's descriptors in ordo's layouts, for blocks of a number of
// samples.
struct Geometry {
  memory::desc x, w, y;
  memory::dims strides, dilations, pad_begin, pad_end;
};

Geometry geometry_of(const ConvProblem& p, int64_t samples) {
  return {dense({samples, p.channels, p.height, p.width}, memory::format_tag::nchw),
          weights_of(p),
          dense({samples, p.out_channels, p.out_h, p.out_w}, memory::format_tag::nchw),
          {p.along_h.stride, p.along_w.stride},
          {p.along_h.dilation - 1, p.along_w.dilation - 1},
          {p.along_h.pad_begin, p.along_w.pad_begin},
          {p.along_h.pad_end, p.along_w.pad_end}};
}

// A backward pass's primitive descriptor (both take the same arguments),
// hinted by the forward's.
template <typename Primitive>
typename Primitive::primitive_desc backward_of(const Geometry& g, const dnnl::primitive_attr& attr,
                                               const dnnl::convolution_forward::primitive_desc& forward) {
  const typename Primitive::desc desc(dnnl::algorithm::convolution_direct, any_layout(g.x), any_layout(g.w),
                                      any_layout(g.y), g.strides, g.dilations, g.pad_begin, g.pad_end);
  return {desc, attr, cpu(), forward};
}

// Takes the primitive of pd for operands of these roles in these layouts.
template <typename Primitive, typename PrimitiveDesc>
void take(Prepared& prepared, const PrimitiveDesc& pd, std::array<int, 3> roles,
          std::array<memory::desc, 3> plain) {
  prepared.conv = Primitive(pd);
  prepared.roles = roles;
  prepared.plain = plain;
  for (size_t i = 0; i < 3; ++i) prepared.chosen[i] = pd.query_md(dnnl::query::exec_arg_md, roles[i]);
  prepared.scratchpad = pd.scratchpad_desc();
}

// The pass's primitive for blocks of `samples` samples; none where oneDNN
// has no implementation.
std::shared_ptr<const Prepared> prepare(ConvPass pass, const ConvProblem& p, int64_t samples) {
  const Geometry g = geometry_of(p, samples);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto prepared = std::make_shared<Prepared>();
  try {
    const dnnl::convolution_forward::primitive_desc forward(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_layout(g.x), any_layout(g.w),
         any_layout(g.y), g.strides, g.dilations, g.pad_begin, g.pad_end},
        attr, cpu());
    switch (pass) {
      case ConvPass::kForward:
        take<dnnl::convolution_forward>(*prepared, forward, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                                        {g.x, g.w, g.y});
        break;
      case ConvPass::kInputGrad:
        take<dnnl::convolution_backward_data>(
            *prepared, backward_of<dnnl::convolution_backward_data>(g, attr, forward),
            {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC}, {g.y, g.w, g.x});
        break;
      case ConvPass::kWeightGrad:
        take<dnnl::convolution_backward_weights>(
            *prepared, backward_of<dnnl::convolution_backward_weights>(g, attr, forward),
            {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS}, {g.x, g.y, g.w});
        break;
    }
    for (size_t i = 0; i < 3; ++i) {
      if (prepared->plain[i] == prepared->chosen[i]) continue;
      const bool into = i < 2;
      const memory::desc& from = into ? prepared->plain[i] : prepared->chosen[i];
      const memory::desc& to = into ? prepared->chosen[i] : prepared->plain[i];
      prepared->reorders[i] = dnnl::reorder(dnnl::reorder::primitive_desc(cpu(), from, cpu(), to));
    }
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation for this problem
  }
  return prepared;
}

using Key = std::array<int64_t, 19>;

Key key_of(ConvPass pass, const ConvProblem& p, int64_t samples) {
  const ir::ConvDim& h = p.along_h;
  const ir::ConvDim& w = p.along_w;
  return {static_cast<int64_t>(pass), samples, p.channels, p.height, p.width, p.out_channels, p.kernel_h,
          p.kernel_w, p.groups, h.stride, w.stride, h.pad_begin, w.pad_begin, h.pad_end, w.pad_end, h.dilation,
          w.dilation, p.out_h, p.out_w};
}

// The calling thread's primitive for the pass over blocks of `samples`
// samples (null where oneDNN has none), made on first use. Threads make
// theirs one at a time: oneDNN's primitive cache is thread-safe, but
// inside an uninstrumented library, so ThreadSanitizer would see its
// accesses from two threads unordered; a primitive is made once per shape
// and thread, so the lock costs nothing.
std::shared_ptr<const Prepared> prepared_for(ConvPass pass, const ConvProblem& p, int64_t samples) {
  thread_local std::map<Key, std::shared_ptr<const Prepared>> kept;
  this_thread_stream();  // the thread's OpenMP setting, before a primitive is chosen
  const Key key = key_of(pass, p, samples);
  auto found = kept.find(key);
  if (found == kept.end()) {
    static std::mutex making;
    std::shared_ptr<const Prepared> made;
    {
      std::lock_guard<std::mutex> lock(making);
      made = prepare(pass, p, samples);
    }
    if (kept.size() >= kKeptPrimitives) kept.clear();
    found = kept.emplace(key, std::move(made)).first;
  }
  return found->second;
}

// Runs a prepared pass on one block, whose a, b and out are in ordo's
// layouts, or b already in the primitive's (b_chosen: the weights every
// block shares, reordered once).
void run_block(const Prepared& prepared, const float* a, const float* b, float* out, bool b_chosen) {
  dnnl::stream& stream = this_thread_stream();
  std::unordered_map<int, memory> args;
  const std::array<const float*, 2> inputs{a, b};
  for (size_t i = 0; i < 2; ++i) {
    const bool as_chosen = i == 1 && b_chosen;
    memory plain(as_chosen ? prepared.chosen[i] : prepared.plain[i], cpu(), const_cast<float*>(inputs[i]));
    if (!prepared.reorders[i] || as_chosen) {
      args.emplace(prepared.roles[i], plain);
      continue;
    }
    memory chosen(prepared.chosen[i], cpu(), scratch(static_cast<int>(i), prepared.chosen[i].get_size()));
    prepared.reorders[i]->execute(stream, plain, chosen);
    args.emplace(prepared.roles[i], chosen);
  }
  memory plain_out(prepared.plain[2], cpu(), out);
  memory chosen_out =
      prepared.reorders[2] ? memory(prepared.chosen[2], cpu(), scratch(2, prepared.chosen[2].get_size())) : plain_out;
  args.emplace(prepared.roles[2], chosen_out);
  if (prepared.scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(prepared.scratchpad, cpu(), scratch(3, prepared.scratchpad.get_size())));
  }
  prepared.conv.execute(stream, args);
  if (prepared.reorders[2]) prepared.reorders[2]->execute(stream, chosen_out, plain_out);
  stream.wait();
}

// The weights b in the layout of prepared, reordered on the calling thread
// into its scratch slot (4 or 5, beside the blocks' 0-3); b itself where
// that layout is ordo's.
const float* weights_for(const Prepared& prepared, const float* b, int slot) {
  if (!prepared.reorders[1]) return b;
  void* chosen = scratch(slot, prepared.chosen[1].get_size());
  dnnl::stream& stream = this_thread_stream();
  memory from(prepared.plain[1], cpu(), const_cast<float*>(b));
  memory to(prepared.chosen[1], cpu(), chosen);
  prepared.reorders[1]->execute(stream, from, to);
  stream.wait();
  return static_cast<const float*>(chosen);
}

}  // namespace

bool convolve(ConvPass pass, const ConvProblem& p, const float* a, const float* b, float* out) {
  const int64_t per_block = (p.batch + kMaxBlocks - 1) / kMaxBlocks;
  const int64_t blocks = (p.batch + per_block - 1) / per_block;
  const int64_t tail = p.batch - (blocks - 1) * per_block;
  const std::shared_ptr<const Prepared> full = prepared_for(pass, p, per_block);
  const std::shared_ptr<const Prepared> last = tail == per_block ? full : prepared_for(pass, p, tail);
  if (!full || !last) return false;

  const int64_t x_sample = p.channels * p.in_area(), y_sample = p.out_channels * p.out_area();
  const Prepared& whole = *full;
  const Prepared& rest = *last;
  const auto prepared_of = [&](int64_t block) -> const Prepared& { return block == blocks - 1 ? rest : whole; };
  if (pass != ConvPass::kWeightGrad) {
    // The weights, which every block reads, are reordered once (twice
    // where the last block's primitive takes another layout).
    const float* whole_weights = weights_for(whole, b, 4);
    const float* rest_weights = &rest == &whole || rest.chosen[1] == whole.chosen[1] ? whole_weights
                                                                                      : weights_for(rest, b, 5);
    const int64_t a_sample = pass == ConvPass::kForward ? x_sample : y_sample;
    const int64_t out_sample = pass == ConvPass::kForward ? y_sample : x_sample;
    device::run_blocks(blocks, [&](int64_t block) {
      const int64_t first = block * per_block;
      const float* weights = block == blocks - 1 ? rest_weights : whole_weights;
      run_block(prepared_of(block), a + first * a_sample, weights, out + first * out_sample, weights != b);
    });
    return true;
  }
  // Block 0 writes dw itself, the others partials, added in block order.
  const int64_t size = p.out_channels * p.patch();
  std::vector<float> partials(static_cast<size_t>((blocks - 1) * size));
  device::run_blocks(blocks, [&](int64_t block) {
    const int64_t first = block * per_block;
    float* target = block == 0 ? out : partials.data() + (block - 1) * size;
    run_block(prepared_of(block), a + first * x_sample, b + first * y_sample, target, false);
  });
  for (int64_t block = 1; block < blocks; ++block) {
    const float* partial = partials.data() + (block - 1) * size;
    for (int64_t i = 0; i < size; ++i) out[i] += partial[i];
  }
  return true;
}

}  // namespace ordo::kernels::onednn
