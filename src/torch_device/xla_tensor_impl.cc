#include "torch_device/xla_tensor_impl.h"

#include <algorithm>
#include <utility>

#include "torch_device/dtypes.h"
#include "torch_device/python_objects.h"

namespace ordo::torch_device {

namespace {

c10::DispatchKeySet xla_keys() {
  // The backend key; TensorImpl adds AutogradXLA and ADInplaceOrView.
  return c10::DispatchKeySet(c10::DispatchKey::XLA);
}

// The value as the device holds it: float32 rounded to bfloat16 under
// XLA_USE_BF16 (dtypes.h).
ordo::Tensor held(ordo::Tensor value) {
  const DType dtype = held_dtype(value.dtype());
  return dtype == value.dtype() ? value : ordo::cast(value, dtype);
}

caffe2::TypeMeta shown_type_of(const ordo::Tensor& value) {
  return c10::scalarTypeToTypeMeta(shown_scalar_type_of(value.dtype()));
}

}  // namespace

XlaTensorImpl::XlaTensorImpl(ordo::Tensor value)
    : c10::TensorImpl(xla_keys(), shown_type_of(value), xla_device_of(value.device())),
      value_(held(std::move(value))) {
  // No storage to hand out: data_ptr() and storage() raise instead of
  // giving PyTorch a pointer it would write through.
  set_storage_access_should_throw();
  refresh_metadata();
}

XlaTensorImpl::XlaTensorImpl(ordo::Tensor empty_value, c10::ScalarType shown_as)
    : XlaTensorImpl(std::move(empty_value)) {
  TORCH_INTERNAL_ASSERT(value_.numel() == 0);
  data_type_ = c10::scalarTypeToTypeMeta(shown_as);
}

XlaTensorImpl::~XlaTensorImpl() {
  leave_aliases();
  park_python_object(*this);  // before ~TensorImpl would take the GIL for it
}

void XlaTensorImpl::take_value(ordo::Tensor value) {
  // An in-place update keeps the shape, and with it sizes and strides.
  const bool same_shape = value.shape() == value_.shape();
  data_type_ = shown_type_of(value);
  value_ = held(std::move(value));
  if (!same_shape) refresh_metadata();
}

void XlaTensorImpl::set_value(ordo::Tensor value) {
  if (aliases_ == nullptr) {
    take_value(std::move(value));
    return;
  }
  const ordo::Tensor& current = this->value();
  if (value.shape() != current.shape()) {
    // A resize: a base leaves its aliases, as torch gives it new storage.
    TORCH_CHECK(path_ == nullptr, "cannot resize a view of an xla tensor from ", c10::IntArrayRef(current.shape()),
                " to ", c10::IntArrayRef(value.shape()));
    leave_aliases();
    take_value(std::move(value));
    return;
  }
  if (value.dtype() != current.dtype()) value = ordo::cast(value, current.dtype());
  ordo::Tensor base = value;
  if (path_ != nullptr) {
    std::vector<ordo::Tensor> bases{aliases_->base};
    for (size_t i = 0; i + 1 < path_->size(); ++i) bases.push_back((*path_)[i].view_of(bases.back()));
    for (size_t i = path_->size(); i-- > 0;) base = (*path_)[i].base_with(bases[i], base);
  }
  aliases_->base = std::move(base);
  ++aliases_->writes;
  for (const XlaTensorImpl* member : aliases_->members) {
    if (member != this) member->value_ = ordo::Tensor();
  }
  value_ = std::move(value);
  seen_writes_ = aliases_->writes;
}

void XlaTensorImpl::catch_up() const {
  ordo::Tensor value = aliases_->base;
  if (path_ != nullptr) {
    for (const ViewStep& step : *path_) value = step.view_of(value);
  }
  value_ = std::move(value);
  seen_writes_ = aliases_->writes;
}

const std::shared_ptr<XlaTensorImpl::Aliases>& XlaTensorImpl::shared_aliases() const {
  if (aliases_ == nullptr) {
    aliases_ = std::make_shared<Aliases>();
    aliases_->base = value_;
    aliases_->members.push_back(this);
    seen_writes_ = 0;
  }
  return aliases_;
}

void XlaTensorImpl::join(const XlaTensorImpl& source, std::shared_ptr<const ViewPath> path) {
  std::shared_ptr<Aliases> aliases = source.shared_aliases();  // source may be this
  if (aliases != aliases_) {
    leave_aliases();
    aliases_ = std::move(aliases);
    aliases_->members.push_back(this);
  }
  path_ = std::move(path);
  seen_writes_ = aliases_->writes;
}

void XlaTensorImpl::leave_aliases() {
  if (aliases_ == nullptr) return;
  const std::shared_ptr<Aliases> aliases = std::move(aliases_);
  auto& members = aliases->members;
  members.erase(std::find(members.begin(), members.end(), this));
  path_.reset();
  if (members.size() == 1) members.front()->stand_alone();
}

// The last of a group needs no base: no other tensor sees it. Kept, the
// base would be computed at every step for nothing (a weight's gradient,
// left a transposed view by linear's backward, cost a transpose of the
// weight a step, and its copy in memory).
void XlaTensorImpl::stand_alone() const {
  value();  // catches up
  aliases_.reset();
  path_.reset();
}

namespace {

template <class Path, class Step>
std::shared_ptr<const Path> extended(const std::shared_ptr<const Path>& path, const Step& step) {
  auto longer = path == nullptr ? std::make_shared<Path>() : std::make_shared<Path>(*path);
  longer->push_back(step);
  return longer;
}

}  // namespace

c10::intrusive_ptr<XlaTensorImpl> XlaTensorImpl::view(const ViewStep& step) const {
  auto view = c10::make_intrusive<XlaTensorImpl>(step.view_of(value()));
  view->join(*this, extended(path_, step));
  return view;
}

c10::intrusive_ptr<XlaTensorImpl> XlaTensorImpl::alias() const {
  auto copy = c10::make_intrusive<XlaTensorImpl>(value());
  copy->join(*this, path_);
  return copy;
}

void XlaTensorImpl::become_view(const ViewStep& step) {
  ordo::Tensor viewed = step.view_of(value());
  // Only other aliases need the step, to carry writes to the base.
  if (aliases_ != nullptr && aliases_->members.size() > 1) {
    path_ = extended(path_, step);
  } else {
    stand_alone();
  }
  take_value(std::move(viewed));
}

void XlaTensorImpl::become_alias_of(const XlaTensorImpl& source) {
  join(source, source.path_);
  take_value(source.value());
}

void XlaTensorImpl::refresh_metadata() {
  const Shape& shape = value_.shape();
  sizes_and_strides_.set_sizes(c10::IntArrayRef(shape.data(), shape.size()));
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    sizes_and_strides_.stride_at_unchecked(d) = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  storage_offset_ = 0;
  refresh_numel();
  refresh_contiguous();
}

template <typename Version>
c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::detached_copy(Version&& version,
                                                                  bool allow_metadata_change) const {
  auto copy = alias();
  copy_tensor_metadata(this, copy.get(), std::forward<Version>(version), allow_metadata_change);
  return copy;
}

c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::shallow_copy_and_detach(
    const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const {
  return detached_copy(version_counter, allow_tensor_metadata_change);
}

c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::shallow_copy_and_detach(
    c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const {
  return detached_copy(std::move(version_counter), allow_tensor_metadata_change);
}

const c10::Storage& XlaTensorImpl::storage() const {
  c10::Storage& storage = shared_aliases()->storage;
  if (!storage) {
    storage = c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), 0,
                                                                  c10::DataPtr(nullptr, device()), nullptr, false));
  }
  return storage;
}

void XlaTensorImpl::shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) {
  XlaTensorImpl* source = as_xla_impl(impl.get());
  TORCH_CHECK(source != nullptr, "an xla tensor's data can only be set to another xla tensor's");
  copy_tensor_metadata(source, this, version_counter(), allow_tensor_metadata_change());
  become_alias_of(*source);
}

}  // namespace ordo::torch_device
