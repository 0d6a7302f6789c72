// A device's worker: runs submitted tasks one at a time, in submission
// order. Its own thread runs them in the background; a thread that waits
// for the device (drain, help_until) runs queued tasks itself while the
// worker thread runs none. A step is "trace, mark_step, wait": handing the
// step to the worker thread and back costs two thread switches, each a few
// microseconds of system calls in a virtual machine, for every step; the
// waiting thread would only sleep through the step anyway.
//
// Locking: mu_ guards every field that is not const but thread_; tasks run
// without it. Taking a task and reporting its end under mu_ orders every
// task after the one before, whichever threads ran them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ordo::device {

class Worker {
 public:
  // Who runs the tasks that drain_to(bound > 0) leaves queued: the worker
  // thread, woken now, or the caller, which keeps them for a while and
  // comes back with its next step (mark_step on a thread that takes turns
  // with the worker thread on one CPU, where the worker thread could only
  // run them by taking the CPU from it, two thread switches a step). If
  // the caller has not come back within kept_for, the worker thread takes
  // them: a peer's collective may be waiting for them. A caller that did
  // not come back within kept_for last time keeps nothing: it traces for
  // longer, or waits (for Python's GIL, say), and its CPU would idle.
  enum class Leftover { kToWorkerThread, kKeptByCaller };
  static constexpr std::chrono::microseconds kKeptFor{200};

  // cpu >= 0 pins the worker's thread to that CPU (see cpu_placement.h).
  explicit Worker(int cpu = -1, std::chrono::microseconds kept_for = kKeptFor);
  ~Worker();  // runs what is queued, then joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Who runs a task submitted while the worker thread is idle: that
  // thread, woken now, or the submitting thread, which calls drain() or
  // help_until() at once (a tensor read, mark_step with a wait): waking the
  // worker thread then costs a system call and a thread switch for a task
  // the caller would take anyway, or race it for. Whatever the caller
  // leaves (an interrupt, help_until done early) goes to the worker thread.
  enum class RunBy { kWorkerThread, kCaller };

  // Tasks must not throw: they report failures through their outputs. A
  // task must not wait for its own worker.
  void submit(std::function<void()> task, RunBy run_by = RunBy::kWorkerThread);
  // Blocks until every task submitted before the call has run, running
  // queued tasks on the calling thread while the worker thread runs none.
  // On a thread with an interrupt check (core/interrupt.h), throws
  // ExecutionError once the check said so, after the task it runs.
  void drain();
  // As drain, until at most `bound` tasks are queued or running (drain is
  // drain_to(0); a caller that keeps what it leaves runs all of it once
  // over the bound): mark_step's bound on how far tracing runs ahead.
  // `what` names the wait in an interrupt's message.
  void drain_to(size_t bound, const char* what = "wait_device_ops", Leftover leftover = Leftover::kToWorkerThread);
  // Whether the calling thread and the worker thread take turns on one CPU
  // (device/cpu_placement.h): then a caller that waits anyway runs the
  // tasks itself.
  bool takes_turns_with_caller() const;
  // Runs queued tasks on the calling thread while the worker thread runs
  // none, until done() holds, nothing is queued or the thread's interrupt
  // check said so; returns done(). The worker thread goes on with whatever
  // is left. done() is called with the worker's lock held: a cheap check
  // that does not use the worker.
  bool help_until(const std::function<bool()>& done);
  // Whether no task is queued or running now (a spawn that starts afresh
  // asks it of the devices it leaves to the caller).
  bool idle();

 private:
  void loop(int cpu);
  bool may_take_task() const { return !running_task_ && !queue_.empty(); }
  // Whether the worker thread may take the next task now (mu_ held).
  bool worker_thread_may_take_task() const;
  size_t outstanding() const { return queue_.size() + (running_task_ ? 1 : 0); }  // mu_ held
  void hand_back_to_worker_thread();  // mu_ held
  void keep_for_caller();             // mu_ held, keeper_left_ just set
  // Runs the front task with mu_ released; lock holds mu_ before and after.
  void run_front(std::unique_lock<std::mutex>& lock);

  const int cpu_;  // the worker thread's CPU, or -1
  const std::chrono::microseconds kept_for_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool running_task_ = false;
  bool stopping_ = false;
  // Threads in drain_to with a bound above 0: each task's end wakes them,
  // not only the queue's end.
  int bound_waiters_ = 0;
  // Until when the queued tasks are kept for a caller (Leftover), and
  // whether the worker thread sleeps with no time set to look at them.
  std::chrono::steady_clock::time_point kept_until_{};
  bool sleeps_without_deadline_ = false;
  // When a caller that may keep last left drain_to, and whether it had
  // come back within kept_for_ then.
  std::chrono::steady_clock::time_point keeper_left_{};
  bool keeper_comes_back_soon_ = true;
  std::thread thread_;
};

}  // namespace ordo::device
