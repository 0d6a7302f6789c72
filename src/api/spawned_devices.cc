#include "api/spawned_devices.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "core/interrupt.h"
#include "ordo/collectives.h"
#include "ordo/error.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo::api {
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

// What a spawn tells the communicator about its devices (see the header).
// Never throws (a spawn thread would end the process), and says nothing
// once the runtime the spawn started on is gone: asking for it would start
// a runtime.
class DeviceNews {
 public:
  DeviceNews() : generation_(runtime::get().generation()) {}

  void failed(int index, const std::string& reason) const noexcept {
    tell([&] { mark_device_failed(index, reason); });
  }
  void returned(int index) const noexcept {
    tell([&] { mark_device_absent(index, "its spawn function returned"); });
  }
  void interrupted(int index, const std::string& reason) const noexcept {
    tell([&] { interrupt_device(index, reason); });
  }
  // A spawn of `count` devices starts afresh if it may (see the header);
  // returns why the communicator cannot, if it cannot.
  std::optional<std::string> spawn_starts(int count, int earlier_threads_running) const noexcept {
    std::optional<std::string> why_not;
    tell([&] {
      runtime::Runtime& rt = runtime::get();
      if (earlier_threads_running > 0 || !rt.communicator().out_of_step()) return;
      for (const LocalDevice device : rt.local_devices()) {
        if (device.index() < count) continue;
        if (!rt.device(device).worker().idle() || has_collectives_pending(device)) return;
      }
      why_not = rt.communicator().start_afresh([&rt, count] {
        for (const LocalDevice device : LocalDevices(count)) {
          drop_collectives_left_behind(device, "as a spawn started afresh: its peers went past its collectives");
        }
        for (int index = 0; index < count; ++index) wait_device_ops(index);
        for (const LocalDevice device : rt.local_devices()) rt.device(device).take_failure();
      });
    });
    return why_not;
  }
  // Every wait first, then every clear; a wait that fails (interrupted)
  // still leaves the devices to be cleared.
  void spawn_over(int count) const noexcept {
    bool every_device = false;
    tell([&] { every_device = count == num_devices(); });
    for (int index = 0; every_device && index < count; ++index) tell([&] { wait_device_ops(index); });
    for (int index = 0; index < count; ++index) tell([&] { clear_device_absent(index); });
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

}  // namespace

struct SpawnedDevices::State {
  State(Function function, SpawnOptions spawn_options, int count)
      : fn(std::move(function)), options(std::move(spawn_options)), outcomes(static_cast<size_t>(count)) {}

  // Records what fn threw (first, so that no peer hears of it before),
  // then tells the peers.
  void fail(int index, const std::exception_ptr& error, const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mu);
      outcomes[index].error = error;
      outcomes[index].failed_at = SpawnClock::now();
    }
    news.failed(index, reason);
  }
  void end(int index) {
    {
      std::lock_guard<std::mutex> lock(mu);
      outcomes[index].ended = true;
    }
    ended.notify_all();
  }
  bool all_ended() const {  // with mu held
    return std::all_of(outcomes.begin(), outcomes.end(), [](const SpawnedOutcome& o) { return o.ended; });
  }

  const Function fn;
  const SpawnOptions options;
  const DeviceNews news;
  mutable std::mutex mu;
  std::condition_variable ended;         // an outcome became ended
  std::vector<SpawnedOutcome> outcomes;  // guarded by mu
};

namespace {

thread_local int t_spawned_device = -1;  // the device this thread was spawned for

// Spawned threads still running, of every spawn: one left behind by an
// interrupt still drives its device, so no later spawn starts afresh.
std::atomic<int> g_threads_running{0};

// Ends a spawned thread's count, on every way out of it (the forced
// unwind of pthread_exit included).
struct Uncounted {
  ~Uncounted() { g_threads_running.fetch_sub(1, std::memory_order_acq_rel); }
};

// The body of device `index`'s thread. UndefinedBehaviorSanitizer is off
// here: it takes the catch of abi::__forced_unwind by reference (the only
// way to let pthread_exit unwind through) for a null reference.
__attribute__((no_sanitize("undefined"))) void run_device(SpawnedDevices::State& state, int index) {
  t_spawned_device = index;
  try {
    bind_thread_to_device(index);
    DeviceGuard on(index);
    state.fn(index);
    if (state.options.absence) state.news.returned(index);
  } catch (abi::__forced_unwind&) {  // pthread_exit or cancellation: let it unwind
    const std::string reason = str_cat("the spawn thread of device ", index,
                                       " ended before its function returned (pthread_exit or cancellation)");
    state.fail(index, std::make_exception_ptr(ExecutionError(reason)), reason);
    state.end(index);
    throw;
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    state.fail(index, error, state.options.failure_reason_prefix + describe_exception(error));
  }
  state.end(index);
}

}  // namespace

SpawnedDevices::SpawnedDevices(Function fn, int64_t requested, SpawnOptions options) {
  const int devices = num_devices();
  ORDO_ARG_CHECK(requested >= 1 && requested <= devices, "spawn: ", options.count_name, " must be in [1, ", devices,
                 "], got ", requested);
  const int count = static_cast<int>(requested);
  state_ = std::make_shared<State>(std::move(fn), std::move(options), count);
  if (const std::optional<std::string> why_not =
          state_->news.spawn_starts(count, g_threads_running.load(std::memory_order_acquire))) {
    throw CollectiveError(str_cat("spawn cannot start afresh: ", *why_not,
                                  "; shutdown() and init() in every process start again"));
  }
  threads_.reserve(static_cast<size_t>(count));
  for (int index = 0; index < count; ++index) {
    g_threads_running.fetch_add(1, std::memory_order_acq_rel);
    try {
      threads_.emplace_back([state = state_, index] {
        const Uncounted uncounted;
        run_device(*state, index);
      });
    } catch (...) {
      g_threads_running.fetch_sub(1, std::memory_order_acq_rel);
      // The devices that got no thread are gone: their peers fail instead
      // of waiting for them.
      const std::string reason =
          "spawn could not start its thread: " + describe_exception(std::current_exception());
      for (int unstarted = index; unstarted < count; ++unstarted) state_->news.failed(unstarted, reason);
      for (std::thread& thread : threads_) thread.join();
      if (state_->options.absence) state_->news.spawn_over(index);
      throw;
    }
  }
}

SpawnedDevices::~SpawnedDevices() {
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool SpawnedDevices::wait() {
  std::unique_lock<std::mutex> lock(state_->mu);
  while (!state_->all_ended()) {
    if (!has_interrupt_check()) {
      state_->ended.wait(lock);
      continue;
    }
    state_->ended.wait_for(lock, kInterruptPollPeriod);
    lock.unlock();  // the check runs with no lock held
    const bool stop = poll_interrupt();
    lock.lock();
    if (stop && !state_->all_ended()) return false;
  }
  return true;
}

void SpawnedDevices::interrupt(const std::string& reason) {
  for (int index = 0; index < count(); ++index) state_->news.failed(index, reason);
  for (int index = 0; index < count(); ++index) state_->news.interrupted(index, reason);
}

std::vector<int> SpawnedDevices::wait_until(SpawnClock::time_point deadline) {
  std::unique_lock<std::mutex> lock(state_->mu);
  while (!state_->all_ended() && SpawnClock::now() < deadline) {
    state_->ended.wait_until(lock, interrupt_poll_deadline(deadline));
    lock.unlock();
    const bool stop = poll_interrupt();
    lock.lock();
    if (stop) break;
  }
  std::vector<int> running;
  for (int index = 0; index < count(); ++index) {
    if (!state_->outcomes[index].ended) running.push_back(index);
  }
  return running;
}

std::vector<SpawnedOutcome> SpawnedDevices::outcomes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->outcomes;
}

std::vector<SpawnedOutcome> SpawnedDevices::finish() {
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  if (state_->options.absence) state_->news.spawn_over(count());
  return outcomes();
}

void SpawnedDevices::abandon() {
  const std::vector<SpawnedOutcome> now = outcomes();
  for (int index = 0; index < count(); ++index) {
    if (!threads_[index].joinable()) continue;
    if (now[index].ended) {
      threads_[index].join();  // a moment: it only lets go of the state
    } else {
      threads_[index].detach();
    }
  }
}

int spawned_device_of_this_thread() { return t_spawned_device; }

int spawned_threads_running() { return g_threads_running.load(std::memory_order_acquire); }

int first_failure(const std::vector<SpawnedOutcome>& outcomes) {
  int first = -1;
  for (int index = 0; index < static_cast<int>(outcomes.size()); ++index) {
    if (outcomes[index].error && (first < 0 || outcomes[index].failed_at < outcomes[first].failed_at)) {
      first = index;
    }
  }
  return first;
}

}  // namespace ordo::api
