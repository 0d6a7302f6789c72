#include "device/worker.h"

#include <pthread.h>
#include <sched.h>

namespace ordo::device {
namespace {

// Pins the calling thread to the cpu-th CPU it is allowed to use (wrapping
// around); does nothing where affinity cannot be read or set.
void pin_to_cpu(int cpu) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  const int count = CPU_COUNT(&allowed);
  if (count <= 1) return;
  int wanted = cpu % count;
  for (int id = 0; id < CPU_SETSIZE; ++id) {
    if (!CPU_ISSET(id, &allowed) || wanted-- != 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(id, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    return;
  }
}

}  // namespace

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
  if (cpu >= 0) pin_to_cpu(cpu);
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
