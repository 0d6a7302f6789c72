// A device's worker: one thread that runs submitted tasks in submission order.
//
// Locking: mu_ guards queue_, stopping_ and idle_; tasks run without it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ordo::device {

class Worker {
 public:
  // cpu >= 0 pins the worker's thread to that CPU (see cpu_placement.h).
  explicit Worker(int cpu = -1);
  ~Worker();  // runs what is queued, then joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Tasks must not throw: they report failures through their outputs.
  void submit(std::function<void()> task);
  // Blocks until every task submitted before the call has run.
  void drain();

 private:
  void loop(int cpu);

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool running_task_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ordo::device
