// ordo._torch: ordo under PyTorch's xla device. Importing it registers the
// device's kernels (aten_*.cc), its fallback and its device guard; these
// functions carry tensors between torch and ordo's Python API (the
// torch_xla front end, python/ordo/torch_xla, is written over ordo's).
// Import ordo._C first: ordo.Tensor is its type.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "ordo/runtime.h"
#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/python_objects.h"

namespace ordo::torch_device {
namespace {

namespace py = pybind11;

at::Tensor xla_tensor_of(const ordo::Tensor& value) { return make_xla(value); }

// Raises error as the Python exception ordo._C's translators make of it
// (ordo.CollectiveTimeoutError, ...), through PyTorch's python_error, which
// its bindings re-raise as it is. Returns for an error no translator knows.
void raise_as_python(std::exception_ptr error) {
  py::gil_scoped_acquire gil;
  for (auto& translator : py::detail::get_internals().registered_exception_translators) {
    try {
      translator(error);
    } catch (...) {
      continue;  // not this translator's
    }
    if (!PyErr_Occurred()) return;
    python_error raised;
    raised.persist();
    throw raised;
  }
}

int index_of(const c10::Device& device) { return device_index_of(device); }

}  // namespace

PYBIND11_MODULE(_torch, m) {
  m.doc() = "ordo as the runtime of PyTorch's xla device";
  set_error_translator(&raise_as_python);
  register_in_place_kernels();
  // PyTorch's bindings release the GIL in every op: several devices'
  // drivers then run unpinned (ordo/runtime.h).
  ordo::set_drivers_hand_off_gil(true);
  // XLA_USE_BF16 is read here, once, as torch_xla reads it when it starts.
  m.def("use_bf16", &use_bf16, "Whether XLA_USE_BF16 holds float32 tensors as bfloat16.");
  use_bf16();
  // The value behind an xla tensor, as an ordo.Tensor (no copy: one lazy value).
  m.def("to_ordo", [](const at::Tensor& tensor) { return value_of(tensor, "to_ordo"); });
  // An ordo.Tensor as a torch tensor on its xla device (no copy).
  m.def("from_ordo", &xla_tensor_of);
  // Rebinds an xla tensor to another value of its shape (in-place collectives).
  m.def("set_value", [](const at::Tensor& tensor, const ordo::Tensor& value) {
    TORCH_CHECK_VALUE(value.shape() == value_of(tensor, "set_value").shape(), "set_value: shapes differ: ",
                      tensor.sizes(), " and the value's");
    set_value_of(tensor, value);
  });
  // Called by xm.mark_step, holding the GIL (python_objects.h).
  m.def("release_parked_python_objects", &release_parked_python_objects);
  m.def("parked_python_objects", &parked_python_objects);
  m.def("is_xla", &is_xla);
  m.def("device_index", &index_of);
}

}  // namespace ordo::torch_device
