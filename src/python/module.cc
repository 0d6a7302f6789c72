#include "python/module.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "ordo's C++ core: lazy tensors, graphs, devices and collectives";
  ordo::python::bind_errors(m);
  ordo::python::bind_dtypes(m);
  ordo::python::bind_tensor(m);
  ordo::python::bind_ops(m);
  ordo::python::bind_nn_ops(m);
  ordo::python::bind_runtime(m);
  ordo::python::bind_spawn(m);
  ordo::python::bind_autograd(m);
  ordo::python::bind_metrics(m);
  ordo::python::bind_source_lines(m);
  ordo::python::bind_trace(m);
}
