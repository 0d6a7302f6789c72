// Builders of batch norm. Training is one fused op over x, weight and bias
// (BatchNormTraining: statistics and normalization per channel while the
// channel is in cache) whose gradient is another (BatchNormTrainingBackward);
// evaluation is x * scale + shift with per-channel scale and shift, composed
// of ops whose rules give its gradients.
#include "core/source_location.h"
#include "lazy/pool_ops.h"
#include "lazy/trace.h"
#include "ordo/autograd.h"
#include "ordo/nn_ops.h"

namespace ordo {
namespace {

void check_input(const Tensor& x) {
  ORDO_ARG_CHECK(x.defined(), "batch_norm: the input tensor is undefined");
  ORDO_ARG_CHECK(x.dim() >= 2, "batch_norm: the input must be (N, C, ...), got shape ", shape_to_string(x.shape()));
  ORDO_DTYPE_CHECK(is_floating(x.dtype()), "batch_norm: needs a float tensor, got ",
                   dtype_name(x.dtype()));
  ORDO_ARG_CHECK(x.shape()[1] > 0, "batch_norm: the input has no channels, shape ", shape_to_string(x.shape()));
}

// A per-channel tensor (undefined allowed): shape (C), x's dtype.
void check_channels(const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  ORDO_ARG_CHECK(t.dim() == 1 && t.shape()[0] == x.shape()[1], "batch_norm: ", name,
                 " must hold one value per channel (", x.shape()[1], "), got shape ", shape_to_string(t.shape()));
  ORDO_DTYPE_CHECK(t.dtype() == x.dtype(), "batch_norm: ", name, " must be ", dtype_name(x.dtype()), " as the input, got ",
                   dtype_name(t.dtype()));
}

int64_t values_per_channel(const Tensor& x) { return x.numel() / x.shape()[1]; }

// A (C) tensor shaped to broadcast over x's channel dim: (C, 1, ...).
Tensor per_channel(const Tensor& t, const Tensor& x) {
  Shape shape(static_cast<size_t>(x.dim() - 1), 1);
  shape[0] = x.shape()[1];
  return reshape(t, shape);
}

Tensor or_filled(const Tensor& t, double value, const Tensor& x) {
  return t.defined() ? t : full({x.shape()[1]}, value, x.dtype(), x.device());
}

void update_running(Tensor& running, const Tensor& batch, double momentum) {
  running.assign(running * (1.0 - momentum) + batch.detach() * momentum);
}

}  // namespace

BatchNormTraining batch_norm_training(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                      Caller caller) {
  const ScopedUserLocation here(caller);
  check_input(x);
  check_channels("weight", weight, x);
  check_channels("bias", bias, x);
  ORDO_ARG_CHECK(values_per_channel(x) > 1, "batch_norm: expected more than 1 value per channel when training, got "
                 "input of shape ", shape_to_string(x.shape()));
  ORDO_ARG_CHECK(eps >= 0, "batch_norm: eps must not be negative, got ", eps);
  const Tensor w = or_filled(weight, 1, x);
  const Tensor b = or_filled(bias, 0, x);
  const Tensor* in[] = {&x, &w, &b};
  lazy::common_device("batch_norm", in);
  const ir::ValueType stat{x.dtype(), {x.shape()[1]}};
  lazy::Tensors out = lazy::trace(ir::OpKind::kBatchNormTraining, in, {{x.dtype(), x.shape()}, stat, stat},
                                  ir::encode<ir::OpKind::kBatchNormTraining>({eps}));
  return {out[0], out[1], out[2]};
}

Tensor batch_norm(const Tensor& x, Tensor& running_mean, Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps, Caller caller) {
  const ScopedUserLocation here(caller);
  check_input(x);
  check_channels("running_mean", running_mean, x);
  check_channels("running_var", running_var, x);
  ORDO_ARG_CHECK(running_mean.defined() == running_var.defined(),
                 "batch_norm: give both running_mean and running_var, or neither");
  if (training) {
    BatchNormTraining out = batch_norm_training(x, weight, bias, eps);
    if (running_mean.defined()) {
      const double n = static_cast<double>(values_per_channel(x));
      NoGradGuard no_grad;
      update_running(running_mean, out.mean, momentum);
      update_running(running_var, out.var * (n / (n - 1)), momentum);
    }
    return out.output;
  }
  ORDO_ARG_CHECK(running_mean.defined(), "batch_norm: running_mean and running_var must be given in evaluation");
  check_channels("weight", weight, x);
  check_channels("bias", bias, x);
  // torch's order: scale = weight / sqrt(var + eps), shift = bias - mean * scale.
  Tensor scale = rsqrt(running_var + eps);
  if (weight.defined()) scale = scale * weight;
  Tensor shift = -(running_mean * scale);
  if (bias.defined()) shift = shift + bias;
  return x * per_channel(scale, x) + per_channel(shift, x);
}

namespace lazy {

BatchNormGradients batch_norm_training_backward(const Tensor& grad_output, const Tensor& x, const Tensor& weight,
                                                const Tensor& grad_mean, const Tensor& grad_var, double eps) {
  const Tensor* in[] = {&grad_output, &x, &weight, &grad_mean, &grad_var};
  const ir::ValueType stat{x.dtype(), {x.shape()[1]}};
  Tensors out = trace(ir::OpKind::kBatchNormTrainingBackward, in, {{x.dtype(), x.shape()}, stat, stat},
                      ir::encode<ir::OpKind::kBatchNormTrainingBackward>({eps}));
  return {out[0], out[1], out[2]};
}

}  // namespace lazy
}  // namespace ordo
