// Devices, steps, the compile cache, collectives and the cc token.
#include <algorithm>
#include <charconv>
#include <string_view>

#ifdef ORDO_HAVE_MPI
#include "comm/mpi/process_mesh.h"
#endif
#include "python/module.h"
#include "python/source_lines.h"
#include "python/waiting.h"
#include "runtime/runtime.h"

namespace ordo::python {
namespace {

using WithoutGil = py::call_guard<GilRelease>;
// For ops that trace without the GIL: the user's Python line is taken first.
using TracingWithoutGil = py::call_guard<ScopedPythonLocation, GilRelease>;

ReplicaGroups to_groups(const std::optional<ReplicaGroups>& groups) { return groups.value_or(ReplicaGroups{}); }

// torch_xla's name for drop_pending_graph, which takes the device as a
// string ("ordo:1" here, as str(ordo.xla_device()) gives) or an ordinal.
void clear_pending_irs(const py::object& device) {
  int ordinal = 0;
  if (py::isinstance<py::str>(device)) {
    const std::string text = device.cast<std::string>();
    const std::string_view prefix = "ordo:";
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data() + std::min(text.size(), prefix.size()), end, ordinal);
    ORDO_ARG_CHECK(text.starts_with(prefix) && ec == std::errc() && ptr == end, "_clear_pending_irs: '", text,
                   "' is not a device such as 'ordo:0'");
  } else {
    ordinal = device.cast<int>();
  }
  GilRelease release;
  drop_pending_graph(ordinal);
}

// A rendezvous's i-th payload as bytes; short of memory, an OutOfMemoryError
// saying which (pybind11's bytes would say "Could not allocate bytes object!").
py::bytes payload_bytes(const std::string& tag, size_t i, const std::string& payload) {
  PyObject* bytes = PyBytes_FromStringAndSize(payload.data(), static_cast<Py_ssize_t>(payload.size()));
  if (bytes == nullptr) {
    PyErr_Clear();
    throw_error<OutOfMemoryError>("rendezvous '", tag, "': no memory for Python bytes of payload ", i, " (",
                                  payload.size(), " bytes)");
  }
  return py::reinterpret_steal<py::bytes>(bytes);
}

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("init", &init, py::arg("num_devices"), WithoutGil());
  m.def("shutdown", &shutdown, WithoutGil());
  m.def("is_initialized", &is_initialized);
  m.def("num_devices", &num_devices);
  m.def("world_size", [] { return world_size(); });
  m.def("get_ordinal", &get_ordinal, py::arg("device") = -1);
  m.def("get_local_ordinal", &get_local_ordinal, py::arg("device") = -1);
  m.def("current_device", &current_device);
  m.def("spawn_running", &spawn_running);
  m.def("set_current_device", &set_current_device);
  m.def("bind_thread_to_device", &bind_thread_to_device);
  m.def("mark_step", [](int device) {
    // It may wait for the device's older steps (max_steps_ahead): Ctrl-C must reach it.
    const int index = device == -1 ? current_device() : device;
    wait_interruptibly(index, "mark_step", [index] { mark_step(index); });
  }, py::arg("device") = -1);
  m.def("set_max_steps_ahead", &set_max_steps_ahead, py::arg("steps"));
  m.def("max_steps_ahead", &max_steps_ahead);
  m.def("mark_step_and_wait", [](int device) {
    // The device waited for, as wait_device_ops names it (-1 there is every device).
    const int index = device == -1 ? current_device() : device;
    wait_interruptibly(index, "mark_step(wait=True)", [index] { mark_step_and_wait(index); });
  }, py::arg("device") = -1);
  // shared: replicas seeded alike draw alike (the torch front end's seeds).
  m.def("manual_seed", [](uint64_t seed, int device, bool shared) {
    manual_seed(seed, device, shared ? SeedScope::kShared : SeedScope::kPerDevice);
  }, py::arg("seed"), py::arg("device") = -1, py::arg("shared") = false);
  m.def("manual_seed_all", &manual_seed_all, py::arg("seed"));
  m.def("manual_seed_of", &manual_seed_of, py::arg("device") = -1);
  m.def("next_seed", [](int device) { return next_seed(device, kPythonCaller); }, py::arg("device") = -1);
  m.def("next_init_seed", &next_init_seed, py::arg("device") = -1);
  m.def("drop_pending_graph", &drop_pending_graph, py::arg("device") = -1, WithoutGil());
  m.def("_clear_pending_irs", &clear_pending_irs, py::arg("device"));
  m.def("wait_device_ops", [](int device) {
    wait_interruptibly(device, "wait_device_ops", [device] { wait_device_ops(device); });
  });
  m.def("wait_all_device_ops", [] {
    wait_interruptibly(kEveryDevice, "wait_device_ops", [] { wait_device_ops(); });
  });
  // Payloads are bytes both ways (pybind11 would make str of a string).
  m.def("rendezvous", [](const std::string& tag, const py::bytes& payload, const std::vector<int>& replicas) {
    const std::string_view bytes = payload;  // payload lives (and holds still) until the call returns
    const std::vector<std::string> payloads = wait_interruptibly(kNoDevice, "a rendezvous", [&] {
      return rendezvous(tag, bytes, replicas, &print_on_python_stdout);
    });
    py::list out;
    for (size_t i = 0; i < payloads.size(); ++i) out.append(payload_bytes(tag, i, payloads[i]));
    return out;
  });
  m.def("dump_pending_graph", &dump_pending_graph, py::arg("device") = -1);
  m.def("compile_cache_stats", [] {
    const CompileCacheStats s = compile_cache_stats();
    py::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["entries"] = s.entries;
    d["capacity"] = s.capacity;
    return d;
  });
  m.def("reset_compile_cache", &reset_compile_cache, py::arg("capacity") = 1024);
  m.def("set_schedule", [](int device, const std::string& mode, uint64_t seed, bool fuse_elementwise) {
    ORDO_ARG_CHECK(mode == "default" || mode == "random", "set_schedule: mode must be 'default' or 'random', got '",
                   mode, "'");
    set_schedule(device, {mode == "random" ? ScheduleMode::kRandom : ScheduleMode::kDefault, seed, fuse_elementwise});
  }, py::arg("device"), py::arg("mode"), py::arg("seed") = 0, py::arg("fuse_elementwise") = true);

  m.def("all_reduce", [](const std::string& reduce, const Tensor& x, double scale,
                         const std::optional<ReplicaGroups>& groups) {
    return all_reduce(parse_reduce_type(reduce), x, scale, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());
  m.def("all_reduce_inplace", [](const std::string& reduce, std::vector<Tensor> xs, double scale,
                                 const std::optional<ReplicaGroups>& groups) {
    all_reduce_inplace(parse_reduce_type(reduce), xs, scale, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());
  m.def("all_gather", [](const Tensor& x, int64_t dim, const std::optional<ReplicaGroups>& groups) {
    return all_gather(x, dim, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());
  m.def("reduce_scatter", [](const std::string& reduce, const Tensor& x, double scale, int64_t dim,
                             int64_t shards, const std::optional<ReplicaGroups>& groups) {
    return reduce_scatter(parse_reduce_type(reduce), x, scale, dim, shards, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());
  m.def("all_to_all", [](const Tensor& x, int64_t split, int64_t concat, int64_t count,
                         const std::optional<ReplicaGroups>& groups) {
    return all_to_all(x, split, concat, count, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());
  m.def("collective_permute", [](const Tensor& x, const std::vector<std::pair<int, int>>& pairs) {
    return collective_permute(x, pairs, kPythonCaller);
  }, TracingWithoutGil());
  m.def("collective_broadcast", [](std::vector<Tensor> xs, int root, const std::optional<ReplicaGroups>& groups) {
    collective_broadcast(xs, root, to_groups(groups), kPythonCaller);
  }, TracingWithoutGil());

  py::class_<CcToken>(m, "CcToken")
      .def_property_readonly("device", &CcToken::device)
      .def("__repr__", [](const CcToken& t) { return str_cat("<ordo cc token of device ", t.device(), ">"); });
  auto get_token = [](int device) -> std::optional<CcToken> {
    CcToken token = get_cc_token(device);
    if (!token.defined()) return std::nullopt;
    return token;
  };
  auto set_token = [](int device, const std::optional<CcToken>& token) {
    set_cc_token(device, token.value_or(CcToken()));
  };
  m.def("_get_cc_token", get_token);
  m.def("_set_cc_token", set_token);
  m.def("_get_all_reduce_token", get_token);  // torch_xla's names
  m.def("_set_all_reduce_token", set_token);
  m.def("set_token_edges_enabled", &set_token_edges_enabled);
  m.def("set_collective_timeouts", [](double warn, double timeout) { set_collective_timeouts({warn, timeout}); });
  m.def("collective_timeouts", [] {
    const CollectiveTimeouts t = collective_timeouts();
    return py::make_tuple(t.warn_seconds, t.timeout_seconds);
  });
  m.def("mark_device_failed", &mark_device_failed);
  m.def("mark_device_absent", &mark_device_absent);
  m.def("clear_device_absent", &clear_device_absent);
  m.def("interrupt_device", &interrupt_device, WithoutGil());
  // Which runtime runs (0: none), so that spawn can tell whether fn replaced it.
  // Python's excepthook under mpirun: tells the other processes why this
  // one ends (False when this process has no process mesh).
  m.def(
      "_say_last_words",
      [](const std::string& why) {
#ifdef ORDO_HAVE_MPI
        if (comm::ProcessMesh* mesh = comm::ProcessMesh::joined()) {
          mesh->say_last_words(why);
          return true;
        }
#endif
        static_cast<void>(why);
        return false;
      },
      WithoutGil());
  m.def("_runtime_generation", [] { return is_initialized() ? runtime::get().generation() : uint64_t{0}; });
}

}  // namespace ordo::python
