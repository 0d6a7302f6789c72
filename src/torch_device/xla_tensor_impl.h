// The TensorImpl of PyTorch's `xla` device: an ordo::Tensor (a lazy value
// on one of this process's devices) seen by PyTorch as a dense, contiguous
// tensor without storage, with PyTorch's aliasing: a view (view, t, slice,
// select, expand, as_strided, split, ...) or a detached copy (detach,
// `.data`) shares its base's writes both ways, as torch_xla 1.x's tensors
// do. Every xla value is immutable, so a write is a new base value: the
// writer's value carried back through its view steps (a scatter into the
// base), and the other aliases catch up when next read. The last alias
// left drops the base and keeps its own value.
//
//   at::Tensor t = make_xla(ordo::ones({2, 3}));   // xla:0, float32, sizes [2, 3]
//   const ordo::Tensor& v = value_of(t);           // the lazy value behind it
#pragma once

#include <c10/core/TensorImpl.h>

#include <functional>
#include <memory>
#include <typeinfo>
#include <vector>

#include "ordo/tensor.h"

namespace ordo::torch_device {

// One view op as aliasing needs it: the view of a base value, and the base
// value with the view's elements replaced by a new view value.
struct ViewStep {
  std::function<ordo::Tensor(const ordo::Tensor& base)> view_of;
  std::function<ordo::Tensor(const ordo::Tensor& base, const ordo::Tensor& view)> base_with;
};

class XlaTensorImpl final : public c10::TensorImpl {
 public:
  explicit XlaTensorImpl(ordo::Tensor value);
  // An empty tensor of a dtype ordo cannot hold (batch norm's uint8
  // reserve space): no element is ever read, so only its dtype is shown.
  XlaTensorImpl(ordo::Tensor empty_value, c10::ScalarType shown_as);
  ~XlaTensorImpl() override;

  // The current value: an alias another alias wrote to catches up first.
  const ordo::Tensor& value() const {
    if (aliases_ != nullptr && seen_writes_ != aliases_->writes) catch_up();
    return value_;
  }
  // Writes value (an in-place op, a copy_ into it) to this tensor and,
  // through its view steps, to its base and every alias; sizes and dtype
  // follow the value. A view keeps its shape. The other aliases' values
  // are dropped: a reference value() gave for one of them ends here.
  void set_value(ordo::Tensor value);
  // A new tensor whose value is step's view of this one's, aliasing it.
  c10::intrusive_ptr<XlaTensorImpl> view(const ViewStep& step) const;
  // A new tensor of this one's value and view steps, aliasing it (detach).
  c10::intrusive_ptr<XlaTensorImpl> alias() const;
  // Makes this tensor step's view of what it was (t_, unsqueeze_, ...).
  void become_view(const ViewStep& step);
  // Makes this tensor an alias of source, with its value (set_).
  void become_alias_of(const XlaTensorImpl& source);

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const override;
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const override;
  // `tensor.data = other`: this tensor becomes an alias of other.
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override;
  // A storage of no bytes that aliases share, and only they: for
  // is_alias_of (DDP's reducer asks it of each gradient and its bucket).
  // data_ptr() still raises.
  const c10::Storage& storage() const override;

 private:
  // What a tensor's aliases share: the base value, a count of writes, and
  // the aliases themselves (a write drops their values, which would
  // otherwise be materialized at every step until read).
  struct Aliases {
    ordo::Tensor base;
    uint64_t writes = 0;
    std::vector<const XlaTensorImpl*> members;
    c10::Storage storage;  // made when first asked for
  };
  using ViewPath = std::vector<ViewStep>;

  void refresh_metadata();
  void catch_up() const;
  const std::shared_ptr<Aliases>& shared_aliases() const;
  // Joins source's aliases with source's view path and its value.
  void join(const XlaTensorImpl& source, std::shared_ptr<const ViewPath> path);
  void leave_aliases();
  void stand_alone() const;
  void take_value(ordo::Tensor value);
  template <typename Version>
  c10::intrusive_ptr<c10::TensorImpl> detached_copy(Version&& version, bool allow_metadata_change) const;

  mutable ordo::Tensor value_;
  // Null while no view or detached copy of this tensor exists.
  mutable std::shared_ptr<Aliases> aliases_;
  // The view steps from the aliases' base to this tensor; null for the base.
  mutable std::shared_ptr<const ViewPath> path_;
  mutable uint64_t seen_writes_ = 0;
};

// impl as an XlaTensorImpl, or nullptr. The class is final, so its exact
// type decides: a comparison, where dynamic_cast cost every op's operands
// about 85 instructions each.
inline XlaTensorImpl* as_xla_impl(c10::TensorImpl* impl) {
  return impl != nullptr && typeid(*impl) == typeid(XlaTensorImpl) ? static_cast<XlaTensorImpl*>(impl) : nullptr;
}

}  // namespace ordo::torch_device
