// The Python objects of xla tensors that die on a thread without the GIL.
//
// When a tensor's last Python reference goes while C++ still holds the
// tensor (an activation saved for backward), PyTorch hands the Python
// object to the TensorImpl, whose destructor then takes the GIL to release
// it. An xla tensor's saved activations die on autograd's device thread
// (and inside ops, which PyTorch's bindings run without the GIL): with
// several replicas in one process, that thread waited for the GIL behind
// the other replicas' Python. So the destructor parks the object instead,
// and the next xm.mark_step, which holds the GIL, releases what is parked
// (the digits step at 2 workers: 6% faster, BENCHMARKS.md).
//
//   ~XlaTensorImpl: park_python_object(*this);        // any thread
//   xm.mark_step:   release_parked_python_objects();  // holding the GIL
#pragma once

#include <c10/core/TensorImpl.h>

#include <cstddef>

namespace ordo::torch_device {

// Takes impl's Python object into the park when impl owns it, the calling
// thread lacks the GIL, nothing else refers to the object (no reference,
// no weak reference) and the park has room; otherwise leaves it to impl's
// destructor, which releases it the PyTorch way. For a dying impl: a
// parked object no longer reaches it.
void park_python_object(c10::TensorImpl& impl) noexcept;

// Releases every parked object. The caller holds the GIL.
void release_parked_python_objects();

// How many objects are parked (for tests).
size_t parked_python_objects();

}  // namespace ordo::torch_device
