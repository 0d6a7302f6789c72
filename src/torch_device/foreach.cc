#include "torch_device/foreach.h"

#include <ATen/Operators.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ordo::torch_device {
namespace {

constexpr std::string_view kPrefix = "aten::_foreach_";

// A list argument of the list op whose element is the element op's
// argument at the same place.
bool is_element_of(const c10::Argument& list, const c10::Argument& element) {
  const auto list_type = list.type()->cast<c10::ListType>();
  return list_type != nullptr && *list_type->getElementType() == *element.type();
}

// Whether element takes list's arguments one element at a time (or as they
// are), with defaults for the rest, and returns one tensor.
bool applies_by_element(const c10::FunctionSchema& list, const c10::FunctionSchema& element) {
  const auto& ours = list.arguments();
  const auto& theirs = element.arguments();
  if (ours.empty() || theirs.size() < ours.size() || element.returns().size() != 1 ||
      !is_tensor(element.returns()[0]) || !is_element_of(ours[0], theirs[0])) {
    return false;
  }
  for (size_t i = 0; i < theirs.size(); ++i) {
    if (i >= ours.size() ? !theirs[i].default_value().has_value()
                         : !(is_element_of(ours[i], theirs[i]) || *ours[i].type() == *theirs[i].type())) {
      return false;
    }
  }
  return true;
}

// The one overload of `name` that applies by element, if exactly one does.
std::optional<c10::OperatorHandle> element_op(const OpsByName& by_name, const std::string& name,
                                              const c10::FunctionSchema& list) {
  const auto ops = by_name.find(name);
  if (ops == by_name.end()) return std::nullopt;
  std::optional<c10::OperatorHandle> match;
  for (const c10::OperatorHandle& op : ops->second) {
    if (!applies_by_element(list, op.schema())) continue;
    if (match) return std::nullopt;
    match = op;
  }
  return match;
}

// The list op as its element op at each index. Lists must be of one
// length, at least one, as torch's kernels check.
class BoxedForeach final : public c10::OperatorKernel {
 public:
  BoxedForeach(const c10::FunctionSchema& list, c10::OperatorHandle element, bool copies_back)
      : element_(std::move(element)), copies_back_(copies_back) {
    for (size_t a = 0; a < list.arguments().size(); ++a) {
      by_element_.push_back(is_element_of(list.arguments()[a], element_.schema().arguments()[a]));
    }
  }

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto first = stack->end() - static_cast<std::ptrdiff_t>(by_element_.size());
    std::vector<c10::IValue> given(std::make_move_iterator(first), std::make_move_iterator(stack->end()));
    stack->erase(first, stack->end());
    const size_t length = list_length(op, given);
    const bool returns_list = !op.schema().returns().empty();  // else an update of the first list
    const auto& element_arguments = element_.schema().arguments();
    std::vector<at::Tensor> results;
    for (size_t i = 0; i < length; ++i) {
      torch::jit::Stack element;
      for (size_t a = 0; a < element_arguments.size(); ++a) {
        if (a >= given.size()) {
          element.push_back(*element_arguments[a].default_value());
        } else {
          element.push_back(by_element_[a] ? given[a].toListRef()[i] : given[a]);
        }
      }
      element_.callBoxed(element);
      at::Tensor result = element.front().toTensor();
      if (copies_back_) {
        at::Tensor self = given[0].toListRef()[i].toTensor();
        at::_ops::copy_::call(self, result, false);
      } else if (returns_list) {
        results.push_back(std::move(result));
      }
    }
    if (returns_list) stack->emplace_back(std::move(results));
  }

 private:
  size_t list_length(const c10::OperatorHandle& op, const std::vector<c10::IValue>& given) const {
    std::optional<size_t> length;
    for (size_t a = 0; a < given.size(); ++a) {
      if (!by_element_[a]) continue;
      const size_t size = given[a].toListRef().size();
      TORCH_CHECK(!length || *length == size, full_name(op.operator_name()),
                  ": the lists must be of one length, got ", *length, " and ", size);
      length = size;
    }
    TORCH_CHECK(length.value_or(0) > 0, full_name(op.operator_name()), ": a list must hold at least one tensor");
    return *length;
  }

  c10::OperatorHandle element_;
  bool copies_back_;
  std::vector<bool> by_element_;  // by argument of the list op: whether it is a list taken element by element
};

}  // namespace

void register_foreach_kernels(torch::Library& library, const OpsByName& by_name) {
  for (const auto& [name, ops] : by_name) {
    if (!name.starts_with(kPrefix)) continue;
    const std::string element_name = "aten::" + name.substr(kPrefix.size());
    for (const c10::OperatorHandle& op : ops) {
      const c10::FunctionSchema& schema = op.schema();
      if (op.operator_name().overload_name == "out") continue;
      const bool in_place = !schema.arguments().empty() && writes(schema.arguments()[0]);
      if (in_place != schema.returns().empty()) continue;  // neither an update nor a list of new tensors
      std::optional<c10::OperatorHandle> element = element_op(by_name, element_name, schema);
      bool copies_back = false;
      if (!element && in_place && element_name.back() == '_') {
        element = element_op(by_name, element_name.substr(0, element_name.size() - 1), schema);
        copies_back = true;
      }
      if (!element) continue;
      auto kernel = std::make_unique<BoxedForeach>(schema, *element, copies_back);
      library.impl(full_name(op.operator_name()).c_str(), torch::CppFunction::makeFromBoxedFunctor(std::move(kernel)));
    }
  }
}

}  // namespace ordo::torch_device
