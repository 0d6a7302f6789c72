// ordo/trace.h for Python (python/ordo/_trace.py): stop_trace waits for
// the devices' queues and, across processes, for the other processes,
// without the GIL.
#include "python/module.h"

namespace ordo::python {

void bind_trace(py::module_& m) {
  m.def("start_trace", &start_trace, py::arg("path"));
  m.def("stop_trace", &stop_trace, py::call_guard<py::gil_scoped_release>());
  m.def("is_tracing", &is_tracing);
}

}  // namespace ordo::python
