#include "torch_device/python_objects.h"

#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

#include <mutex>
#include <vector>

namespace ordo::torch_device {
namespace {

// A program that never calls xm.mark_step parks no more than this; beyond
// it, objects go the PyTorch way.
constexpr size_t kMaxParked = 4096;

struct Park {
  Park() { objects.reserve(kMaxParked); }
  std::mutex mu;
  std::vector<PyObject*> objects;  // never beyond the capacity reserved
};

// Never destroyed: tensors die during static destruction too.
Park& park() {
  static Park& instance = *new Park;
  return instance;
}

// Whether a weak reference reaches object: it could hand the object out.
bool has_weak_references(PyObject* object) {
  const Py_ssize_t offset = Py_TYPE(object)->tp_weaklistoffset;
  return offset > 0 && *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + offset) != nullptr;
}

}  // namespace

void park_python_object(c10::TensorImpl& impl) noexcept {
  if (!impl.owns_pyobj() || !Py_IsInitialized() || PyGILState_Check()) return;
  PyObject* object = impl._unchecked_untagged_pyobj();
  // Owned by impl, the object's one reference is impl's unless a weak
  // reference handed it out again (PyTorch's own release warns then).
  // Read without the GIL, a count of one and no weak reference cannot
  // change: nothing else reaches the object.
  if (Py_REFCNT(object) != 1 || has_weak_references(object)) return;
  Park& p = park();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.objects.size() == kMaxParked) return;
  // The object borrowed impl, which dies now: it is left empty, as PyTorch
  // leaves an object that outlives its tensor, before a release can see it.
  reinterpret_cast<THPVariable*>(object)->cdata = c10::MaybeOwned<at::Tensor>();
  impl.unchecked_clear_pyobj(impl.pyobj_interpreter());
  p.objects.push_back(object);
}

void release_parked_python_objects() {
  Park& p = park();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.objects.empty()) return;
  }
  // The park's next room, so that parking never allocates.
  std::vector<PyObject*> objects;
  objects.reserve(kMaxParked);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    objects.swap(p.objects);
  }
  for (PyObject* object : objects) Py_DECREF(object);
}

size_t parked_python_objects() {
  Park& p = park();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.objects.size();
}

}  // namespace ordo::torch_device
