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

// What a spawn tells the runtime about its devices. Never throws (a spawn
// thread would end the process), and says nothing once the runtime the
// spawn started on is gone (fn may shut it down, and start another): it has
// no peers left to tell, and asking for it would start a runtime.
class DeviceNews {
 public:
  DeviceNews() : generation_(runtime::get().generation()) {}

  // Its thread died: gone for good.
  void failed(int ordinal, const std::string& reason) const noexcept {
    tell([&] { mark_device_failed(ordinal, reason); });
  }
  // Its function returned: nothing drives it now, and a peer waiting for a
  // collective it never traced fails at once rather than at its timeout.
  void returned(int ordinal) const noexcept {
    tell([&] { mark_device_absent(ordinal, "its spawn function returned"); });
  }
  // Once every spawn thread ended: the devices may be driven again (by the
  // caller, or by another spawn). A spawn of every device first lets the
  // waits that their absence decides end, that is, lets every device run
  // what it queued. With fewer devices it cannot: a queued collective may
  // need a device that the caller drives only after spawn returns.
  void spawn_over(int count) const noexcept {
    tell([&] {
      if (count == num_devices()) {
        for (int ordinal = 0; ordinal < count; ++ordinal) wait_device_ops(ordinal);
      }
      for (int ordinal = 0; ordinal < count; ++ordinal) clear_device_absent(ordinal);
    });
  }

 private:
  template <typename Tell>
  void tell(const Tell& news) const noexcept {
    try {
      if (is_initialized() && runtime::get().generation() == generation_) news();
    } catch (...) {
    }
  }

  const uint64_t generation_;
};

// The first exception of a spawn's threads.
class FirstError {
 public:
  void record(const std::exception_ptr& error) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_) first_ = error;
  }
  void rethrow_if_any() {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr first_;
};

// The body of device `ordinal`'s spawn thread. UndefinedBehaviorSanitizer
// is off here: it takes the catch of abi::__forced_unwind by reference (the
// only way to let pthread_exit unwind through) for a null reference.
__attribute__((no_sanitize("undefined"))) void run_spawned(const std::function<void(int)>& fn, int ordinal,
                                                           const DeviceNews& news, FirstError& errors) {
  try {
    bind_thread_to_device(ordinal);
    DeviceGuard on(ordinal);
    fn(ordinal);
    news.returned(ordinal);
  } catch (abi::__forced_unwind&) {  // pthread_exit or cancellation: let it unwind
    const std::string reason = str_cat("the spawn thread of device ", ordinal,
                                       " ended before its function returned (pthread_exit or cancellation)");
    errors.record(std::make_exception_ptr(ExecutionError(reason)));
    news.failed(ordinal, reason);
    throw;
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    errors.record(error);
    news.failed(ordinal, "its spawn function threw: " + describe_exception(error));
  }
}

}  // namespace

void bind_thread_to_device(int device) {
  runtime::Runtime& rt = runtime::get();
  const comm::Topology& topology = rt.topology();
  // The host's processes share its CPUs: placed by the device's position
  // among the host's devices.
  const int host_ordinal = topology.host_ordinal(rt.global_ordinal(runtime::resolve_device(device)));
  device::pin_current_thread(
      device::driver_cpu(host_ordinal, topology.host_devices(), device::usable_cpu_count()));
}

void spawn(const std::function<void(int)>& fn, int count) {
  const int devices = num_devices();
  if (count < 0) count = devices;
  ORDO_ARG_CHECK(count >= 1 && count <= devices, "spawn: count must be in [1, ", devices, "], got ", count);
  const DeviceNews news;
  FirstError errors;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(count));
  auto join_all = [&threads] {
    for (std::thread& thread : threads) thread.join();
  };
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    try {
      threads.emplace_back([&fn, &news, &errors, ordinal] { run_spawned(fn, ordinal, news, errors); });
    } catch (...) {
      // The devices that got no thread are gone: their peers fail instead
      // of waiting for them.
      const std::string reason =
          "spawn could not start its thread: " + describe_exception(std::current_exception());
      for (int unstarted = ordinal; unstarted < count; ++unstarted) news.failed(unstarted, reason);
      join_all();
      news.spawn_over(ordinal);
      throw;
    }
  }
  join_all();
  news.spawn_over(count);
  errors.rethrow_if_any();
}

}  // namespace ordo
