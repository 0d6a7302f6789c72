// Tensor ops as module functions; the Python layer turns them into methods.
#include "python/module.h"

namespace ordo::python {
namespace {

DType to_dtype(const py::object& dtype) { return dtype_from_numpy(py::dtype::from_args(dtype)); }

Scalar to_scalar(const py::object& value) {
  if (py::isinstance<py::bool_>(value)) return Scalar(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return Scalar(value.cast<int64_t>());
  try {
    return Scalar(value.cast<double>());
  } catch (const py::cast_error&) {
    throw InvalidArgument(str_cat("expected a number, got ", py::str(py::type::of(value)).cast<std::string>()));
  }
}

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);
using Reduction = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

}  // namespace

void bind_ops(py::module_& m) {
  const std::pair<const char*, Unary> unary[] = {
      {"neg", &neg},   {"abs", &abs},         {"exp", &exp},   {"log", &log},
      {"sqrt", &sqrt}, {"rsqrt", &rsqrt},     {"tanh", &tanh}, {"sigmoid", &sigmoid},
      {"relu", &relu}, {"logical_not", &logical_not}};
  for (const auto& [name, fn] : unary) m.def(name, fn);
  const std::pair<const char*, Binary> binary[] = {
      {"add", &add},     {"sub", &sub},         {"mul", &mul},         {"div", &div},
      {"pow", &pow},     {"maximum", &maximum}, {"minimum", &minimum}, {"eq", &eq},
      {"ne", &ne},       {"lt", &lt},           {"le", &le},           {"gt", &gt},
      {"ge", &ge},       {"logical_and", &logical_and}, {"logical_or", &logical_or},
      {"matmul", &matmul}};
  for (const auto& [name, fn] : binary) m.def(name, fn);
  const std::pair<const char*, Reduction> reductions[] = {
      {"sum", &sum}, {"mean", &mean}, {"max", &max}, {"min", &min}, {"argmax", &argmax}};
  for (const auto& [name, fn] : reductions) m.def(name, fn, py::arg("x"), py::arg("axes"), py::arg("keepdim"));

  m.def("where", &where);
  m.def("cast", [](const Tensor& x, const py::object& dtype) { return cast(x, to_dtype(dtype)); });
  m.def("reshape", &reshape);
  m.def("transpose", &transpose);
  m.def("permute", &permute);
  m.def("slice", &slice, py::arg("x"), py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step"));
  m.def("concat", &concat);
  m.def("broadcast_to", &broadcast_to);
  m.def("index_select", &index_select);
  m.def("gather", &gather);
  m.def("one_hot", [](const Tensor& x, int64_t depth, const py::object& dtype) {
    return one_hot(x, depth, to_dtype(dtype));
  });
  m.def("scalar_like", [](const py::object& value, const Tensor& other) {
    return scalar_like(to_scalar(value), other);
  });
  m.def("full", [](const Shape& shape, const py::object& value, const py::object& dtype, int device) {
    return full(shape, to_scalar(value), to_dtype(dtype), device);
  });
  m.def("arange", [](const py::object& start, const py::object& stop, const py::object& step,
                     const py::object& dtype, int device) {
    return arange(to_scalar(start), to_scalar(stop), to_scalar(step), to_dtype(dtype), device);
  });
  m.def("rand_uniform", [](const Shape& shape, uint64_t seed, double low, double high,
                           const py::object& dtype, int device) {
    return rand_uniform(shape, seed, low, high, to_dtype(dtype), device);
  });
  m.def("rand_normal", [](const Shape& shape, uint64_t seed, double mean, double stddev,
                          const py::object& dtype, int device) {
    return rand_normal(shape, seed, mean, stddev, to_dtype(dtype), device);
  });
  m.def("dump_graph", &dump_graph);
}

}  // namespace ordo::python
