// Between PyTorch's tensors on the xla device and ordo's lazy tensors: an
// xla tensor is an XlaTensorImpl (xla_tensor_impl.h); a kernel reads its
// operands' values with value_of and returns make_xla(value).
#pragma once

#include <ATen/core/Tensor.h>

#include <exception>

#include "ordo/tensor.h"
#include "torch_device/xla_tensor_impl.h"

namespace ordo::torch_device {

bool is_xla(const at::Tensor& tensor);
// The lazy value of an xla tensor; c10::TypeError otherwise, naming the op.
const ordo::Tensor& value_of(const at::Tensor& tensor, const char* op = "this op");
// An xla tensor over value.
at::Tensor make_xla(ordo::Tensor value);
// make_xla of an empty value shown as a dtype ordo has not (XlaTensorImpl).
at::Tensor make_empty_xla(ordo::Tensor empty_value, c10::ScalarType shown_as);
// An xla tensor viewing tensor through step: it shares tensor's writes.
at::Tensor make_view(const at::Tensor& tensor, const ViewStep& step, const char* op);
// Writes value to an xla tensor (the in-place ops, the fallback's mutated
// arguments, collectives on a list), and so to its base and aliases.
void set_value_of(const at::Tensor& tensor, ordo::Tensor value);
// The XlaTensorImpl of an xla tensor; c10::TypeError otherwise.
XlaTensorImpl& xla_impl_of(const at::Tensor& tensor, const char* op = "this op");

// How an ordo error that reading a value raised (an ExecutionError, the
// CollectiveError family) reaches the caller: PyTorch would make any C++
// exception a RuntimeError, so the Python module installs a translator that
// raises ordo's own Python exception instead (module.cc).
using ErrorTranslator = void (*)(std::exception_ptr error);
void set_error_translator(ErrorTranslator translator);

// The kernels of copy_, the in-place ops, the out= ops and the list ops
// (in_place.cc); the module calls it once.
void register_in_place_kernels();

// A CPU tensor's contents as a lazy value on the device (a device-data leaf).
ordo::Tensor upload(const at::Tensor& cpu, int device);
// The value read back as a dense CPU tensor of its dtype.
at::Tensor download(const ordo::Tensor& value);

}  // namespace ordo::torch_device
