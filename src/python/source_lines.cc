#include "python/source_lines.h"

#include <string>
#include <string_view>
#include <utility>

namespace ordo::python {
namespace {

// The ordo package's folder with a trailing '/', once ordo is imported;
// guarded by the GIL.
const std::string& package_dir() {
  static std::string dir;
  if (!dir.empty()) return dir;
  PyObject* ordo = PyImport_GetModule(py::str("ordo").ptr());  // strong, or null
  if (ordo == nullptr) {
    PyErr_Clear();
    return dir;
  }
  py::object module = py::reinterpret_steal<py::object>(ordo);
  if (py::hasattr(module, "__file__") && !module.attr("__file__").is_none()) {
    const std::string file = module.attr("__file__").cast<std::string>();
    dir = file.substr(0, file.rfind('/') + 1);
  }
  return dir;
}

// A strong reference to a frame, dropped when it goes.
struct FrameRef {
  PyFrameObject* frame;
  ~FrameRef() { Py_XDECREF(frame); }
};

const SourceLocation* provider() {
  if (!Py_IsInitialized() || !PyGILState_Check()) return nullptr;
  return python_user_location();
}

}  // namespace

const SourceLocation* python_user_location() {
  if (!ir_debug_on()) return nullptr;
  const std::string_view skipped = package_dir();
  PyFrameObject* current = PyEval_GetFrame();  // borrowed
  Py_XINCREF(current);
  FrameRef at{current};
  while (at.frame != nullptr) {
    py::object code = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetCode(at.frame)));
    Py_ssize_t size = 0;
    const char* file = PyUnicode_AsUTF8AndSize(reinterpret_cast<PyCodeObject*>(code.ptr())->co_filename, &size);
    if (file == nullptr) {
      PyErr_Clear();
      return nullptr;
    }
    const std::string_view name(file, static_cast<size_t>(size));
    if (skipped.empty() || !name.starts_with(skipped)) {
      return intern_source_location(name, PyFrame_GetLineNumber(at.frame));
    }
    FrameRef back{PyFrame_GetBack(at.frame)};  // strong, or null
    std::swap(at.frame, back.frame);
  }
  return nullptr;
}

void bind_source_lines(py::module_& m) {
  set_user_location_provider(&provider);
  m.def("set_ir_debug_enabled", &set_ir_debug_enabled);
  m.def("ir_debug_enabled", &ir_debug_enabled);
}

}  // namespace ordo::python
