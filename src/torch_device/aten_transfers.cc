// Tensors onto, off and between xla devices: factories, copies, reading a
// value.
#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

DType dtype_or_torch_default(c10::optional<at::ScalarType> dtype) {
  return dtype_of(dtype.value_or(c10::get_default_dtype_as_scalartype()));
}

int device_or_current(c10::optional<at::Device> device) {
  return device.has_value() ? device_index_of(*device) : ordo::current_device();
}

// An xla tensor's memory is never read before it is written, so "empty"
// is zeros: a defined value, and a constant
// that fusion folds into whatever writes it next.
at::Tensor empty(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
                 c10::optional<at::Device> device, c10::optional<bool>, c10::optional<at::MemoryFormat>) {
  const Shape shape = ints_of(size);
  if (dtype.has_value() && !holds(*dtype) && shape_numel(shape) == 0) {
    // Nothing to hold: a placeholder PyTorch passes along (batch norm's reserve).
    return make_empty_xla(ordo::zeros(shape, DType::kInt32, device_or_current(device)), *dtype);
  }
  return make_xla(ordo::zeros(shape, dtype_or_torch_default(dtype), device_or_current(device)));
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                         c10::optional<bool> pin_memory) {
  return empty(size, dtype, layout, device, pin_memory, c10::nullopt);
}

// CPU -> xla (upload), xla -> CPU (download), xla -> xla (a cast, or a
// move to another device through the host).
at::Tensor to_copy(const at::Tensor& self, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
                   c10::optional<at::Device> device, c10::optional<bool>, bool, c10::optional<at::MemoryFormat>) {
  const at::ScalarType target_type = dtype.value_or(self.scalar_type());
  const at::Device target = device.value_or(self.device());
  if (!is_xla(self)) {
    at::Tensor cpu = self.scalar_type() == target_type ? self : self.to(target_type);
    return make_xla(upload(cpu, device_index_of(target)));
  }
  const ordo::Tensor& value = value_of(self, "to");
  if (target.type() != c10::DeviceType::XLA) return download(value).to(target, target_type);
  const int to_device = device_index_of(target);
  if (to_device == value.device()) return make_xla(cast_to(value, dtype_of(target_type)));
  return make_xla(upload(download(value).to(target_type), to_device));
}

// What at::native::cpu_fallback and Tensor.copy_ between devices call:
// self's contents into dst.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool) {
  if (!is_xla(dst)) {
    dst.copy_(download(value_of(self, "copy_")));  // broadcasts and converts, as torch's copy_
    return dst;
  }
  const ordo::Tensor& old = value_of(dst, "copy_");
  ordo::Tensor value = is_xla(self) ? value_of(self, "copy_") : upload(self.to(dst.scalar_type()), old.device());
  TORCH_CHECK(value.shape() == old.shape() || dst.numel() == 0, "copy_: shapes differ: ", self.sizes(), " into ",
              dst.sizes());
  set_value_of(dst, cast_to(ordo::broadcast_to(value, old.shape()), old.dtype()));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (is_xla(dst)) {
    ordo::Tensor value =
        is_xla(self) ? value_of(self, "copy_") : upload(self.to(dst.scalar_type()), value_of(dst, "copy_").device());
    set_value_of(dst, cast_to(value, dtype_of(dst.scalar_type())));
    return dst;
  }
  return copy_from(self, dst, false);
}

// The functional form of copy_ (in_place.cc): src's values in self's
// dtype and shape (src broadcasts).
at::Tensor copy(const at::Tensor& self, const at::Tensor& src, bool) {
  const ordo::Tensor& old = value_of(self, "copy_");
  ordo::Tensor value = is_xla(src) ? value_of(src, "copy_") : upload(src.to(self.scalar_type()), old.device());
  // From another device: through the host, as torch_xla moves it.
  if (value.device() != old.device()) value = upload(download(value), old.device());
  return make_xla(cast_to(ordo::broadcast_to(value, old.shape()), old.dtype()));
}

// A new value of self's elements: every xla value is immutable, so the same
// value in a new tensor.
at::Tensor same_value(const at::Tensor& self) { return make_xla(value_of(self, "clone")); }
at::Tensor clone(const at::Tensor& self, c10::optional<at::MemoryFormat>) { return same_value(self); }

// detach and alias: a tensor sharing self's writes.
at::Tensor alias(const at::Tensor& self) { return at::Tensor(xla_impl_of(self, "alias").alias()); }

// set_(source): self becomes an alias of source.
at::Tensor& set_source(at::Tensor& self, const at::Tensor& source) {
  xla_impl_of(self, "set_").become_alias_of(xla_impl_of(source, "set_"));
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return download(value_of(self, "item")).item();
}

ordo::Tensor filled(const at::Tensor& self, const at::Scalar& value) {
  const ordo::Tensor& old = value_of(self, "fill_");
  return ordo::full(old.shape(), scalar_of(value), old.dtype(), old.device());
}

ordo::Tensor filled_from(const at::Tensor& self, const at::Tensor& value) {
  const ordo::Tensor& old = value_of(self, "fill_");
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return ordo::broadcast_to(operand(value, old.dtype(), old.device(), "fill_"), old.shape());
}

at::Tensor fill(const at::Tensor& self, const at::Scalar& value) { return make_xla(filled(self, value)); }
at::Tensor fill_tensor(const at::Tensor& self, const at::Tensor& value) { return make_xla(filled_from(self, value)); }
at::Tensor zero(const at::Tensor& self) { return fill(self, 0); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("empty.memory_format", TORCH_FN(empty));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_to_copy", TORCH_FN(to_copy));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("copy", TORCH_FN(copy));
  m.impl("clone", TORCH_FN(clone));
  m.impl("alias_copy", TORCH_FN(same_value));
  m.impl("detach_copy", TORCH_FN(same_value));
  m.impl("alias", TORCH_FN(alias));
  m.impl("detach", TORCH_FN(alias));
  m.impl("set_.source_Tensor", TORCH_FN(set_source));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("fill.Scalar", TORCH_FN(fill));
  m.impl("fill.Tensor", TORCH_FN(fill_tensor));
  m.impl("zero", TORCH_FN(zero));
}

}  // namespace ordo::torch_device
