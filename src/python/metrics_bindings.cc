// ordo/metrics.h for Python: the functions of torch_xla.debug.metrics.
#include "ordo/metrics.h"
#include "python/module.h"

namespace ordo::python {

void bind_metrics(py::module_& m) {
  m.def("counter_names", &counter_names);
  m.def("counter_value", &counter_value, py::arg("name"), py::arg("device") = -1);
  m.def("metric_names", &metric_names);
  m.def("metric_data", [](std::string_view name, int device) -> py::object {
    std::optional<MetricData> data = metric_data(name, device);
    if (!data) return py::none();
    return py::make_tuple(data->total_samples, data->accumulator, py::cast(data->samples));
  }, py::arg("name"), py::arg("device") = -1);
  m.def("metrics_report", &metrics_report, py::arg("device") = -1);
  m.def("metrics_report_of_every_process", &metrics_report_of_every_process,
        py::call_guard<py::gil_scoped_release>());
  m.def("clear_counters", &clear_counters);
  m.def("clear_metrics", &clear_metrics);
  m.def("clear_all", &clear_all);
}

}  // namespace ordo::python
