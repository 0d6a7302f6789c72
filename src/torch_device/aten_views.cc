// Views: each view op is a ViewStep (its view of a base value, and the base
// with the view's elements written back), taken as a view that shares its
// base's writes (xla_tensor_impl.h) or, for the *_copy form, as a new
// value; the *_scatter ops write through a view as a new value.
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

// The view op over a step maker (a view sharing self's writes) and its
// *_copy form (a new value).
template <auto kStep>
struct ViewOp;

template <class... Args, ViewStep (*kStep)(const at::Tensor&, Args...)>
struct ViewOp<kStep> {
  static at::Tensor view(const at::Tensor& self, Args... args) {
    return make_view(self, kStep(self, args...), "view");
  }
  static at::Tensor copy(const at::Tensor& self, Args... args) {
    return make_xla(kStep(self, args...).view_of(value_of(self, "view")));
  }
  // The in-place form (t_, unsqueeze_, ...): self becomes the view. torch
  // passes as_strided_'s self as const, the others' not.
  template <class Self>
  static Self& in_place(Self& self, Args... args) {
    xla_impl_of(self, "view").become_view(kStep(self, args...));
    return self;
  }
};

// A view of the same elements in another shape (view, squeeze, unsqueeze);
// written, the base takes them back in its own shape.
ViewStep reshaped(Shape shape) {
  return {[shape](const ordo::Tensor& base) { return ordo::reshape(base, shape); },
          [](const ordo::Tensor& base, const ordo::Tensor& view) { return ordo::reshape(view, base.shape()); }};
}

ViewStep view_step(const at::Tensor& self, c10::SymIntArrayRef size) {
  return reshaped(infer_size(ints_of(size), self.numel(), "view"));
}

ViewStep permuted(std::vector<int64_t> dims) {
  return {[dims](const ordo::Tensor& base) { return ordo::permute(base, dims); },
          [back = inverse_order(dims)](const ordo::Tensor&, const ordo::Tensor& view) {
            return ordo::permute(view, back);
          }};
}

ViewStep permute_step(const at::Tensor& self, at::IntArrayRef dims) {
  TORCH_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), "permute: ", dims.size(), " dims for a tensor of ",
              self.dim());
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_dim(d, self.dim(), "permute"));
  return permuted(std::move(wrapped));
}

ViewStep transpose_step(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  std::vector<int64_t> order(static_cast<size_t>(self.dim()));
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
  if (self.dim() > 0) {
    std::swap(order[wrap_dim(dim0, self.dim(), "transpose")], order[wrap_dim(dim1, self.dim(), "transpose")]);
  }
  return permuted(std::move(order));
}

ViewStep t_step(const at::Tensor& self) {
  TORCH_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return transpose_step(self, 0, self.dim() < 2 ? 0 : 1);
}

// An expanded view repeats elements, so no write can go through it (torch
// refuses in-place ops on such a tensor too), unless it repeats none.
ViewStep expand_step(const at::Tensor& self, c10::SymIntArrayRef size, bool) {
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
  const bool repeats = shape_numel(target) != self.numel();
  return {[target](const ordo::Tensor& base) { return ordo::broadcast_to(base, target); },
          [repeats](const ordo::Tensor& base, const ordo::Tensor& view) {
            TORCH_CHECK(!repeats, "unsupported operation: more than one element of the written-to tensor refers to a "
                        "single memory location. Please clone() the tensor before performing the operation.");
            return ordo::reshape(view, base.shape());
          }};
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

// base with the slice [start, stop) of dim (step 1) replaced by part.
ordo::Tensor spliced(const ordo::Tensor& base, const ordo::Tensor& part, int64_t dim, int64_t start,
                     int64_t stop) {
  std::vector<ordo::Tensor> pieces;
  if (start > 0) pieces.push_back(ordo::slice(base, dim, 0, start));
  pieces.push_back(cast_to(part, base.dtype()));
  if (stop < base.shape()[dim]) pieces.push_back(ordo::slice(base, dim, stop, base.shape()[dim]));
  return pieces.size() == 1 ? pieces[0] : ordo::concat(pieces, dim);
}

// base with the range r replaced by part.
ordo::Tensor slice_scattered(const ordo::Tensor& base, const ordo::Tensor& part, const Range& r) {
  if (r.step == 1) return spliced(base, part, r.dim, r.start, r.stop);
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
  return ordo::index_select(both, r.dim, index);
}

ViewStep sliced(Range r) {
  return {[r](const ordo::Tensor& base) { return ordo::slice(base, r.dim, r.start, r.stop, r.step); },
          [r](const ordo::Tensor& base, const ordo::Tensor& view) { return slice_scattered(base, view, r); }};
}

ViewStep slice_step(const at::Tensor& self, int64_t dim, c10::optional<c10::SymInt> start,
                    c10::optional<c10::SymInt> end, c10::SymInt step) {
  return sliced(range_of(self, dim, start, end, step, "slice"));
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

ordo::Tensor select_scattered(const ordo::Tensor& base, const ordo::Tensor& part, int64_t dim, int64_t index) {
  Shape part_shape = base.shape();
  part_shape[dim] = 1;
  return spliced(base, ordo::reshape(part, part_shape), dim, index, index + 1);
}

ViewStep selected(int64_t dim, int64_t index) {
  return {[dim, index](const ordo::Tensor& base) {
            return ordo::reshape(ordo::slice(base, dim, index, index + 1), without(base.shape(), dim));
          },
          [dim, index](const ordo::Tensor& base, const ordo::Tensor& view) {
            return select_scattered(base, view, dim, index);
          }};
}

ViewStep select_step(const at::Tensor& self, int64_t dim, int64_t index) {
  TORCH_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim(), "select");
  return selected(dim, index_in(self, dim, index, "select"));
}

ViewStep squeeze_step(const at::Tensor& self) {
  Shape shape;
  for (int64_t s : self.sizes()) {
    if (s != 1) shape.push_back(s);
  }
  return reshaped(std::move(shape));
}

ViewStep squeeze_dim_step(const at::Tensor& self, int64_t dim) {
  Shape shape(self.sizes().begin(), self.sizes().end());
  if (self.dim() == 0) return reshaped(std::move(shape));
  dim = wrap_dim(dim, self.dim(), "squeeze");
  return reshaped(self.size(dim) == 1 ? without(shape, dim) : shape);
}

ViewStep unsqueeze_step(const at::Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  Shape shape(self.sizes().begin(), self.sizes().end());
  shape.insert(shape.begin() + dim, 1);
  return reshaped(std::move(shape));
}

// as_strided's elements: the offsets into self's elements (row-major, as
// every xla value is dense) of the view's elements in its own order, or
// nothing when they are one run (contiguous strides): a slice.
struct Strided {
  Shape size;
  int64_t first = 0;
  std::optional<std::vector<int64_t>> offsets;
};

Strided strided_of(const at::Tensor& self, Shape size, const Shape& stride, int64_t first, const char* op) {
  Strided s{std::move(size), first, std::nullopt};
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
              " and offset ", s.first, " are out of bounds for a tensor of ", self.numel(),
              " elements (they reach element ", last, ")");
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

ordo::Tensor strided_elements(const ordo::Tensor& x, const Strided& s) {
  const ordo::Tensor all = flat(x);
  const int64_t count = shape_numel(s.size);
  if (count == 0) return ordo::reshape(ordo::slice(all, 0, 0, 0), s.size);
  if (!s.offsets) return ordo::reshape(ordo::slice(all, 0, s.first, s.first + count), s.size);
  const ordo::Tensor index = ordo::from_vector<int64_t>(*s.offsets, {count}, all.device());
  return ordo::reshape(ordo::index_select(all, 0, index), s.size);
}

// base with part at the view's elements (where they overlap, the last of
// part's elements in its order).
ordo::Tensor strided_scattered(const ordo::Tensor& base, const ordo::Tensor& part, const Strided& s) {
  const ordo::Tensor all = flat(base);
  const int64_t count = shape_numel(s.size);
  if (count == 0) return base;
  if (!s.offsets) return ordo::reshape(spliced(all, flat(part), 0, s.first, s.first + count), base.shape());
  std::vector<int64_t> source(all.numel());
  for (int64_t i = 0; i < all.numel(); ++i) source[i] = i;
  for (int64_t k = 0; k < count; ++k) source[(*s.offsets)[k]] = all.numel() + k;
  const ordo::Tensor both = ordo::concat({all, cast_to(flat(part), all.dtype())}, 0);
  const ordo::Tensor index = ordo::from_vector<int64_t>(source, {all.numel()}, all.device());
  return ordo::reshape(ordo::index_select(both, 0, index), base.shape());
}

int64_t first_of(const c10::optional<c10::SymInt>& storage_offset) {
  return storage_offset.has_value() ? storage_offset->expect_int() : 0;
}

// A view of the elements a Strided layout names.
ViewStep strided(Strided layout) {
  auto s = std::make_shared<const Strided>(std::move(layout));
  return {[s](const ordo::Tensor& base) { return strided_elements(base, *s); },
          [s](const ordo::Tensor& base, const ordo::Tensor& view) { return strided_scattered(base, view, *s); }};
}

// DDP's buckets are as_strided views of one flat tensor.
ViewStep as_strided_step(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                         c10::optional<c10::SymInt> storage_offset) {
  return strided(strided_of(self, ints_of(size), ints_of(stride), first_of(storage_offset), "as_strided"));
}

// unfold: the windows of `size` elements, `step` apart, along dim, as a
// last dim.
ViewStep unfold_step(const at::Tensor& self, int64_t dim, int64_t size, int64_t step) {
  dim = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim(), "unfold");
  const int64_t length = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(size <= length, "maximum size for tensor at dimension ", dim, " is ", length, " but size is ", size);
  TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
  Shape sizes(self.sizes().begin(), self.sizes().end()), strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  const int64_t along = self.dim() == 0 ? 1 : strides[dim];
  if (self.dim() > 0) {
    sizes[dim] = (length - size) / step + 1;
    strides[dim] = along * step;
  }
  sizes.push_back(size);
  strides.push_back(along);
  return strided(strided_of(self, std::move(sizes), strides, 0, "unfold"));
}

// The functional forms of writing through a view, as torch's
// decompositions and users call them.
at::Tensor as_strided_scatter(const at::Tensor& self, const at::Tensor& src, c10::SymIntArrayRef size,
                              c10::SymIntArrayRef stride, c10::optional<c10::SymInt> storage_offset) {
  const Strided s = strided_of(self, ints_of(size), ints_of(stride), first_of(storage_offset), "as_strided_scatter");
  TORCH_CHECK(src.sizes() == c10::IntArrayRef(s.size), "as_strided_scatter: src has shape ", src.sizes(),
              ", the view ", c10::IntArrayRef(s.size));
  return make_xla(strided_scattered(value_of(self, "as_strided_scatter"), value_of(src, "as_strided_scatter"), s));
}

at::Tensor slice_scatter(const at::Tensor& self, const at::Tensor& src, int64_t dim,
                         c10::optional<c10::SymInt> start, c10::optional<c10::SymInt> end, c10::SymInt step) {
  const Range r = range_of(self, dim, start, end, step, "slice_scatter");
  return make_xla(slice_scattered(value_of(self, "slice_scatter"), value_of(src, "slice_scatter"), r));
}

at::Tensor select_scatter(const at::Tensor& self, const at::Tensor& src, int64_t dim, int64_t index) {
  dim = wrap_dim(dim, self.dim(), "select_scatter");
  index = index_in(self, dim, index, "select_scatter");
  return make_xla(select_scattered(value_of(self, "select_scatter"), value_of(src, "select_scatter"), dim, index));
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
// input's shape, as one scatter (torch's composite kernels make zeros, a
// view of them, and a copy_ through it).
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
// list back to the device, so they are lowered, as a view (or, for the
// *_copy form, a new value) of each part.
template <auto kSteps>
struct PartsOp;

template <class... Args, std::vector<ViewStep> (*kSteps)(const at::Tensor&, Args...)>
struct PartsOp<kSteps> {
  static std::vector<at::Tensor> views(const at::Tensor& self, Args... args) {
    std::vector<at::Tensor> parts;
    for (const ViewStep& step : kSteps(self, args...)) parts.push_back(make_view(self, step, "split"));
    return parts;
  }
  static std::vector<at::Tensor> copies(const at::Tensor& self, Args... args) {
    std::vector<at::Tensor> parts;
    const ordo::Tensor& value = value_of(self, "split");
    for (const ViewStep& step : kSteps(self, args...)) parts.push_back(make_xla(step.view_of(value)));
    return parts;
  }
};

std::vector<ViewStep> split_with_sizes_steps(const at::Tensor& self, at::IntArrayRef sizes, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "split");
  int64_t total = 0;
  for (int64_t size : sizes) {
    TORCH_CHECK(size >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got ",
                sizes);
    total += size;
  }
  TORCH_CHECK(total == self.size(dim), "split_with_sizes expects split_sizes to sum exactly to ", self.size(dim),
              " (input tensor's size at dimension ", dim, "), but got split_sizes=", sizes);
  std::vector<ViewStep> steps;
  int64_t start = 0;
  for (int64_t size : sizes) {
    steps.push_back(sliced({dim, start, start + size, 1}));
    start += size;
  }
  return steps;
}

std::vector<ViewStep> split_steps(const at::Tensor& self, int64_t split_size, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "split");
  const int64_t length = self.size(dim);
  TORCH_CHECK(split_size > 0 || length == 0, "split expects split_size be non-negative, but got split_size=",
              split_size);
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += split_size) sizes.push_back(std::min(split_size, length - start));
  if (sizes.empty()) sizes.push_back(0);
  return split_with_sizes_steps(self, sizes, dim);
}

std::vector<ViewStep> unbind_steps(const at::Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), "unbind");
  std::vector<ViewStep> steps;
  for (int64_t i = 0; i < self.size(dim); ++i) steps.push_back(selected(dim, i));
  return steps;
}

// torch.stack: each tensor with a new dim of 1 at dim, concatenated there
// (clip_grad_norm_ stacks the gradients' norms at every step): one cat,
// where torch's composite kernel would make a view of each tensor first.
at::Tensor stack(at::TensorList tensors, int64_t dim) {
  TORCH_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    parts.push_back(ViewOp<unsqueeze_step>::copy(tensors[i], dim));
  }
  return cat(parts, dim);
}

// The rows of weight that indices name, in indices' shape (torch.embedding):
// one gather, where torch's composite kernel would index a view.
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
  m.impl("view", TORCH_FN(ViewOp<view_step>::view));
  m.impl("view_copy", TORCH_FN(ViewOp<view_step>::copy));
  m.impl("_unsafe_view", TORCH_FN(ViewOp<view_step>::copy));
  m.impl("permute", TORCH_FN(ViewOp<permute_step>::view));
  m.impl("permute_copy", TORCH_FN(ViewOp<permute_step>::copy));
  m.impl("transpose.int", TORCH_FN(ViewOp<transpose_step>::view));
  m.impl("transpose_copy.int", TORCH_FN(ViewOp<transpose_step>::copy));
  m.impl("transpose_", TORCH_FN(ViewOp<transpose_step>::in_place<at::Tensor>));
  m.impl("t", TORCH_FN(ViewOp<t_step>::view));
  m.impl("t_copy", TORCH_FN(ViewOp<t_step>::copy));
  m.impl("t_", TORCH_FN(ViewOp<t_step>::in_place<at::Tensor>));
  m.impl("expand", TORCH_FN(ViewOp<expand_step>::view));
  m.impl("expand_copy", TORCH_FN(ViewOp<expand_step>::copy));
  m.impl("slice.Tensor", TORCH_FN(ViewOp<slice_step>::view));
  m.impl("slice_copy.Tensor", TORCH_FN(ViewOp<slice_step>::copy));
  m.impl("select.int", TORCH_FN(ViewOp<select_step>::view));
  m.impl("select_copy.int", TORCH_FN(ViewOp<select_step>::copy));
  m.impl("squeeze", TORCH_FN(ViewOp<squeeze_step>::view));
  m.impl("squeeze_copy", TORCH_FN(ViewOp<squeeze_step>::copy));
  m.impl("squeeze_", TORCH_FN(ViewOp<squeeze_step>::in_place<at::Tensor>));
  m.impl("squeeze.dim", TORCH_FN(ViewOp<squeeze_dim_step>::view));
  m.impl("squeeze_copy.dim", TORCH_FN(ViewOp<squeeze_dim_step>::copy));
  m.impl("squeeze_.dim", TORCH_FN(ViewOp<squeeze_dim_step>::in_place<at::Tensor>));
  m.impl("unsqueeze", TORCH_FN(ViewOp<unsqueeze_step>::view));
  m.impl("unsqueeze_copy", TORCH_FN(ViewOp<unsqueeze_step>::copy));
  m.impl("unsqueeze_", TORCH_FN(ViewOp<unsqueeze_step>::in_place<at::Tensor>));
  m.impl("as_strided", TORCH_FN(ViewOp<as_strided_step>::view));
  m.impl("as_strided_copy", TORCH_FN(ViewOp<as_strided_step>::copy));
  m.impl("as_strided_", TORCH_FN(ViewOp<as_strided_step>::in_place<const at::Tensor>));
  m.impl("unfold", TORCH_FN(ViewOp<unfold_step>::view));
  m.impl("unfold_copy", TORCH_FN(ViewOp<unfold_step>::copy));
  m.impl("split.Tensor", TORCH_FN(PartsOp<split_steps>::views));
  m.impl("split_copy.Tensor", TORCH_FN(PartsOp<split_steps>::copies));
  m.impl("split_with_sizes", TORCH_FN(PartsOp<split_with_sizes_steps>::views));
  m.impl("split_with_sizes_copy", TORCH_FN(PartsOp<split_with_sizes_steps>::copies));
  m.impl("unbind.int", TORCH_FN(PartsOp<unbind_steps>::views));
  m.impl("unbind_copy.int", TORCH_FN(PartsOp<unbind_steps>::copies));
  m.impl("slice_scatter", TORCH_FN(slice_scatter));
  m.impl("select_scatter", TORCH_FN(select_scatter));
  m.impl("as_strided_scatter", TORCH_FN(as_strided_scatter));
  m.impl("slice_backward", TORCH_FN(slice_backward));
  m.impl("select_backward", TORCH_FN(select_backward));
  m.impl("diagonal_backward", TORCH_FN(diagonal_backward));
  m.impl("cat", TORCH_FN(cat));
  m.impl("stack", TORCH_FN(stack));
  m.impl("embedding", TORCH_FN(embedding));
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("gather", TORCH_FN(gather));
  m.impl("scatter_add", TORCH_FN(scatter_add));
}

}  // namespace ordo::torch_device
