// Between PyTorch's tensors on the xla device and ordo's lazy tensors.
//
// A user's xla tensor is a FunctionalTensorWrapper around an XlaTensorImpl;
// a kernel below functionalization sees the XlaTensorImpl alone. value_of
// takes either; a kernel returns make_xla(value), and the few kernels that
// no functional tensor reaches (factories, uploads) return wrap(value).
#pragma once

#include <ATen/core/Tensor.h>

#include <exception>

#include "ordo/tensor.h"

namespace ordo::torch_device {

bool is_xla(const at::Tensor& tensor);
// The lazy value of an xla tensor (wrapped or not); c10::TypeError
// otherwise, naming the op.
const ordo::Tensor& value_of(const at::Tensor& tensor, const char* op = "this op");
// A plain xla tensor over value.
at::Tensor make_xla(ordo::Tensor value);
// What a user holds: make_xla, wrapped for functionalization unless the
// caller runs with functionalization excluded (inside a functionalized op
// functionalization wraps the outputs itself).
at::Tensor wrap(ordo::Tensor value);
// wrap of an empty value shown as a dtype ordo has not (XlaTensorImpl).
at::Tensor wrap_empty(ordo::Tensor empty_value, c10::ScalarType shown_as);
// Sets the value behind a plain or wrapped xla tensor (in place: the
// in-place ops, the fallback's mutated arguments, collectives on a list);
// a wrapped tensor's update is applied to its storage at once.
void set_value_of(const at::Tensor& tensor, ordo::Tensor value);
// Records a functional tensor's new value (replace_ done) as an update of
// its storage and applies it at once. torch 1.13's commit_update marks the
// tensor up to date, so its own sync never applies the update: the storage
// would keep every value the tensor ever had (and ordo would materialize
// each of them at every mark_step) until a view of it syncs.
void commit_in_place(const at::Tensor& functional);

// How an ordo error that reading a value raised (an ExecutionError, the
// CollectiveError family) reaches the caller: PyTorch would make any C++
// exception a RuntimeError, so the Python module installs a translator that
// raises ordo's own Python exception instead (module.cc).
using ErrorTranslator = void (*)(std::exception_ptr error);
void set_error_translator(ErrorTranslator translator);

// ordo's Functionalize kernels for copy_, the in-place ops and the out= ops
// (functionalize.cc); the module calls it once.
void register_functionalize_kernels();

// A CPU tensor's contents as a lazy value on the device (a device-data leaf).
ordo::Tensor upload(const at::Tensor& cpu, int device);
// The value read back as a dense CPU tensor of its dtype.
at::Tensor download(const ordo::Tensor& value);

}  // namespace ordo::torch_device
