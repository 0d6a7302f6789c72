// ordo/metrics.h for Python: the functions of torch_xla.debug.metrics; and
// the log's level (ordo/log.h).
#include "ordo/log.h"
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
  // By name or 0-3, as ORDO_LOG_LEVEL. No Python sink: a line may be
  // logged with a device's graph mutex held, and a sink that took the GIL
  // there would wait for a thread that holds the GIL and traces on that
  // device.
  m.def("_set_log_level", [](const std::string& level) {
    std::optional<LogLevel> parsed = parse_log_level(level);
    ORDO_ARG_CHECK(parsed.has_value(), "set_log_level: '", level,
                   "' is not a log level (error, warning, info, debug or 0-3)");
    set_log_level(*parsed);
  });
  m.def("_log_level", [] { return std::string(log_level_name(log_level())); });
  // Reads ORDO_LOG_LEVEL now: a bad value is said at import, not at the
  // first message.
  log_level();
}

}  // namespace ordo::python
