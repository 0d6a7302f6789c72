// The free-core pool. One per process, made on first use and never
// destroyed (a device's worker may still call run_blocks while the process
// exits); its threads start when a split op first needs them and are
// joined at exit, after which every call runs inline.
//
// A call opens a Job: an atomic next-block counter that the caller and up
// to (kernel threads - 1) pool threads draw blocks from. The caller always
// works too, so a job never waits for a thread to wake up; when the
// counter runs out, the caller closes the job (no thread joins it after
// that) and waits only for the threads inside it. Several workers may each
// have a job open: the pool threads share out among them, and as there are
// never more pool threads than free cores, the process never runs more
// threads than cores.
//
// fork(): the child has none of the pool's threads, and its mutex and
// condition variables may record waiters that are gone. The child forgets
// that pool (kept reachable, never freed or joined) and makes a new one on
// first use, as the runtime does with itself (runtime/fork.cc).
#include "device/free_cores.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <mutex>
#include <thread>
#include <vector>

#include "core/config.h"
#include "device/cpu_placement.h"

namespace ordo::device {
namespace {

std::atomic<int> host_devices_{1};
std::atomic<int> kernel_threads_{0};  // 0: no limit beyond the free cores
// Bumped when the host's devices change: pool threads re-pin to the new
// free CPUs before their next job.
std::atomic<int> placement_generation_{0};

constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);

thread_local bool inside_block = false;
thread_local int home_cpu = -1;  // KernelHome's

int home_cpu_of_caller() { return home_cpu; }

// The CPUs a pool thread may run a job's blocks on: the free ones, and the
// idle worker's whose task the job is part of, but the caller's (it works
// on the blocks too; a pool thread beside it would take turns with it).
std::vector<int> cpus_for(int home, int caller) {
  std::vector<int> cpus;
  for (int cpu = host_devices_.load(std::memory_order_relaxed); cpu < usable_cpu_count(); ++cpu) cpus.push_back(cpu);
  if (home >= 0 && std::find(cpus.begin(), cpus.end(), home) == cpus.end()) cpus.push_back(home);
  if (cpus.size() > 1) std::erase(cpus, caller);
  return cpus;
}

struct Job {
  Job(void (*body_)(void*, int64_t), void* context_, int64_t num_blocks_)
      : body(body_), context(context_), num_blocks(num_blocks_) {}

  void (*body)(void* context, int64_t block);
  void* context;
  int64_t num_blocks;
  int home_cpu = home_cpu_of_caller();
  int caller_cpu = current_cpu();
  std::atomic<int64_t> next_block{0};
  std::atomic<bool> failed{false};
  // Written with the pool's mutex held; threads_inside is also read
  // without it by a caller that spins before it sleeps.
  int open_seats = 0;
  std::atomic<int> threads_inside{0};
  std::exception_ptr error;
};

class Pool {
 public:
  // Opens job for up to `helpers` pool threads; false once the pool has
  // stopped (the caller runs it alone).
  bool open(Job& job, int helpers) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return false;
      try {
        while (static_cast<int>(threads_.size()) < helpers) {
          const int index = static_cast<int>(threads_.size());
          threads_.emplace_back([this, index] { thread_main(index); });
        }
      } catch (const std::system_error&) {
        // No thread to be had (a process or memory limit): fewer helpers.
        helpers = static_cast<int>(threads_.size());
        if (helpers == 0) return false;
      }
      job.open_seats = helpers;
      open_jobs_.push_back(&job);
      open_job_count_.store(static_cast<int>(open_jobs_.size()), std::memory_order_release);
    }
    work_.notify_all();
    return true;
  }

  // After the caller found no block left: no thread joins job any more;
  // returns when those inside it have left.
  void close_and_wait(Job& job) {
    std::unique_lock lock(mutex_);
    remove_open_job(job);
    if (job.threads_inside.load(std::memory_order_relaxed) == 0) return;
    lock.unlock();
    spin_until([&] { return job.threads_inside.load(std::memory_order_acquire) == 0; });
    lock.lock();
    done_.wait(lock, [&] { return job.threads_inside.load(std::memory_order_relaxed) == 0; });
  }

  void record_error(Job& job, std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!job.error) job.error = std::move(error);
    job.failed.store(true, std::memory_order_relaxed);
  }

  void stop() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      threads.swap(threads_);
    }
    work_.notify_all();
    for (std::thread& thread : threads) thread.join();
  }

  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }
  // In a forked child: threads_ names threads that are not there; they must
  // never be joined or destroyed (a joinable std::thread's destructor ends
  // the process), and neither is this pool.
  void forget_in_forked_child() { mutex_.unlock(); }

 private:
  void remove_open_job(Job& job) {
    auto it = std::find(open_jobs_.begin(), open_jobs_.end(), &job);
    if (it != open_jobs_.end()) open_jobs_.erase(it);
    open_job_count_.store(static_cast<int>(open_jobs_.size()), std::memory_order_release);
  }

  // Waking a thread that sleeps takes long in a virtual machine (an idle
  // virtual CPU is halted: 256^2 matmuls in four blocks ran no faster on
  // two threads than on one), so a pool thread between jobs and a caller
  // waiting for the last block spin a little before they sleep.
  template <typename Done>
  static void spin_until(const Done& done) {
    const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    for (int polls = 1; !done(); ++polls) {
      if (polls % 64 == 0 && std::chrono::steady_clock::now() >= until) return;
    }
  }

  // Thread `index` takes part only while the free cores cover it.
  Job* take_job(int index) {
    if (open_jobs_.empty() || index >= free_core_threads()) return nullptr;
    Job* job = open_jobs_.front();
    ++job->threads_inside;
    if (--job->open_seats == 0) remove_open_job(*job);
    return job;
  }

  void thread_main(int index) {
    int pinned_generation = -1;
    int pinned_home = -2;
    int pinned_caller = -2;
    std::unique_lock lock(mutex_);
    for (;;) {
      Job* job = take_job(index);
      if (job == nullptr && !stopped_) {
        lock.unlock();
        spin_until([&] { return open_job_count_.load(std::memory_order_acquire) > 0; });
        lock.lock();
      }
      work_.wait(lock, [&] { return stopped_ || job != nullptr || (job = take_job(index)) != nullptr; });
      if (job == nullptr) return;
      lock.unlock();
      const int generation = placement_generation_.load(std::memory_order_relaxed);
      if (generation != pinned_generation || job->home_cpu != pinned_home || job->caller_cpu != pinned_caller) {
        pin_current_thread(cpus_for(job->home_cpu, job->caller_cpu));
        pinned_generation = generation;
        pinned_home = job->home_cpu;
        pinned_caller = job->caller_cpu;
      }
      work_on(*job);
      lock.lock();
      if (--job->threads_inside == 0) done_.notify_all();
    }
  }

 public:
  void work_on(Job& job) {
    inside_block = true;
    while (!job.failed.load(std::memory_order_relaxed)) {
      const int64_t block = job.next_block.fetch_add(1, std::memory_order_relaxed);
      if (block >= job.num_blocks) break;
      try {
        job.body(job.context, block);
      } catch (...) {
        record_error(job, std::current_exception());
      }
    }
    inside_block = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  std::vector<Job*> open_jobs_;
  std::atomic<int> open_job_count_{0};  // open_jobs_.size(), for spinning threads
  bool stopped_ = false;
};

std::atomic<Pool*> pool_{nullptr};
std::vector<Pool*>* forgotten_pools_ = nullptr;  // reachable, so not leaks
Pool* locked_for_fork_ = nullptr;

void fork_prepare() {
  locked_for_fork_ = pool_.load(std::memory_order_acquire);
  if (locked_for_fork_ != nullptr) locked_for_fork_->lock_for_fork();
}

void fork_parent() {
  if (locked_for_fork_ != nullptr) locked_for_fork_->unlock_after_fork();
}

void fork_child() {
  if (locked_for_fork_ == nullptr) return;
  locked_for_fork_->forget_in_forked_child();
  if (forgotten_pools_ == nullptr) forgotten_pools_ = new std::vector<Pool*>;
  forgotten_pools_->push_back(locked_for_fork_);
  pool_.store(nullptr, std::memory_order_release);
}

void stop_pool_at_exit() {
  if (Pool* pool = pool_.load(std::memory_order_acquire)) pool->stop();
}

Pool& pool() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
    std::atexit(&stop_pool_at_exit);
  });
  Pool* existing = pool_.load(std::memory_order_acquire);
  if (existing != nullptr) return *existing;
  // No lock: a fork must never find one held in the child.
  Pool* made = new Pool;
  if (pool_.compare_exchange_strong(existing, made, std::memory_order_acq_rel)) return *made;
  delete made;
  return *existing;
}

}  // namespace

KernelHome::KernelHome(int cpu) : previous_(home_cpu) { home_cpu = cpu; }
KernelHome::~KernelHome() { home_cpu = previous_; }

void set_host_devices(int host_devices) {
  const int kernel_threads = config().kernel_threads;
  kernel_threads_.store(kernel_threads, std::memory_order_relaxed);
  if (host_devices_.exchange(host_devices, std::memory_order_relaxed) != host_devices) {
    placement_generation_.fetch_add(1, std::memory_order_relaxed);
  }
}

int free_core_threads() {
  int spare = usable_cpu_count() - host_devices_.load(std::memory_order_relaxed);
  const int kernel_threads = kernel_threads_.load(std::memory_order_relaxed);
  if (kernel_threads > 0) spare = std::min(spare, kernel_threads - 1);
  return spare > 0 ? spare : 0;
}

void run_blocks(int64_t num_blocks, void (*body)(void* context, int64_t block), void* context) {
  if (num_blocks <= 0) return;
  const int helpers = num_blocks == 1 || inside_block
                          ? 0
                          : static_cast<int>(std::min<int64_t>(num_blocks - 1, free_core_threads()));
  if (helpers == 0) {
    for (int64_t block = 0; block < num_blocks; ++block) body(context, block);
    return;
  }
  Job job(body, context, num_blocks);
  Pool& threads = pool();
  if (!threads.open(job, helpers)) {
    for (int64_t block = 0; block < num_blocks; ++block) body(context, block);
    return;
  }
  threads.work_on(job);
  threads.close_and_wait(job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace ordo::device
