// Running one function on every device at once, a thread per device, as an
// SPMD program does.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "ordo/ordo.h"

namespace ordo::testing {

template <typename T>
struct DeviceOutcome {
  std::optional<T> value;
  std::exception_ptr error;

  // The value; rethrows the device's exception if it raised one.
  const T& get() const {
    if (error) std::rethrow_exception(error);
    return *value;
  }
};

// Calls fn(device) on a thread per device (that device current) and returns
// each device's value or exception, by ordinal. A device whose fn throws is
// marked failed, as ordo's spawn does, so its peers fail instead of waiting.
template <typename T>
std::vector<DeviceOutcome<T>> run_on_devices(int devices, const std::function<T(int)>& fn) {
  std::vector<DeviceOutcome<T>> outcomes(static_cast<size_t>(devices));
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d) {
    threads.emplace_back([d, &fn, &outcomes] {
      try {
        DeviceGuard on(d);
        outcomes[d].value = fn(d);
      } catch (const std::exception& e) {
        outcomes[d].error = std::current_exception();
        mark_device_failed(d, std::string("its thread raised: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes;
}

}  // namespace ordo::testing
