// Advanced indexing with integer index tensors: x[i, :, j] reads
// (index.Tensor) and its gradient's accumulating write (index_put with
// accumulate, which autograd's backward of a read makes). Both become one
// gather or one add along a single flattened dim: the indexed dims are
// moved to the front and merged, and the index tensors (broadcast to one
// shape B, negatives counted from the end) merge into one linear index.
// As torch: B takes the indexed dims' place when they are adjacent, else it
// comes first. A bool mask (a result shape that depends on the data) and
// an index_put that assigns (which of two equal indices wins is torch's
// order) fall back to the CPU.
#include <algorithm>

#include <ATen/ExpandUtils.h>
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/fallback.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

using Indices = c10::List<c10::optional<at::Tensor>>;

// Where an advanced index reads or writes in x, flattened.
struct IndexLayout {
  std::vector<int64_t> order;  // x's dims, the indexed ones first: x.permute(order)
  Shape flat;                  // [product of the indexed sizes, the other sizes...]
  Shape broadcast;             // B
  int64_t position = 0;        // where B goes among the other dims
  ordo::Tensor linear;         // int64 of shape B: the row of flat each element names
};

// Integer index tensors; bool and uint8 ones are masks (torch's rule).
bool lowered(const Indices& indices) {
  for (const c10::optional<at::Tensor>& index : indices) {
    if (!index.has_value() || !index->defined()) continue;
    const at::ScalarType type = index->scalar_type();
    if (type == at::kByte || !c10::isIntegralType(type, /*includeBool=*/false)) return false;
  }
  return true;
}

IndexLayout index_layout(const at::Tensor& self, const Indices& indices, const char* op) {
  const ordo::Tensor& x = value_of(self, op);
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  IndexLayout layout;
  std::vector<int64_t> indexed;
  std::vector<at::Tensor> index_tensors;
  for (size_t d = 0; d < indices.size(); ++d) {
    const c10::optional<at::Tensor> index = indices.get(d);
    if (!index.has_value() || !index->defined()) continue;
    indexed.push_back(static_cast<int64_t>(d));
    index_tensors.push_back(*index);
  }
  TORCH_CHECK(!indexed.empty(), op, ": no index tensor");
  std::vector<int64_t> broadcast = index_tensors[0].sizes().vec();
  for (const at::Tensor& t : index_tensors) broadcast = at::infer_size(broadcast, t.sizes());
  layout.broadcast = Shape(broadcast.begin(), broadcast.end());
  const bool adjacent = indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  layout.position = adjacent ? indexed.front() : 0;

  layout.order = indexed;
  int64_t rows = 1;
  for (int64_t d : indexed) rows *= self.size(d);
  layout.flat = {rows};
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (std::find(indexed.begin(), indexed.end(), d) != indexed.end()) continue;
    layout.order.push_back(d);
    layout.flat.push_back(self.size(d));
  }
  // Row-major over the indexed dims: the last one varies fastest.
  ordo::Tensor linear;
  int64_t stride = 1;
  for (size_t k = indexed.size(); k-- > 0;) {
    const int64_t size = self.size(indexed[k]);
    ordo::Tensor i = ordo::broadcast_to(operand(index_tensors[k], DType::kInt64, x.device(), op), layout.broadcast);
    const ordo::Tensor zero = constant(0, DType::kInt64, x.device());
    i = ordo::where(ordo::lt(i, zero), ordo::add(i, constant(size, DType::kInt64, x.device())), i);
    if (stride != 1) i = ordo::mul(i, constant(stride, DType::kInt64, x.device()));
    linear = linear.defined() ? ordo::add(linear, i) : i;
    stride *= size;
  }
  layout.linear = linear;
  return layout;
}

// The permutation of [B..., others...] that puts B at layout.position
// among the others: the read's result.
std::vector<int64_t> read_order(const IndexLayout& layout) {
  const int64_t b = static_cast<int64_t>(layout.broadcast.size());
  const int64_t others = static_cast<int64_t>(layout.flat.size()) - 1;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < layout.position; ++i) order.push_back(b + i);
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  for (int64_t i = layout.position; i < others; ++i) order.push_back(b + i);
  return order;
}

// [B..., others...]
Shape gathered_shape(const IndexLayout& layout) {
  Shape shape = layout.broadcast;
  shape.insert(shape.end(), layout.flat.begin() + 1, layout.flat.end());
  return shape;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& order) {
  Shape out;
  for (int64_t d : order) out.push_back(shape[static_cast<size_t>(d)]);
  return out;
}

at::Tensor read_at(const at::Tensor& self, const Indices& indices) {
  if (!lowered(indices)) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP2(index, Tensor)>::call(self, indices);
  }
  const IndexLayout layout = index_layout(self, indices, "index");
  const ordo::Tensor flat = ordo::reshape(ordo::permute(value_of(self, "index"), layout.order), layout.flat);
  const ordo::Tensor rows = ordo::index_select(flat, 0, ordo::reshape(layout.linear, {-1}));
  return make_xla(ordo::permute(ordo::reshape(rows, gathered_shape(layout)), read_order(layout)));
}

// self with values added at the places read_at reads, as a new value:
// values broadcast to the read's shape, brought back to gathered order,
// then added row by row into the flattened self.
ordo::Tensor added_at(const at::Tensor& self, const Indices& indices, const at::Tensor& values) {
  const ordo::Tensor& x = value_of(self, "index_put");
  const IndexLayout layout = index_layout(self, indices, "index_put");
  const std::vector<int64_t> to_read = read_order(layout);
  const Shape gathered = gathered_shape(layout);
  ordo::Tensor v = ordo::broadcast_to(operand(values, x.dtype(), x.device(), "index_put"), permuted(gathered, to_read));
  v = ordo::permute(v, inverse_order(to_read));
  Shape rows_shape = {ordo::shape_numel(layout.broadcast)};
  rows_shape.insert(rows_shape.end(), layout.flat.begin() + 1, layout.flat.end());
  const ordo::Tensor flat = ordo::reshape(ordo::permute(x, layout.order), layout.flat);
  const ordo::Tensor sum =
      ordo::index_add(flat, 0, ordo::reshape(layout.linear, {-1}), ordo::reshape(v, rows_shape));
  return ordo::permute(ordo::reshape(sum, permuted(x.shape(), layout.order)), inverse_order(layout.order));
}

at::Tensor put_at(const at::Tensor& self, const Indices& indices, const at::Tensor& values, bool accumulate) {
  if (!accumulate || !lowered(indices)) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(index_put)>::call(self, indices, values,
                                                                                        accumulate);
  }
  return make_xla(added_at(self, indices, values));
}

// The functional form of index_put_'s kernel, whose composite kernel would
// clone self first.
at::Tensor index_put_impl(const at::Tensor& self, const Indices& indices, const at::Tensor& values, bool accumulate,
                          bool) {
  return put_at(self, indices, values, accumulate);
}

// The in-place form: index_put_ (autograd's backward of a read puts the
// gradient into zeros).
at::Tensor& index_put_impl_inplace(at::Tensor& self, const Indices& indices, const at::Tensor& values,
                                   bool accumulate, bool unsafe) {
  if (!accumulate || !lowered(indices)) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(_index_put_impl_)>::call(self, indices, values,
                                                                                               accumulate, unsafe);
  }
  set_value_of(self, added_at(self, indices, values));
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("index.Tensor", TORCH_FN(read_at));
  m.impl("index_put", TORCH_FN(put_at));
  m.impl("_index_put_impl", TORCH_FN(index_put_impl));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_inplace));
}

}  // namespace ordo::torch_device
