// Random numbers made on the device, from the device's own generator
// (ordo/random.h: torch.manual_seed in a replica seeds its device), each
// draw's seed an operand of the graph: a new draw compiles nothing new.
// A torch.Generator passed in is not the device's and is refused.
#include <cmath>

#include <torch/library.h>

#include "ordo/random.h"
#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

void check_no_generator(const c10::optional<at::Generator>& generator, const char* op) {
  TORCH_CHECK(!generator.has_value() || !generator->defined(), op,
              ": a torch.Generator is not the xla device's; seed the device with torch.manual_seed (in its replica)"
              " or xm.set_rng_state");
}

ordo::Tensor uniform_like(const ordo::Tensor& like, double from, double to) {
  const DType dtype = is_floating(like.dtype()) ? like.dtype() : DType::kFloat32;
  return ordo::random_uniform(like.shape(), ordo::next_seed(like.device()), from, to, dtype);
}

at::Tensor uniform(const at::Tensor& self, double from, double to, c10::optional<at::Generator> generator) {
  check_no_generator(generator, "uniform_");
  const ordo::Tensor& x = value_of(self, "uniform_");
  TORCH_CHECK(is_floating(x.dtype()), "uniform_ on the xla device needs a floating tensor, got ",
              self.scalar_type());
  return make_xla(uniform_like(x, from, to));
}

// cos(t) for t in [-pi, pi]: Taylor's series to t^20 in Horner's form
// (ordo has no trigonometric op); its error, pi^22 / 22!, is below 1e-10.
ordo::Tensor cosine(const ordo::Tensor& t) {
  auto c = [&t](double v) { return ordo::full({}, v, t.dtype(), t.device()); };
  ordo::Tensor t2 = ordo::mul(t, t);
  ordo::Tensor sum = c(1);
  for (int k = 10; k >= 1; --k) {
    // sum = 1 - t^2 / ((2k - 1) 2k) * sum
    sum = ordo::sub(c(1), ordo::mul(ordo::mul(t2, c(1.0 / ((2.0 * k - 1) * 2.0 * k))), sum));
  }
  return sum;
}

// Box-Muller from two uniform draws.
at::Tensor normal(const at::Tensor& self, double mean, double std, c10::optional<at::Generator> generator) {
  check_no_generator(generator, "normal_");
  TORCH_CHECK(std >= 0, "normal expects std >= 0.0, but found std ", std);
  const ordo::Tensor& x = value_of(self, "normal_");
  TORCH_CHECK(is_floating(x.dtype()), "normal_ on the xla device needs a floating tensor, got ", self.scalar_type());
  auto c = [&x](double v) { return ordo::full({}, v, x.dtype(), x.device()); };
  // 1 - u is in (0, 1]: its log is finite.
  ordo::Tensor u1 = ordo::sub(c(1), uniform_like(x, 0, 1));
  ordo::Tensor radius = ordo::sqrt(ordo::mul(c(-2), ordo::log(u1)));
  // cos(2 pi u2) = -cos(t) for t = 2 pi u2 - pi in [-pi, pi); the sign
  // does not matter (the distribution is symmetric).
  ordo::Tensor t = ordo::sub(ordo::mul(c(2 * M_PI), uniform_like(x, 0, 1)), c(M_PI));
  return make_xla(ordo::add(c(mean), ordo::mul(c(std), ordo::mul(radius, cosine(t)))));
}

at::Tensor bernoulli(const at::Tensor& self, double p, c10::optional<at::Generator> generator) {
  check_no_generator(generator, "bernoulli");
  TORCH_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  const ordo::Tensor& x = value_of(self, "bernoulli");
  ordo::Tensor draws = uniform_like(x, 0, 1);
  return make_xla(ordo::cast(ordo::lt(draws, ordo::full({}, p, draws.dtype(), x.device())), x.dtype()));
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, c10::optional<bool> train) {
  const ordo::Tensor& x = value_of(input, "dropout");
  if (!train.value_or(true) || p == 0) {
    return {make_xla(x), make_xla(ordo::full(x.shape(), true, DType::kBool, x.device()))};
  }
  TORCH_CHECK(p > 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  ordo::Tensor keep = ordo::ge(uniform_like(x, 0, 1), ordo::full({}, p, x.dtype(), x.device()));
  const double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  ordo::Tensor out = ordo::mul(ordo::where(keep, x, ordo::zeros({}, x.dtype(), x.device())),
                               ordo::full({}, scale, x.dtype(), x.device()));
  return {make_xla(out), make_xla(keep)};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  const ordo::Tensor& g = value_of(grad_output, "dropout_backward");
  ordo::Tensor kept = ordo::where(operand(mask, DType::kBool, g.device(), "dropout_backward"), g,
                                  ordo::zeros({}, g.dtype(), g.device()));
  return make_xla(ordo::mul(kept, ordo::full({}, scale, g.dtype(), g.device())));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("uniform", TORCH_FN(uniform));
  m.impl("normal_functional", TORCH_FN(normal));
  m.impl("bernoulli.p", TORCH_FN(bernoulli));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace ordo::torch_device
