// Tensors made from host data, constants, ranges and seeded random numbers.
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>
#include <utility>

#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "core/counter_random.h"
#include "core/half_float.h"
#include "device/buffer.h"
#include "core/metrics.h"
#include "lazy/trace.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

// Tensors made here on the calling thread: a failed allocation names the
// op and the device, as the executor does for the ones made when graphs run.
std::shared_ptr<device::Buffer> allocate_on(std::string_view what, LocalDevice device, DType dtype,
                                            const Shape& shape) {
  try {
    return device::allocate_buffer(dtype, shape);
  } catch (const OutOfMemoryError& e) {
    throw_error<OutOfMemoryError>(what, " on device ", device, ": ", e.what());
  }
}

ir::ScalarAttr scalar_attr(const Scalar& value) { return {value.to_int(), value.to_double()}; }

std::string scalar_to_string(Scalar value) {
  return value.is_floating() ? str_cat(value.to_double()) : str_cat(value.to_int());
}

[[noreturn]] void refuse_range(Scalar start, Scalar stop, Scalar step, const std::string& count) {
  throw_error<InvalidArgument>("arange: [", scalar_to_string(start), ", ", scalar_to_string(stop),
                               ") by step ", scalar_to_string(step), " has ", count,
                               " elements, more than int64 can hold (", INT64_MAX, ")");
}

// numpy's ceil((stop - start) / step) for finite numbers and a nonzero step,
// refused past int64. Exact for integers, whose difference a double would
// round (from 2^60 to 2^60 + 3 would be empty).
int64_t range_length(Scalar start, Scalar stop, Scalar step) {
  if (!start.is_floating() && !stop.is_floating() && !step.is_floating()) {
    // Their magnitudes fit uint64: the span's is below 2^64, the step's at least 1.
    const __int128 span = static_cast<__int128>(stop.to_int()) - start.to_int();
    const __int128 by = step.to_int();
    if ((span > 0) != (by > 0) || span == 0) return 0;
    const auto distance = static_cast<uint64_t>(span > 0 ? span : -span);
    const auto stride = static_cast<uint64_t>(by > 0 ? by : -by);
    const uint64_t count = distance / stride + (distance % stride != 0);
    if (count > static_cast<uint64_t>(INT64_MAX)) refuse_range(start, stop, step, str_cat(count));
    return static_cast<int64_t>(count);
  }
  const double span = (stop.to_double() - start.to_double()) / step.to_double();
  // 2^63 is exact in double; a span below it has a ceiling below it too.
  if (span >= 9223372036854775808.0) refuse_range(start, stop, step, str_cat(span));
  return span > 0 ? static_cast<int64_t>(std::ceil(span)) : 0;
}

// sample(i, TypeTag<T>) is element i as T.
template <typename Sample>
Tensor random_tensor(std::string_view what, const Shape& shape, DType dtype, int device, Sample sample) {
  checked_shape_size(what, shape, dtype);
  ORDO_DTYPE_CHECK(is_floating(dtype), what, ": dtype must be a float dtype, got ", dtype_name(dtype));
  const LocalDevice local = runtime::resolve_device(device);
  auto buffer = allocate_on(what, local, dtype, shape);
  for (int64_t i = 0; i < buffer->numel; ++i) {
    const auto counter = static_cast<uint64_t>(i);
    if (dtype == DType::kBFloat16) {
      // A float32 draw rounded, as torch draws its 16-bit floats.
      buffer->mutable_data<BFloat16>()[i] = float_to_half<BFloat16>(sample(counter, std::type_identity<float>{}));
    } else if (dtype == DType::kFloat16) {
      buffer->mutable_data<Float16>()[i] = float_to_half<Float16>(sample(counter, std::type_identity<float>{}));
    } else if (dtype == DType::kFloat32) {
      buffer->mutable_data<float>()[i] = sample(counter, std::type_identity<float>{});
    } else {
      buffer->mutable_data<double>()[i] = sample(counter, std::type_identity<double>{});
    }
  }
  return lazy::tensor_from_data(device::DeviceData::ready(std::move(buffer)), local);
}

// Integer ranges step exactly in int64 and are stored in dtype: the first
// and the last value must both fit (the values between lie between them).
void check_integer_range(Scalar start, Scalar step, int64_t length, DType dtype) {
  check_fits("arange", start, dtype);
  // In 128 bits: (length - 1) * step may pass int64 on the way to a last
  // value that fits (from INT64_MIN by INT64_MAX).
  const __int128 last = static_cast<__int128>(start.to_int()) + static_cast<__int128>(length - 1) * step.to_int();
  if (last < std::numeric_limits<int64_t>::min() || last > std::numeric_limits<int64_t>::max()) {
    throw_error<OutOfRange>("arange: the last value of the range is out of bounds for ", dtype_name(dtype));
  }
  check_fits("arange", static_cast<int64_t>(last), dtype);
}

}  // namespace

Tensor from_host(const void* data, DType dtype, const Shape& shape, int device, Caller caller) {
  const ScopedUserLocation here(caller);
  checked_shape_size("from_host", shape, dtype);
  const LocalDevice local = runtime::resolve_device(device);
  metrics::ScopedTimer timer(metrics::Metric::kTransferToDeviceTime, local.index());
  auto buffer = allocate_on("from_host", local, dtype, shape);
  if (buffer->nbytes() != 0) std::memcpy(buffer->storage.get(), data, buffer->nbytes());
  if (dtype == DType::kBool) {
    // Kernels rely on bools being exactly 0 or 1.
    auto* bytes = reinterpret_cast<uint8_t*>(buffer->storage.get());
    for (int64_t i = 0; i < buffer->numel; ++i) bytes[i] = bytes[i] != 0;
  }
  return lazy::tensor_from_data(device::DeviceData::ready(std::move(buffer)), local);
}

Tensor full(const Shape& shape, Scalar value, DType dtype, int device, Caller caller) {
  const ScopedUserLocation here(caller);
  check_fits("full", value, dtype);
  return lazy::trace_leaf(ir::OpKind::kFull, runtime::resolve_device(device), {dtype, shape},
                          ir::encode<ir::OpKind::kFull>({scalar_attr(value)}));
}

Tensor zeros(const Shape& shape, DType dtype, int device, Caller caller) {
  return full(shape, 0, dtype, device, caller);
}
Tensor ones(const Shape& shape, DType dtype, int device, Caller caller) {
  return full(shape, 1, dtype, device, caller);
}

Tensor arange(Scalar start, Scalar stop, Scalar step, DType dtype, int device, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_DTYPE_CHECK(dtype != DType::kBool, "arange: dtype bool is not a range type");
  const std::pair<const char*, Scalar> numbers[] = {{"start", start}, {"stop", stop}, {"step", step}};
  for (const auto& [name, value] : numbers) {
    ORDO_ARG_CHECK(std::isfinite(value.to_double()), "arange: ", name, " must be finite, got ",
                   value.to_double());
  }
  ORDO_ARG_CHECK(step.to_double() != 0.0, "arange: step must not be zero");
  ORDO_ARG_CHECK(is_floating(dtype) || (!start.is_floating() && !step.is_floating()),
                 "arange: an integer range needs integer start and step");
  const int64_t length = range_length(start, stop, step);
  if (is_integral(dtype) && length > 0) check_integer_range(start, step, length, dtype);
  return lazy::trace_leaf(ir::OpKind::kArange, runtime::resolve_device(device), {dtype, {length}},
                          ir::encode<ir::OpKind::kArange>({scalar_attr(start), scalar_attr(step)}));
}

Tensor rand_uniform(const Shape& shape, uint64_t seed, double low, double high, DType dtype,
                    int device, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_ARG_CHECK(low <= high, "rand_uniform: low ", low, " is above high ", high);
  return random_tensor("rand_uniform", shape, dtype, device, [&]<typename T>(uint64_t i, std::type_identity<T>) {
    return uniform_sample<T>(seed, i, low, high);
  });
}

Tensor rand_normal(const Shape& shape, uint64_t seed, double mean, double stddev, DType dtype,
                   int device, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_ARG_CHECK(stddev >= 0, "rand_normal: stddev must not be negative, got ", stddev);
  // Box-Muller over two independent uniforms per element.
  return random_tensor("rand_normal", shape, dtype, device, [&]<typename T>(uint64_t i, std::type_identity<T>) {
    const double u1 = 1.0 - unit_uniform(seed, 2 * i);  // (0, 1]: log is finite
    const double u2 = unit_uniform(seed, 2 * i + 1);
    return static_cast<T>(mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
  });
}

}  // namespace ordo
