// A lazy tensor: a handle to a value on one device. Ops on tensors only record
// IR; the value is computed when the device's graph is cut (ordo::mark_step)
// or when the tensor is read.
//
//   ordo::Tensor x = ordo::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   ordo::Tensor y = ordo::relu(x * 2.0 - 3.0);   // nothing runs yet
//   ordo::mark_step();                            // y's graph is submitted
//   std::vector<float> v = y.to_vector<float>();  // waits: {0, 1, 3, 5}
#pragma once

#include <cstring>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ordo/dtype.h"
#include "ordo/error.h"

namespace ordo {

// Where the caller's code is: the last parameter of every op, defaulted to
// the call's line, so that IR debug (ordo/ir_debug.h) records it. Leave it
// out; a function that wraps ops passes its own caller on.
using Caller = std::source_location;

namespace lazy {
class TensorImpl;
class DeviceGraph;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<lazy::TensorImpl> impl);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const;
  const Shape& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const { return shape_numel(shape()); }
  int device() const;

  // True while the value is only recorded IR (no mark_step has cut it yet).
  bool is_pending() const;

  // Waits for the value, running the device's pending graph first if this
  // tensor is part of it, and copies it into dst (exactly nbytes long).
  void copy_to_host(void* dst, size_t nbytes) const;

  template <typename T>
  std::vector<T> to_vector() const {
    ORDO_DTYPE_CHECK(dtype_of<T>() == dtype(), "to_vector: tensor is ", dtype_name(dtype()),
                     ", asked for ", dtype_name(dtype_of<T>()));
    std::vector<T> out(static_cast<size_t>(numel()));
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(out.size());
      copy_to_host(bytes.data(), bytes.size());
      for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != 0;
    } else {
      copy_to_host(out.data(), out.size() * sizeof(T));
    }
    return out;
  }

  template <typename T>
  T item() const {
    ORDO_ARG_CHECK(numel() == 1, "item: tensor has ", numel(), " elements, not 1");
    return to_vector<T>()[0];
  }

  // Rebinds this handle to the value of other (same device, dtype and shape):
  // the in-place update that optimizers and in-place collectives use. The
  // handle takes other's gradient history while gradients are recorded;
  // under a NoGradGuard a leaf stays a leaf (a parameter keeps its
  // requires_grad and grad).
  void assign(const Tensor& other);

  // ---- Autograd (ordo/autograd.h). ----
  // Only floating tensors can require a gradient; a tensor made by ops from
  // one that requires it requires it too, and only a leaf's flag changes.
  Tensor& set_requires_grad(bool requires_grad = true);
  bool requires_grad() const;
  bool is_leaf() const;  // not made by an op that recorded a gradient
  // What backward() accumulated into this leaf; undefined before.
  Tensor grad() const;
  // Replaces it (same dtype, shape and device); undefined clears it.
  void set_grad(const Tensor& grad);
  // Accumulates d(this)/d(leaf) into the grad() of every leaf this depends
  // on that requires a gradient. Without gradient, this must have one
  // element; else gradient has this tensor's shape and dtype.
  void backward(const Tensor& gradient = {}, Caller caller = Caller::current()) const;
  // The same value, without gradient history.
  Tensor detach() const;

  const std::shared_ptr<lazy::TensorImpl>& impl() const { return impl_; }

 private:
  void rebind_history(lazy::DeviceGraph& graph, const Tensor& other);

  std::shared_ptr<lazy::TensorImpl> impl_;
};

// ---- Creation. device -1 means the calling thread's current device; any
// other device that does not exist is an InvalidArgument. ----

// Copies nbytes = numel * dtype_size(dtype) bytes from data.
Tensor from_host(const void* data, DType dtype, const Shape& shape, int device = -1,
                 Caller caller = Caller::current());

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, int device = -1,
                   Caller caller = Caller::current()) {
  const int64_t numel = checked_shape_size("from_vector", shape, dtype_of<T>()).numel;
  ORDO_ARG_CHECK(static_cast<int64_t>(values.size()) == numel, "from_vector: ", values.size(),
                 " values for shape ", shape_to_string(shape));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_host(bytes.data(), DType::kBool, shape, device, caller);
  } else {
    return from_host(values.data(), dtype_of<T>(), shape, device, caller);
  }
}

// value must fit dtype (Scalar::fits): full({2}, int64_t{1} << 31, kInt32)
// throws OutOfRange, a NaN fill of an integer dtype InvalidArgument.
Tensor full(const Shape& shape, Scalar value, DType dtype, int device = -1, Caller caller = Caller::current());
Tensor zeros(const Shape& shape, DType dtype = DType::kFloat32, int device = -1, Caller caller = Caller::current());
Tensor ones(const Shape& shape, DType dtype = DType::kFloat32, int device = -1, Caller caller = Caller::current());
// [start, stop) by step, like numpy.arange. Every value of an integer range
// must fit dtype (else OutOfRange).
Tensor arange(Scalar start, Scalar stop, Scalar step = 1, DType dtype = DType::kInt64,
              int device = -1, Caller caller = Caller::current());
// Seeded random numbers: the same seed gives the same numbers on every run
// and every machine (a counter-based generator, independent of threads).
Tensor rand_uniform(const Shape& shape, uint64_t seed, double low = 0.0, double high = 1.0,
                    DType dtype = DType::kFloat32, int device = -1, Caller caller = Caller::current());
Tensor rand_normal(const Shape& shape, uint64_t seed, double mean = 0.0, double stddev = 1.0,
                   DType dtype = DType::kFloat32, int device = -1, Caller caller = Caller::current());

// ---- Elementwise. Binary ops broadcast like numpy and promote dtypes
// (bool < int32 < int64 < float32 < float64). ----

Tensor neg(const Tensor& x, Caller caller = Caller::current());
Tensor abs(const Tensor& x, Caller caller = Caller::current());
Tensor exp(const Tensor& x, Caller caller = Caller::current());
Tensor log(const Tensor& x, Caller caller = Caller::current());
Tensor sqrt(const Tensor& x, Caller caller = Caller::current());
Tensor rsqrt(const Tensor& x, Caller caller = Caller::current());
Tensor tanh(const Tensor& x, Caller caller = Caller::current());
Tensor sigmoid(const Tensor& x, Caller caller = Caller::current());
// The Gauss error function; integers compute in float32.
Tensor erf(const Tensor& x, Caller caller = Caller::current());
Tensor relu(const Tensor& x, Caller caller = Caller::current());
Tensor logical_not(const Tensor& x, Caller caller = Caller::current());

Tensor add(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor sub(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor mul(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
// True division: integers give float32.
Tensor div(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
// Integer results: a negative exponent fails the graph with an
// ExecutionError, as numpy raises ("integers to negative integer powers").
Tensor pow(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor maximum(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor minimum(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor eq(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor ne(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor lt(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor le(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor gt(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor ge(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor logical_and(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor logical_or(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Caller caller = Caller::current());
Tensor cast(const Tensor& x, DType dtype, Caller caller = Caller::current());

// A scalar operand becomes a 0-d tensor of the other operand's dtype when its
// kind fits (an integer scalar with a float tensor), else of its own kind;
// scalar_dtype says which. The value must fit that dtype (else OutOfRange,
// as numpy 2 refuses int32_array + 2**32).
DType scalar_dtype(Scalar value, DType other);
Tensor scalar_like(Scalar value, const Tensor& other, Caller caller = Caller::current());

// ---- Reductions. An empty axes list reduces every axis; negative axes count
// from the end. ----

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
           Caller caller = Caller::current());
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
            Caller caller = Caller::current());
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
           Caller caller = Caller::current());
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
           Caller caller = Caller::current());
// Index (int64) of the first maximum within the reduced axes, counted
// row-major over those axes.
Tensor argmax(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false,
              Caller caller = Caller::current());

// ---- Linear algebra and movement. ----

// numpy.matmul: 1-D, 2-D and batched (batch dimensions broadcast).
Tensor matmul(const Tensor& a, const Tensor& b, Caller caller = Caller::current());
// One dimension may be -1 (inferred).
Tensor reshape(const Tensor& x, const Shape& shape, Caller caller = Caller::current());
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Caller caller = Caller::current());
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims, Caller caller = Caller::current());
// Python slice semantics on one axis: start/stop are clamped, step > 0.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1,
             Caller caller = Caller::current());
Tensor concat(const std::vector<Tensor>& xs, int64_t axis, Caller caller = Caller::current());
Tensor broadcast_to(const Tensor& x, const Shape& shape, Caller caller = Caller::current());
// Picks whole slices of x along axis by a 1-D integer index. Indices count
// from the end when negative, like numpy.take (-1 is the last slice); one
// outside [-size, size) fails the graph with an ExecutionError naming it.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index, Caller caller = Caller::current());
// torch.gather: out[i][j] = x[index[i][j]][j] for axis 0; index has x's rank.
// Negative indices count from the end, as in index_select.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index, Caller caller = Caller::current());
// torch.scatter_add: out = self, then out[index[i][j]][j] += src[i][j] for
// axis 0 (index and src of one shape, no larger than self off the axis),
// added in the index's row-major order; negative indices as in gather.
Tensor scatter_add(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src,
                   Caller caller = Caller::current());
// torch.index_add: out = self, then the slices of src along axis are added
// at the slices index (1-D) names.
Tensor index_add(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src,
                 Caller caller = Caller::current());
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype = DType::kInt64, Caller caller = Caller::current());

// ---- Operators. ----

// An operator's tensor operand, with the line of the expression: an operator
// cannot take a defaulted Caller, but the implicit conversion to this type
// can, at the user's line.
struct TensorOperand {
  TensorOperand(const Tensor& tensor, Caller caller = Caller::current()) : tensor(tensor), caller(caller) {}
  const Tensor& tensor;  // lives to the end of the operator's expression
  Caller caller;
};

Tensor operator-(TensorOperand x);
Tensor operator+(TensorOperand a, const Tensor& b);
Tensor operator-(TensorOperand a, const Tensor& b);
Tensor operator*(TensorOperand a, const Tensor& b);
Tensor operator/(TensorOperand a, const Tensor& b);
Tensor operator+(TensorOperand a, Scalar b);
Tensor operator-(TensorOperand a, Scalar b);
Tensor operator*(TensorOperand a, Scalar b);
Tensor operator/(TensorOperand a, Scalar b);
Tensor operator+(Scalar a, TensorOperand b);
Tensor operator-(Scalar a, TensorOperand b);
Tensor operator*(Scalar a, TensorOperand b);
Tensor operator/(Scalar a, TensorOperand b);

}  // namespace ordo
