#include "device/worker.h"

#include <pthread.h>

#include <algorithm>

#include "core/interrupt.h"
#include "device/cpu_placement.h"
#include "device/free_cores.h"

namespace ordo::device {

Worker::Worker(int cpu, std::chrono::microseconds kept_for)
    : cpu_(cpu), kept_for_(kept_for), thread_([this, cpu] { loop(cpu); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::submit(std::function<void()> task, RunBy run_by) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    // Whoever runs a task now takes the next one after it, or (help_until
    // stopping) wakes the worker thread for it. A task for the worker
    // thread ends a keep: the kept tasks come before it.
    wake = !running_task_ && run_by == RunBy::kWorkerThread;
    if (run_by == RunBy::kWorkerThread) kept_until_ = {};
  }
  if (wake) wake_.notify_one();
}

void Worker::drain() { drain_to(0); }

bool Worker::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding() == 0;
}

bool Worker::takes_turns_with_caller() const { return takes_turns_with(cpu_); }

void Worker::drain_to(size_t bound, const char* what, Leftover leftover) {
  std::unique_lock<std::mutex> lock(mu_);
  if (leftover == Leftover::kKeptByCaller && keeper_left_ != std::chrono::steady_clock::time_point{}) {
    keeper_comes_back_soon_ = std::chrono::steady_clock::now() - keeper_left_ < kept_for_;
  }
  // A keeper over the bound runs every task it kept, not only the oldest:
  // the devices' steps then run in batches, each meeting its peers' steps
  // already traced, rather than in lockstep with their tracing (1 KiB
  // steps at bound 2: 1.03-1.15x of no bound -> 0.97-1.06x).
  const bool keeps = leftover == Leftover::kKeptByCaller && keeper_comes_back_soon_;
  const size_t most = keeps && outstanding() > bound ? 0 : bound;
  const int bounded = most > 0 ? 1 : 0;
  bound_waiters_ += bounded;
  for (;;) {
    while (outstanding() > most && may_take_task() && !interrupted()) run_front(lock);
    // Interrupted raises even if the queue is empty now: the task this
    // thread ran itself may have ended because of the interrupt.
    if (interrupted()) {
      bound_waiters_ -= bounded;
      hand_back_to_worker_thread();
      lock.unlock();
      throw_interrupted(what);
    }
    if (outstanding() <= most) {
      bound_waiters_ -= bounded;
      if (leftover == Leftover::kKeptByCaller) keeper_left_ = std::chrono::steady_clock::now();
      if (keeps) {
        keep_for_caller();
      } else {
        hand_back_to_worker_thread();
      }
      return;
    }
    // Another thread runs a task; it reports when the queue is empty (or,
    // to a bounded waiter, when any task ends). An interruptible waiter
    // looks at its check now and then, without mu_.
    if (!has_interrupt_check()) {
      idle_cv_.wait(lock);
      continue;
    }
    idle_cv_.wait_until(lock, interrupt_poll_deadline(std::chrono::steady_clock::time_point::max()));
    lock.unlock();
    poll_interrupt();
    lock.lock();
  }
}

bool Worker::help_until(const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(mu_);
  // An interrupted waiter stops helping after the task it ran.
  while (!done() && may_take_task() && !interrupted()) run_front(lock);
  hand_back_to_worker_thread();
  return done();
}

void Worker::hand_back_to_worker_thread() {
  // The worker thread may have been woken for a task this thread took, and
  // gone back to sleep: wake it for what this thread leaves.
  kept_until_ = {};
  if (may_take_task()) wake_.notify_one();
}

void Worker::keep_for_caller() {
  if (!may_take_task()) return;
  kept_until_ = keeper_left_ + kept_for_;
  // A worker thread already asleep until an earlier keep's end looks then,
  // and sleeps on if the caller kept the tasks again: no wake-up a step.
  if (sleeps_without_deadline_) wake_.notify_one();
}

bool Worker::worker_thread_may_take_task() const {
  if (!may_take_task()) return false;
  return stopping_ || kept_until_ == std::chrono::steady_clock::time_point{} ||
         std::chrono::steady_clock::now() >= kept_until_;
}

void Worker::run_front(std::unique_lock<std::mutex>& lock) {
  std::function<void()> task = std::move(queue_.front());
  queue_.pop_front();
  running_task_ = true;
  lock.unlock();
  // A waiting thread may be cancelled (spawn allows it) while it waits in
  // a task's collective: the cancellation is deferred until the task is
  // done, so that it unwinds from the wait, not through a half-joined
  // collective. A task that throws ends the process, on whichever thread
  // it runs: a waiting thread must not leave the worker marked busy.
  int cancel_state = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  [&task, this]() noexcept {
    const KernelHome home(cpu_);
    task();
    task = nullptr;  // release what the task held before reporting idle
  }();
  pthread_setcancelstate(cancel_state, nullptr);
  lock.lock();
  running_task_ = false;
  if (queue_.empty() || bound_waiters_ > 0) idle_cv_.notify_all();
  // A stopping worker thread waits for the last task to end, whoever ran it.
  if (stopping_) wake_.notify_one();
}

void Worker::loop(int cpu) {
  if (cpu >= 0) pin_current_thread(cpu);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (worker_thread_may_take_task()) {
      run_front(lock);
    } else if (stopping_ && outstanding() == 0) {
      return;
    } else if (!queue_.empty()) {
      // Kept for a caller, or behind the task a caller runs: look again
      // when the keep would end, as the caller may leave without a word.
      wake_.wait_until(lock, std::max(kept_until_, std::chrono::steady_clock::now() + kept_for_));
    } else {
      sleeps_without_deadline_ = true;
      wake_.wait(lock);
      sleeps_without_deadline_ = false;
    }
  }
}

}  // namespace ordo::device
