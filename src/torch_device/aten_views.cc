// Views, as functionalization hands them down: each *_copy op is a new
// value (ordo's movement ops), and writing through a view is a *_scatter
// that rebuilds the base.
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/fallback.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

Shape infer_size(Shape sizes, int64_t numel, const char* op) {
  int64_t known = 1;
  int infer = -1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == -1) {
      TORCH_CHECK(infer < 0, op, ": only one dimension can be inferred");
      infer = static_cast<int>(d);
    } else {
      TORCH_CHECK(sizes[d] >= 0, op, ": invalid shape dimension ", sizes[d]);
      known *= sizes[d];
    }
  }
  if (infer >= 0) {
    TORCH_CHECK(known != 0 && numel % known == 0, op, ": shape '", c10::IntArrayRef(sizes),
                "' is invalid for input of size ", numel);
    sizes[infer] = numel / known;
  }
  TORCH_CHECK(infer >= 0 || known == numel, op, ": shape '", c10::IntArrayRef(sizes),
              "' is invalid for input of size ", numel);
  return sizes;
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  const ordo::Tensor& x = value_of(self, "view");
  return make_xla(ordo::reshape(x, infer_size(ints_of(size), x.numel(), "view")));
}

at::Tensor permute(const at::Tensor& self, at::IntArrayRef dims) {
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_dim(d, self.dim(), "permute"));
  return make_xla(ordo::permute(value_of(self, "permute"), wrapped));
}

at::Tensor transpose(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  if (self.dim() < 2) return make_xla(value_of(self, "transpose"));
  return make_xla(ordo::transpose(value_of(self, "transpose"), wrap_dim(dim0, self.dim(), "transpose"),
                                  wrap_dim(dim1, self.dim(), "transpose")));
}

at::Tensor t(const at::Tensor& self) {
  TORCH_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return transpose(self, 0, 1);
}

at::Tensor expand(const at::Tensor& self, c10::SymIntArrayRef size, bool) {
  Shape target = ints_of(size);
  const int64_t lead = static_cast<int64_t>(target.size()) - self.dim();
  TORCH_CHECK(lead >= 0, "expand: the number of sizes provided (", target.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  for (int64_t d = 0; d < static_cast<int64_t>(target.size()); ++d) {
    if (target[d] == -1) {
      TORCH_CHECK(d >= lead, "expand: -1 is not allowed in a leading, non-existing dimension");
      target[d] = self.size(d - lead);
    }
  }
  return make_xla(ordo::broadcast_to(value_of(self, "expand"), target));
}

struct Range {
  int64_t dim, start, stop, step;
};

// torch's slice bounds: None is the whole axis, negatives count from the
// end, everything clamps into [0, size].
Range range_of(const at::Tensor& self, int64_t dim, c10::optional<c10::SymInt> start,
               c10::optional<c10::SymInt> end, c10::SymInt step, const char* op) {
  Range r{wrap_dim(dim, self.dim(), op), 0, 0, step.expect_int()};
  TORCH_CHECK(r.step > 0, op, ": slice step must be positive");
  const int64_t size = self.size(r.dim);
  auto clamp = [size](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  r.start = start.has_value() ? clamp(start->expect_int()) : 0;
  r.stop = end.has_value() ? clamp(end->expect_int()) : size;
  r.stop = std::max(r.stop, r.start);
  return r;
}

at::Tensor slice(const at::Tensor& self, int64_t dim, c10::optional<c10::SymInt> start,
                 c10::optional<c10::SymInt> end, c10::SymInt step) {
  Range r = range_of(self, dim, start, end, step, "slice");
  return make_xla(ordo::slice(value_of(self, "slice"), r.dim, r.start, r.stop, r.step));
}

int64_t index_in(const at::Tensor& self, int64_t dim, int64_t index, const char* op) {
  const int64_t size = self.size(dim);
  TORCH_CHECK_INDEX(index >= -size && index < size, op, "(): index ", index, " out of range for tensor of size ",
                    self.sizes(), " at dimension ", dim);
  return index < 0 ? index + size : index;
}

Shape without(const Shape& shape, int64_t dim) {
  Shape out = shape;
  out.erase(out.begin() + dim);
  return out;
}

at::Tensor select(const at::Tensor& self, int64_t dim, int64_t index) {
  TORCH_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim(), "select");
  index = index_in(self, dim, index, "select");
  const ordo::Tensor& x = value_of(self, "select");
  return make_xla(ordo::reshape(ordo::slice(x, dim, index, index + 1), without(x.shape(), dim)));
}

at::Tensor squeeze(const at::Tensor& self) {
  Shape shape;
  for (int64_t s : self.sizes()) {
    if (s != 1) shape.push_back(s);
  }
  return make_xla(ordo::reshape(value_of(self, "squeeze"), shape));
}

at::Tensor squeeze_dim(const at::Tensor& self, int64_t dim) {
  const ordo::Tensor& x = value_of(self, "squeeze");
  if (self.dim() == 0) return make_xla(x);
  dim = wrap_dim(dim, self.dim(), "squeeze");
  return make_xla(self.size(dim) == 1 ? ordo::reshape(x, without(x.shape(), dim)) : x);
}

at::Tensor unsqueeze(const at::Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  const ordo::Tensor& x = value_of(self, "unsqueeze");
  Shape shape = x.shape();
  shape.insert(shape.begin() + dim, 1);
  return make_xla(ordo::reshape(x, shape));
}

// base with the slice [start, stop) of dim (step 1) replaced by part.
ordo::Tensor spliced(const ordo::Tensor& base, const ordo::Tensor& part, int64_t dim, int64_t start,
                     int64_t stop) {
  std::vector<ordo::Tensor> pieces;
  if (start > 0) pieces.push_back(ordo::slice(base, dim, 0, start));
  pieces.push_back(cast_to(part, base.dtype()));
  if (stop < base.shape()[dim]) pieces.push_back(ordo::slice(base, dim, stop, base.shape()[dim]));
  return pieces.size() == 1 ? pieces[0] : ordo::concat(pieces, dim);
}

// as_strided's elements: the offsets into self's elements (row-major, as
// every xla value is dense) of the view's elements in its own order, or
// nothing when they are one run (contiguous strides): a slice.
struct Strided {
  Shape size;
  int64_t first = 0;
  std::optional<std::vector<int64_t>> offsets;
};

Strided strided_of(const at::Tensor& self, c10::SymIntArrayRef size_, c10::SymIntArrayRef stride_,
                   c10::optional<c10::SymInt> storage_offset, const char* op) {
  Strided s{ints_of(size_), storage_offset.has_value() ? storage_offset->expect_int() : 0, std::nullopt};
  const Shape stride = ints_of(stride_);
  TORCH_CHECK(stride.size() == s.size.size(), op, ": mismatch in length of strides and shape");
  TORCH_CHECK(s.first >= 0, op, ": negative storage offset ", s.first);
  int64_t last = s.first, contiguous = 1;
  bool dense = true;
  for (size_t d = s.size.size(); d-- > 0;) {
    TORCH_CHECK(s.size[d] >= 0 && stride[d] >= 0, op, ": negative size or stride: size ", c10::IntArrayRef(s.size),
                ", stride ", c10::IntArrayRef(stride));
    if (s.size[d] == 0) return s;  // no elements
    last += (s.size[d] - 1) * stride[d];
    dense = dense && (s.size[d] == 1 || stride[d] == contiguous);
    contiguous *= s.size[d];
  }
  TORCH_CHECK(last < self.numel(), op, ": size ", c10::IntArrayRef(s.size), ", stride ", c10::IntArrayRef(stride),
              " and offset ", s.first, " reach element ", last, " of a tensor of ", self.numel(), " elements");
  if (dense) return s;
  std::vector<int64_t> offsets(shape_numel(s.size));
  std::vector<int64_t> at(s.size.size(), 0);
  for (int64_t& offset : offsets) {
    offset = s.first;
    for (size_t d = 0; d < at.size(); ++d) offset += at[d] * stride[d];
    for (size_t d = at.size(); d-- > 0 && ++at[d] == s.size[d];) at[d] = 0;
  }
  s.offsets = std::move(offsets);
  return s;
}

ordo::Tensor flat(const ordo::Tensor& x) { return ordo::reshape(x, {x.numel()}); }

// DDP's buckets are as_strided views of one flat tensor.
at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      c10::optional<c10::SymInt> storage_offset) {
  const Strided s = strided_of(self, size, stride, storage_offset, "as_strided");
  const ordo::Tensor all = flat(value_of(self, "as_strided"));
  const int64_t count = shape_numel(s.size);
  if (count == 0) return make_xla(ordo::reshape(ordo::slice(all, 0, 0, 0), s.size));
  if (!s.offsets) return make_xla(ordo::reshape(ordo::slice(all, 0, s.first, s.first + count), s.size));
  const ordo::Tensor index = ordo::from_vector<int64_t>(*s.offsets, {count}, all.device());
  return make_xla(ordo::reshape(ordo::index_select(all, 0, index), s.size));
}

// Writing through an as_strided view: self with src at the view's
// elements (where they overlap, the last of src's elements in its order).
at::Tensor as_strided_scatter(const at::Tensor& self, const at::Tensor& src, c10::SymIntArrayRef size,
                              c10::SymIntArrayRef stride, c10::optional<c10::SymInt> storage_offset) {
  const Strided s = strided_of(self, size, stride, storage_offset, "as_strided_scatter");
  TORCH_CHECK(src.sizes() == c10::IntArrayRef(s.size), "as_strided_scatter: src has shape ", src.sizes(),
              ", the view ", c10::IntArrayRef(s.size));
  const ordo::Tensor& base = value_of(self, "as_strided_scatter");
  const ordo::Tensor all = flat(base);
  const ordo::Tensor part = flat(value_of(src, "as_strided_scatter"));
  const int64_t count = shape_numel(s.size);
  if (count == 0) return make_xla(base);
  if (!s.offsets) return make_xla(ordo::reshape(spliced(all, part, 0, s.first, s.first + count), base.shape()));
  std::vector<int64_t> source(all.numel());
  for (int64_t i = 0; i < all.numel(); ++i) source[i] = i;
  for (int64_t k = 0; k < count; ++k) source[(*s.offsets)[k]] = all.numel() + k;
  const ordo::Tensor both = ordo::concat({all, cast_to(part, all.dtype())}, 0);
  const ordo::Tensor index = ordo::from_vector<int64_t>(source, {all.numel()}, all.device());
  return make_xla(ordo::reshape(ordo::index_select(both, 0, index), base.shape()));
}

at::Tensor slice_scatter(const at::Tensor& self, const at::Tensor& src, int64_t dim,
                         c10::optional<c10::SymInt> start, c10::optional<c10::SymInt> end, c10::SymInt step) {
  Range r = range_of(self, dim, start, end, step, "slice_scatter");
  const ordo::Tensor& base = value_of(self, "slice_scatter");
  const ordo::Tensor& part = value_of(src, "slice_scatter");
  if (r.step == 1) return make_xla(spliced(base, part, r.dim, r.start, r.stop));
  // A strided slice: every step-th index of the range from part, through
  // a gather of base and part side by side.
  const int64_t size = base.shape()[r.dim];
  std::vector<int64_t> source(size);
  for (int64_t i = 0; i < size; ++i) {
    const bool taken = i >= r.start && i < r.stop && (i - r.start) % r.step == 0;
    source[i] = taken ? size + (i - r.start) / r.step : i;
  }
  ordo::Tensor both = ordo::concat({base, cast_to(part, base.dtype())}, r.dim);
  ordo::Tensor index = ordo::from_vector<int64_t>(source, {size}, base.device());
  return make_xla(ordo::index_select(both, r.dim, index));
}

at::Tensor select_scatter(const at::Tensor& self, const at::Tensor& src, int64_t dim, int64_t index) {
  dim = wrap_dim(dim, self.dim(), "select_scatter");
  index = index_in(self, dim, index, "select_scatter");
  const ordo::Tensor& base = value_of(self, "select_scatter");
  Shape part_shape = base.shape();
  part_shape[dim] = 1;
  ordo::Tensor part = ordo::reshape(value_of(src, "select_scatter"), part_shape);
  return make_xla(spliced(base, part, dim, index, index + 1));
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  std::vector<ordo::Tensor> values;
  int64_t rank = -1;
  for (const at::Tensor& t : tensors) {
    // torch skips legacy empty 1-D tensors of any other shape.
    if (t.dim() == 1 && t.numel() == 0) continue;
    values.push_back(value_of(t, "cat"));
    rank = t.dim();
  }
  TORCH_CHECK(!values.empty(), "cat: expected a non-empty list of tensors");
  const at::ScalarType type = at::native::result_type(tensors);
  for (ordo::Tensor& v : values) v = cast_to(v, dtype_of(type));
  return make_xla(values.size() == 1 ? values[0] : ordo::concat(values, wrap_dim(dim, rank, "cat")));
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const ordo::Tensor& x = value_of(self, "index_select");
  ordo::Tensor i = operand(index, DType::kInt64, x.device(), "index_select");
  if (i.dim() == 0) i = ordo::reshape(i, {1});
  return make_xla(ordo::index_select(x, wrap_dim(dim, self.dim(), "index_select"), i));
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool) {
  const ordo::Tensor& x = value_of(self, "gather");
  return make_xla(ordo::gather(x, wrap_dim(dim, self.dim(), "gather"),
                               operand(index, DType::kInt64, x.device(), "gather")));
}

at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  const ordo::Tensor& x = value_of(self, "scatter_add");
  return make_xla(ordo::scatter_add(x, wrap_dim(dim, self.dim(), "scatter_add"),
                                    operand(index, DType::kInt64, x.device(), "scatter_add"),
                                    operand(src, x.dtype(), x.device(), "scatter_add")));
}

// The backward of a view: the view's gradient written into zeros of the
// input's shape. PyTorch's composite kernels write through a view of the
// zeros, which below functionalization is a new value (these kernels see
// plain xla tensors), so the write would be lost: they are lowered as the
// scatter of the view, or run on the CPU.
at::Tensor zeros_like_input(const at::Tensor& grad, c10::SymIntArrayRef input_sizes) {
  const ordo::Tensor& g = value_of(grad, "backward");
  return make_xla(ordo::zeros(ints_of(input_sizes), g.dtype(), g.device()));
}

at::Tensor slice_backward(const at::Tensor& grad, c10::SymIntArrayRef input_sizes, int64_t dim, c10::SymInt start,
                          c10::SymInt end, c10::SymInt step) {
  return slice_scatter(zeros_like_input(grad, input_sizes), grad, dim, start, end, step);
}

at::Tensor select_backward(const at::Tensor& grad, c10::SymIntArrayRef input_sizes, int64_t dim, int64_t index) {
  return select_scatter(zeros_like_input(grad, input_sizes), grad, dim, index);
}

at::Tensor diagonal_backward(const at::Tensor& grad, c10::SymIntArrayRef input_sizes, int64_t offset, int64_t dim1,
                             int64_t dim2) {
  return at::native::call_fallback_fn_symint<&fall_back_to_cpu, ATEN_OP(diagonal_backward)>::call(
      grad, input_sizes, offset, dim1, dim2);
}

// Ops that return lists of views: PyTorch's CPU fallback cannot bring a
// list back to the device, so they are lowered (as slices).
std::vector<at::Tensor> split_with_sizes(const at::Tensor& self, at::IntArrayRef sizes, int64_t dim) {
  const ordo::Tensor& x = value_of(self, "split");
  dim = wrap_dim(dim, self.dim(), "split");
  int64_t total = 0;
  for (int64_t size : sizes) {
    TORCH_CHECK(size >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got ",
                sizes);
    total += size;
  }
  TORCH_CHECK(total == self.size(dim), "split_with_sizes expects split_sizes to sum exactly to ", self.size(dim),
              " (input tensor's size at dimension ", dim, "), but got split_sizes=", sizes);
  std::vector<at::Tensor> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    parts.push_back(make_xla(ordo::slice(x, dim, start, start + size)));
    start += size;
  }
  return parts;
}

std::vector<at::Tensor> split(const at::Tensor& self, int64_t split_size, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "split");
  const int64_t length = self.size(dim);
  TORCH_CHECK(split_size > 0 || length == 0, "split expects split_size be non-negative, but got split_size=",
              split_size);
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += split_size) sizes.push_back(std::min(split_size, length - start));
  if (sizes.empty()) sizes.push_back(0);
  return split_with_sizes(self, sizes, dim);
}

// torch.stack: each tensor with a new dim of 1 at dim, concatenated there.
// Its composite kernel would take views below functionalization
// (clip_grad_norm_ stacks the gradients' norms at every step).
at::Tensor stack(at::TensorList tensors, int64_t dim) {
  TORCH_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    parts.push_back(unsqueeze(tensors[i], dim));
  }
  return cat(parts, dim);
}

std::vector<at::Tensor> unbind(const at::Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "unbind");
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < self.size(dim); ++i) parts.push_back(select(self, dim, i));
  return parts;
}

// The rows of weight that indices name, in indices' shape (torch.embedding;
// its composite kernel would take a view below functionalization).
at::Tensor embedding(const at::Tensor& weight, const at::Tensor& indices, int64_t, bool, bool) {
  TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  const ordo::Tensor& w = value_of(weight, "embedding");
  ordo::Tensor flat = ordo::reshape(operand(indices, DType::kInt64, w.device(), "embedding"), {-1});
  Shape shape = value_of(indices, "embedding").shape();
  shape.push_back(w.shape()[1]);
  return make_xla(ordo::reshape(ordo::index_select(w, 0, flat), shape));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("view_copy", TORCH_FN(view));
  m.impl("embedding", TORCH_FN(embedding));
  m.impl("split_copy.Tensor", TORCH_FN(split));
  m.impl("split_with_sizes_copy", TORCH_FN(split_with_sizes));
  m.impl("unbind_copy.int", TORCH_FN(unbind));
  m.impl("_unsafe_view", TORCH_FN(view));
  m.impl("permute_copy", TORCH_FN(permute));
  m.impl("transpose_copy.int", TORCH_FN(transpose));
  m.impl("t_copy", TORCH_FN(t));
  m.impl("expand_copy", TORCH_FN(expand));
  m.impl("slice_copy.Tensor", TORCH_FN(slice));
  m.impl("select_copy.int", TORCH_FN(select));
  m.impl("squeeze_copy", TORCH_FN(squeeze));
  m.impl("squeeze_copy.dim", TORCH_FN(squeeze_dim));
  m.impl("unsqueeze_copy", TORCH_FN(unsqueeze));
  m.impl("slice_scatter", TORCH_FN(slice_scatter));
  m.impl("as_strided_copy", TORCH_FN(as_strided));
  m.impl("as_strided_scatter", TORCH_FN(as_strided_scatter));
  m.impl("select_scatter", TORCH_FN(select_scatter));
  m.impl("cat", TORCH_FN(cat));
  m.impl("stack", TORCH_FN(stack));
  m.impl("slice_backward", TORCH_FN(slice_backward));
  m.impl("select_backward", TORCH_FN(select_backward));
  m.impl("diagonal_backward", TORCH_FN(diagonal_backward));
  // The view ops themselves reach only plain xla tensors: composite
  // kernels running below functionalization take views of what they made
  // (or of unwrapped inputs). A value never changes, so a view is the
  // *_copy's new value; without these, torch would fall back to as_strided
  // on the host.
  m.impl("view", TORCH_FN(view));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("unsqueeze", TORCH_FN(unsqueeze));
  m.impl("squeeze", TORCH_FN(squeeze));
  m.impl("squeeze.dim", TORCH_FN(squeeze_dim));
  m.impl("expand", TORCH_FN(expand));
  m.impl("permute", TORCH_FN(permute));
  m.impl("transpose.int", TORCH_FN(transpose));
  m.impl("t", TORCH_FN(t));
  m.impl("select.int", TORCH_FN(select));
  m.impl("slice.Tensor", TORCH_FN(slice));
  m.impl("split.Tensor", TORCH_FN(split));
  m.impl("split_with_sizes", TORCH_FN(split_with_sizes));
  m.impl("unbind.int", TORCH_FN(unbind));
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("gather", TORCH_FN(gather));
  m.impl("scatter_add", TORCH_FN(scatter_add));
}

}  // namespace ordo::torch_device
