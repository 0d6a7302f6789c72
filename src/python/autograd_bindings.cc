// ordo/autograd.h for Python (the Tensor's own methods are in tensor_bindings.cc).
#include "python/module.h"

namespace ordo::python {

void bind_autograd(py::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled);
  m.def("set_grad_enabled", &set_grad_enabled, py::arg("enabled"));
  m.def("_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& seeds) { return grad(outputs, inputs, seeds, kPythonCaller); },
        py::arg("outputs"), py::arg("inputs"), py::arg("seeds"));
}

}  // namespace ordo::python
