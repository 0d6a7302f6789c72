// Tensor ops as module functions; the Python layer turns them into methods.
#include "python/module.h"
#include "runtime/runtime.h"

namespace ordo::python {
namespace {

DType to_dtype(const py::object& dtype) { return dtype_argument(dtype); }

// An index argument: a tensor, or a numpy array made a tensor on device.
Tensor index_tensor(std::string_view what, py::handle index, int device) {
  std::optional<Tensor> tensor = tensor_or_array(index, device);
  if (!tensor) {
    throw DTypeError(str_cat(what, ": indices must be an ordo.Tensor or a numpy array, got ",
                             Py_TYPE(index.ptr())->tp_name));
  }
  return *std::move(tensor);
}

using Unary = Tensor (*)(const Tensor&, Caller);
using Binary = Tensor (*)(const Tensor&, const Tensor&, Caller);
struct BinaryOp {
  const char* name;
  Binary fn;
  ScalarRule rule = ScalarRule::kArithmetic;
};
using Reduction = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Caller);

}  // namespace

void bind_ops(py::module_& m) {
  const std::pair<const char*, Unary> unary[] = {
      {"neg", &neg},   {"abs", &abs},         {"exp", &exp},   {"log", &log},
      {"sqrt", &sqrt}, {"rsqrt", &rsqrt},     {"tanh", &tanh}, {"sigmoid", &sigmoid},
      {"erf", &ordo::erf}, {"relu", &relu}, {"logical_not", &logical_not}};
  for (const auto& [name, fn] : unary) m.def(name, [fn](const Tensor& x) { return fn(x, kPythonCaller); });
  // Their operands are tensors, numpy arrays or numbers, as an operator's.
  static constexpr const char* kOperandsDoc =
      "Operands are ordo tensors, numpy arrays (copied to the tensor operand's device, in native byte order) or "
      "real numbers (which take the tensor's dtype when their kind fits; an int must fit an integer dtype, else "
      "OverflowError), as with the operators; at least one is a tensor or an array.";
  constexpr ScalarRule kComparison = ScalarRule::kComparison;
  const BinaryOp binary[] = {
      {"add", &add},         {"sub", &sub},
      {"mul", &mul},         {"div", &div},
      {"maximum", &maximum}, {"minimum", &minimum},
      {"eq", &eq, kComparison}, {"ne", &ne, kComparison},
      {"lt", &lt, kComparison}, {"le", &le, kComparison},
      {"gt", &gt, kComparison}, {"ge", &ge, kComparison},
      {"logical_and", &logical_and}, {"logical_or", &logical_or},
      {"matmul", &matmul}};
  for (const BinaryOp& op : binary) {
    m.def(op.name, [op](py::handle a, py::handle b) {
      auto [x, y] = operand_pair(op.name, a, b, op.rule);
      return op.fn(x, y, kPythonCaller);
    }, py::arg("a"), py::arg("b"), kOperandsDoc);
  }
  m.def("pow", [](py::handle a, py::handle b) {
    auto [x, y] = operand_pair("pow", a, b, ScalarRule::kArithmetic);
    check_integer_exponent(x, b);
    return pow(x, y, kPythonCaller);
  }, py::arg("a"), py::arg("b"), kOperandsDoc);
  const std::pair<const char*, Reduction> reductions[] = {
      {"sum", &sum}, {"mean", &mean}, {"max", &max}, {"min", &min}, {"argmax", &argmax}};
  for (const auto& [name, fn] : reductions) {
    m.def(name, [fn](const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
      return fn(x, axes, keepdim, kPythonCaller);
    }, py::arg("x"), py::arg("axes"), py::arg("keepdim"));
  }

  m.def("where", [](py::handle condition, py::handle a, py::handle b) {
    // Numbers alone (where(c, 1.0, 0.0)) go to the condition's device.
    std::optional<int> device;
    if (py::isinstance<Tensor>(condition)) device = condition.cast<const Tensor&>().device();
    if (py::isinstance<py::array>(condition)) device = runtime::kCurrentDevice;
    auto [x, y] = operand_pair("where", a, b, ScalarRule::kArithmetic, device);
    std::optional<Tensor> c = tensor_or_array(condition, x.device());
    if (!c) {
      throw DTypeError(str_cat("where: the condition must be an ordo.Tensor or a numpy array, got ",
                               Py_TYPE(condition.ptr())->tp_name));
    }
    return where(*c, x, y, kPythonCaller);
  }, py::arg("condition"), py::arg("a"), py::arg("b"),
     "a where condition is true, else b. condition is a tensor or a numpy array; a and b are tensors, numpy "
     "arrays or real numbers, as an operator's operands (two numbers go to the condition's device).");
  m.def("cast", [](const Tensor& x, const py::object& dtype) { return cast(x, to_dtype(dtype), kPythonCaller); });
  m.def("reshape", [](const Tensor& x, const Shape& shape) { return reshape(x, shape, kPythonCaller); });
  m.def("transpose", [](const Tensor& x, int64_t dim0, int64_t dim1) {
    return transpose(x, dim0, dim1, kPythonCaller);
  });
  m.def("permute", [](const Tensor& x, const std::vector<int64_t>& dims) { return permute(x, dims, kPythonCaller); });
  m.def("slice", [](const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
    return slice(x, axis, start, stop, step, kPythonCaller);
  }, py::arg("x"), py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step"));
  m.def("concat", [](const std::vector<Tensor>& xs, int64_t axis) { return concat(xs, axis, kPythonCaller); });
  m.def("broadcast_to", [](const Tensor& x, const Shape& shape) { return broadcast_to(x, shape, kPythonCaller); });
  m.def("index_select", [](const Tensor& x, int64_t axis, py::handle index) {
    return index_select(x, axis, index_tensor("index_select", index, x.device()), kPythonCaller);
  });
  m.def("scatter_add", [](const Tensor& self, int64_t axis, py::handle index, const Tensor& src) {
    return scatter_add(self, axis, index_tensor("scatter_add", index, self.device()), src, kPythonCaller);
  });
  m.def("index_add", [](const Tensor& self, int64_t axis, py::handle index, const Tensor& src) {
    return index_add(self, axis, index_tensor("index_add", index, self.device()), src, kPythonCaller);
  });
  m.def("gather", [](const Tensor& x, int64_t axis, py::handle index) {
    return gather(x, axis, index_tensor("gather", index, x.device()), kPythonCaller);
  });
  m.def("one_hot", [](py::handle indices, py::handle depth, const py::object& dtype) {
    const Tensor x = index_tensor("one_hot", indices, runtime::kCurrentDevice);
    return one_hot(x, integer_argument("one_hot: depth", depth), to_dtype(dtype), kPythonCaller);
  });
  m.def("full", [](const Shape& shape, py::handle value, const py::object& dtype, int device) {
    const DType type = to_dtype(dtype);
    return full(shape, scalar_argument("full", value, type), type, device, kPythonCaller);
  });
  m.def("arange", [](py::handle start, py::handle stop, py::handle step, const py::object& dtype, int device) {
    const DType type = to_dtype(dtype);
    // Only the values must fit an integer dtype: stop is past the last.
    const DType bound = is_floating(type) ? type : DType::kInt64;
    return arange(scalar_argument("arange", start, type), scalar_argument("arange", stop, bound),
                  scalar_argument("arange", step, bound), type, device, kPythonCaller);
  });
  m.def("rand_uniform", [](const Shape& shape, uint64_t seed, double low, double high,
                           const py::object& dtype, int device) {
    return rand_uniform(shape, seed, low, high, to_dtype(dtype), device, kPythonCaller);
  });
  m.def("rand_normal", [](const Shape& shape, uint64_t seed, double mean, double stddev,
                          const py::object& dtype, int device) {
    return rand_normal(shape, seed, mean, stddev, to_dtype(dtype), device, kPythonCaller);
  });
  m.def("dump_graph", &dump_graph);
}

}  // namespace ordo::python
