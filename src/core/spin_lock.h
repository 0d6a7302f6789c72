// A lock for critical sections of a few instructions that are rarely
// contended: one atomic exchange to take it and a plain store to give it
// back, where std::mutex costs two atomic operations and two calls. A
// waiter spins briefly, then yields, so that a holder that lost its CPU
// gets it back (threads outnumber cores when devices do).
#pragma once

#include <atomic>
#include <thread>

namespace ordo {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins >= 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace ordo
