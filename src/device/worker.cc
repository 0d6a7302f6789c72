#include "device/worker.h"

#include "device/cpu_placement.h"

namespace ordo::device {

Worker::Worker(int cpu) : thread_([this, cpu] { loop(cpu); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void Worker::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !running_task_; });
}

void Worker::loop(int cpu) {
  if (cpu >= 0) pin_current_thread(cpu);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_task_ = true;
    lock.unlock();
    task();
    task = nullptr;  // release what the task held before reporting idle
    lock.lock();
    running_task_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace ordo::device
