// IR debug from Python: the user's line is the calling Python frame, the
// first outside the ordo package (a line of ordo.nn is not the user's).
//
//   m.def("all_reduce", ..., py::call_guard<ScopedPythonLocation, GilRelease>());
//
// Ops traced with the GIL held need nothing: the provider that
// bind_source_lines installs reads the frame when an op is traced. A call
// that releases the GIL before it traces takes the frame first, with
// ScopedPythonLocation.
#pragma once

#include "core/source_location.h"
#include "python/module.h"

namespace ordo::python {

// The calling user frame's (file, line); null without the GIL, without a
// Python caller, or with IR debug off.
const SourceLocation* python_user_location();

// The user location of a call's scope, taken while the GIL is held.
class ScopedPythonLocation {
 public:
  ScopedPythonLocation() : scope_(python_user_location()) {}

 private:
  ScopedUserLocation scope_;
};

}  // namespace ordo::python
