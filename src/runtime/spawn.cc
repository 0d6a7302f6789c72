// ordo::spawn and the binding of driver threads to devices.
#include <cxxabi.h>

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "device/cpu_placement.h"
#include "ordo/collectives.h"
#include "ordo/error.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

std::string describe_exception(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Declares a device gone on the way out of a failed spawn thread. Never
// throws: the thread would end the process. If the runtime itself is gone
// (fn shut it down), there are no peers left to tell.
void mark_failed_quietly(int ordinal, const std::string& reason) noexcept {
  try {
    mark_device_failed(ordinal, reason);
  } catch (...) {
  }
}

}  // namespace

void bind_thread_to_device(int device) {
  const int ordinal = runtime::resolve_device(device);
  device::pin_current_thread(
      device::driver_cpu(ordinal, runtime::get().num_devices(), device::usable_cpu_count()));
}

void spawn(const std::function<void(int)>& fn, int count) {
  const int devices = num_devices();
  if (count < 0) count = devices;
  ORDO_ARG_CHECK(count >= 1 && count <= devices, "spawn: count must be in [1, ", devices, "], got ", count);
  std::mutex mu;
  std::exception_ptr first_error;  // guarded by mu
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(count));
  auto join_all = [&threads] {
    for (std::thread& thread : threads) thread.join();
  };
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto run = [&, ordinal] {
      try {
        bind_thread_to_device(ordinal);
        DeviceGuard on(ordinal);
        fn(ordinal);
      } catch (abi::__forced_unwind&) {  // pthread_exit or cancellation: let it unwind
        mark_failed_quietly(ordinal, "its spawn thread was cancelled");
        throw;
      } catch (...) {
        const std::exception_ptr error = std::current_exception();
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!first_error) first_error = error;
        }
        mark_failed_quietly(ordinal, "its spawn function threw: " + describe_exception(error));
      }
    };
    try {
      threads.emplace_back(run);
    } catch (...) {
      // The devices that got no thread are gone: their peers fail instead
      // of waiting for them.
      const std::string reason =
          "spawn could not start its thread: " + describe_exception(std::current_exception());
      for (int unstarted = ordinal; unstarted < count; ++unstarted) mark_failed_quietly(unstarted, reason);
      join_all();
      throw;
    }
  }
  join_all();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ordo
