// The ordo._C extension: converts values and translates errors, nothing
// more. The Python API (python/ordo) is built on it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ordo/ordo.h"

namespace ordo::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_runtime(py::module_& m);

// numpy dtype <-> ordo dtype.
DType dtype_from_numpy(const py::dtype& dtype);
py::dtype numpy_dtype(DType dtype);

}  // namespace ordo::python
