// Builders of movement ops: reshape, permute, slice, concat, broadcast,
// indexing and one_hot.
#include <algorithm>
#include <ranges>

#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "lazy/shape_inference.h"
#include "lazy/trace.h"

namespace ordo {
namespace {

using ir::OpKind;

void check_index_dtype(std::string_view what, const Tensor& index) {
  ORDO_DTYPE_CHECK(is_integral(index.dtype()), what, ": indices must be int32 or int64, got ",
                   dtype_name(index.dtype()));
}

LocalDevice common_device(std::string_view what, std::initializer_list<const Tensor*> inputs) {
  return lazy::common_device(what, {inputs.begin(), inputs.size()});
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("reshape", {&x});
  Shape out = shape;
  auto inferred = out.end();
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (*it == -1) {
      ORDO_ARG_CHECK(inferred == out.end(), "reshape: more than one -1 in ", shape_to_string(shape));
      inferred = it;
      continue;
    }
    ORDO_ARG_CHECK(*it >= 0, "reshape: invalid dimension ", *it, " in ", shape_to_string(shape));
  }
  if (inferred != out.end()) {
    // The other dimensions must divide the count; a product past int64 does not.
    int64_t known = 1;
    bool overflow = false;
    for (auto it = out.begin(); it != out.end(); ++it) {
      if (it != inferred) overflow = overflow || __builtin_mul_overflow(known, *it, &known);
    }
    ORDO_ARG_CHECK(!overflow && known != 0 && x.numel() % known == 0, "reshape: cannot infer -1 in ",
                   shape_to_string(shape), " for ", x.numel(), " elements");
    *inferred = x.numel() / known;
  }
  const int64_t count = checked_shape_size("reshape", out, x.dtype()).numel;
  ORDO_ARG_CHECK(count == x.numel(), "reshape: shape ", shape_to_string(shape), " holds ", count,
                 " elements, the tensor ", shape_to_string(x.shape()), " has ", x.numel());
  return lazy::trace1(OpKind::kReshape, {&x}, {x.dtype(), std::move(out)});
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("permute", {&x});
  ORDO_ARG_CHECK(static_cast<int64_t>(dims.size()) == x.dim(), "permute: ", dims.size(),
                 " dims given for a tensor of rank ", x.dim());
  Shape perm;  // from the small-block allocator, as the attrs it is copied to
  perm.reserve(dims.size());
  for (int64_t d : dims) perm.push_back(lazy::normalize_axis("permute", d, x.dim()));
  // Compared in place (ranks are small): no copy to sort on every trace.
  ORDO_ARG_CHECK(std::ranges::is_permutation(perm, std::views::iota(int64_t{0}, x.dim())), "permute: ",
                 shape_to_string(dims), " is not a permutation");
  Shape out;
  for (int64_t d : perm) out.push_back(x.shape()[d]);
  return lazy::trace1(OpKind::kPermute, {&x}, {x.dtype(), std::move(out)}, ir::encode<OpKind::kPermute>({perm}));
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("transpose", {&x});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.dim(); ++i) perm.push_back(i);
  std::swap(perm[lazy::normalize_axis("transpose", dim0, x.dim())],
            perm[lazy::normalize_axis("transpose", dim1, x.dim())]);
  return permute(x, perm);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("slice", {&x});
  ORDO_ARG_CHECK(step >= 1, "slice: step must be positive, got ", step);
  const int64_t a = lazy::normalize_axis("slice", axis, x.dim());
  const int64_t size = x.shape()[a];
  auto clamp = [size](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
  const int64_t first = clamp(start);
  const int64_t last = clamp(stop);
  Shape out = x.shape();
  out[a] = last > first ? (last - first - 1) / step + 1 : 0;  // no overflow for huge steps
  return lazy::trace1(OpKind::kSlice, {&x}, {x.dtype(), std::move(out)},
                      ir::encode<OpKind::kSlice>({a, first, step}));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_ARG_CHECK(!xs.empty(), "concat: no tensors given");
  std::vector<const Tensor*> inputs;
  for (const Tensor& x : xs) inputs.push_back(&x);
  lazy::common_device("concat", inputs);
  const int64_t a = lazy::normalize_axis("concat", axis, xs[0].dim());
  DType type = xs[0].dtype();
  Shape out = xs[0].shape();
  out[a] = 0;
  bool overflow = false;
  for (const Tensor& x : xs) {
    Shape expected = x.shape();
    ORDO_ARG_CHECK(x.dim() == xs[0].dim(), "concat: tensors of rank ", xs[0].dim(), " and ", x.dim());
    expected[a] = xs[0].shape()[a];
    ORDO_ARG_CHECK(expected == xs[0].shape(), "concat: shapes ", shape_to_string(xs[0].shape()),
                   " and ", shape_to_string(x.shape()), " differ outside axis ", a);
    overflow = overflow || __builtin_add_overflow(out[a], x.shape()[a], &out[a]);
    type = promote_types(type, x.dtype());
  }
  if (overflow) {
    std::vector<int64_t> sizes;
    for (const Tensor& x : xs) sizes.push_back(x.shape()[a]);
    throw_error<InvalidArgument>("concat: dimension ", a, " of the result would be the sum of the inputs' sizes ",
                                 shape_to_string(sizes), ", more than int64 can hold (", INT64_MAX, ")");
  }
  std::vector<Tensor> cast_inputs;
  for (const Tensor& x : xs) cast_inputs.push_back(cast(x, type));
  inputs.clear();
  for (const Tensor& x : cast_inputs) inputs.push_back(&x);
  ir::ValueTypes outputs{{type, std::move(out)}};
  return lazy::trace(OpKind::kConcat, inputs, std::move(outputs), ir::encode<OpKind::kConcat>({a})).front();
}

Tensor broadcast_to(const Tensor& x, const Shape& shape, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("broadcast_to", {&x});
  checked_shape_size("broadcast_to", shape, x.dtype());
  ORDO_ARG_CHECK(x.dim() <= static_cast<int64_t>(shape.size()) &&
                     lazy::broadcast_shapes("broadcast_to", x.shape(), shape) == shape,
                 "broadcast_to: cannot broadcast ", shape_to_string(x.shape()), " to ",
                 shape_to_string(shape));
  return lazy::trace1(OpKind::kBroadcastTo, {&x}, {x.dtype(), shape});
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("index_select", {&x, &index});
  check_index_dtype("index_select", index);
  ORDO_ARG_CHECK(index.dim() == 1, "index_select: the index must be 1-D, got shape ",
                 shape_to_string(index.shape()));
  const int64_t a = lazy::normalize_axis("index_select", axis, x.dim());
  Shape out = x.shape();
  out[a] = index.shape()[0];
  return lazy::trace1(OpKind::kIndexSelect, {&x, &index}, {x.dtype(), std::move(out)},
                      ir::encode<OpKind::kIndexSelect>({a}));
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("gather", {&x, &index});
  check_index_dtype("gather", index);
  ORDO_ARG_CHECK(index.dim() == x.dim(), "gather: the index has rank ", index.dim(),
                 ", the input ", x.dim());
  const int64_t a = lazy::normalize_axis("gather", axis, x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) {
    ORDO_ARG_CHECK(d == a || index.shape()[d] <= x.shape()[d], "gather: index shape ",
                   shape_to_string(index.shape()), " exceeds input shape ",
                   shape_to_string(x.shape()), " in dimension ", d);
  }
  return lazy::trace1(OpKind::kGather, {&x, &index}, {x.dtype(), index.shape()}, ir::encode<OpKind::kGather>({a}));
}

Tensor scatter_add(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("scatter_add", {&self, &index, &src});
  check_index_dtype("scatter_add", index);
  ORDO_DTYPE_CHECK(src.dtype() == self.dtype(), "scatter_add: src is ", dtype_name(src.dtype()), ", self ",
                   dtype_name(self.dtype()), "; they must be of one dtype");
  ORDO_ARG_CHECK(index.shape() == src.shape(), "scatter_add: the index has shape ", shape_to_string(index.shape()),
                 " and src ", shape_to_string(src.shape()), "; they must be equal");
  ORDO_ARG_CHECK(index.dim() == self.dim(), "scatter_add: the index has rank ", index.dim(), ", self ",
                 self.dim());
  const int64_t a = lazy::normalize_axis("scatter_add", axis, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) {
    ORDO_ARG_CHECK(d == a || index.shape()[d] <= self.shape()[d], "scatter_add: index shape ",
                   shape_to_string(index.shape()), " exceeds self's shape ", shape_to_string(self.shape()),
                   " in dimension ", d);
  }
  return lazy::trace1(OpKind::kScatterAdd, {&self, &index, &src}, {self.dtype(), self.shape()},
                      ir::encode<OpKind::kScatterAdd>({a}));
}

Tensor index_add(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("index_add", {&self, &index, &src});
  check_index_dtype("index_add", index);
  ORDO_ARG_CHECK(index.dim() == 1, "index_add: the index must be 1-D, got shape ", shape_to_string(index.shape()));
  const int64_t a = lazy::normalize_axis("index_add", axis, self.dim());
  Shape expected = self.shape();
  expected[a] = index.shape()[0];
  ORDO_ARG_CHECK(src.shape() == expected, "index_add: src has shape ", shape_to_string(src.shape()),
                 ", expected ", shape_to_string(expected));
  // index_add is scatter_add with the index repeated across the other dims.
  Shape along(static_cast<size_t>(self.dim()), 1);
  along[a] = index.shape()[0];
  return scatter_add(self, a, broadcast_to(reshape(index, along), expected), src);
}

Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype, Caller caller) {
  const ScopedUserLocation here(caller);
  common_device("one_hot", {&indices});
  check_index_dtype("one_hot", indices);
  ORDO_ARG_CHECK(depth >= 0, "one_hot: depth must not be negative, got ", depth);
  Shape out = indices.shape();
  out.push_back(depth);
  return lazy::trace1(OpKind::kOneHot, {&indices}, {dtype, std::move(out)});
}

}  // namespace ordo
