// What the kernels of writes (in_place.cc, foreach.cc) read of
// torch's op schemas to find the functional or element op of an update.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace ordo::torch_device {

// Every op with a schema, by name without overload ("aten::add": add.Tensor,
// add.Scalar, add.out, ...).
using OpsByName = std::unordered_map<std::string, std::vector<c10::OperatorHandle>>;
OpsByName ops_by_name();

// "aten::add.Tensor", or "aten::relu" for the overload "".
std::string full_name(const c10::OperatorName& name);
// Whether the op writes the argument (Tensor(a!)).
bool writes(const c10::Argument& argument);
bool is_tensor(const c10::Argument& argument);

}  // namespace ordo::torch_device
