#include "torch_device/op_schemas.h"

namespace ordo::torch_device {

OpsByName ops_by_name() {
  c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
  OpsByName by_name;
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (auto op = dispatcher.findOp(name); op && op->hasSchema()) by_name[name.name].push_back(*op);
  }
  return by_name;
}

std::string full_name(const c10::OperatorName& name) {
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

bool writes(const c10::Argument& argument) {
  return argument.alias_info() != nullptr && argument.alias_info()->isWrite();
}

bool is_tensor(const c10::Argument& argument) { return argument.type()->kind() == c10::TypeKind::TensorType; }

}  // namespace ordo::torch_device
