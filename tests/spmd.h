// Running one function on every device at once, a thread per device, as an
// SPMD program does.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ordo/ordo.h"
#include "api/spawned_devices.h"

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

// Calls fn(device) on a thread per device (that device current, the thread
// bound to it) and returns each device's value or exception, by ordinal. A
// device whose fn throws is marked failed, as ordo's spawn does, so its
// peers fail instead of waiting. Unlike spawn, a device whose fn returned
// is not absent: a test may let its peers wait for it (and time out).
template <typename T>
std::vector<DeviceOutcome<T>> run_on_devices(int devices, const std::function<T(int)>& fn) {
  std::vector<DeviceOutcome<T>> outcomes(static_cast<size_t>(devices));
  api::SpawnOptions options;
  options.failure_reason_prefix = "its thread raised: ";
  options.absence = false;
  api::SpawnedDevices spawned([&fn, &outcomes](int d) { outcomes[d].value = fn(d); }, devices, options);
  const std::vector<api::SpawnedOutcome> ended = spawned.finish();
  for (int d = 0; d < devices; ++d) outcomes[d].error = ended[d].error;
  return outcomes;
}

// The message of the error of class E that a device raised, or what it did
// instead ("wrong exception: ...", "no exception").
template <typename E, typename T>
std::string error_of(const DeviceOutcome<T>& outcome) {
  try {
    outcome.get();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "no exception";
}

}  // namespace ordo::testing
