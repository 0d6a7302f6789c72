// What a forked child gets: no runtime yet, and whole state to start one.
//
// A child has only the thread that called fork(); the parent's workers and
// spawn threads, and whatever locks they held, are not there. The parent's
// runtime could run nothing in the child, and shutting it down would join
// threads that do not exist (that hung ordo.shutdown() in every child of a
// busy parent). So the child starts with no runtime and leaves the
// parent's alone (nothing of it is joined or freed); its next use or
// init() starts a fresh one, of a new generation, so that the parent's
// tensors are refused there as after a shutdown. The state that outlives
// runtimes and that a child may use (the compile cache, the buffer pool,
// the pending lists, the collective timeouts) is locked around fork(), so
// that the child finds it whole, with its locks free. Data loaders fork
// beside a busy runtime, and most never use ordo: they must not hang on a
// lock either, when the parent's tensors they inherited die.
//
// Each layer registers the handlers of what it owns, no later than it is
// first used: here the runtime's (the buffer pool, the timeouts, and
// forgetting the runtime), in lazy/ the pending lists and the graph table,
// in executor/ the compile cache. pthread_atfork runs prepare handlers in
// the reverse order of registration, so a lock that is held while another
// is taken registers after that other's: evicting a cached plan frees its
// buffers into the pool, so the compile cache registers after these, and
// the cache is locked before the pool. No other lock taken here is held
// while another is taken.
#include <pthread.h>

#include <mutex>

#include "comm/timeouts.h"
#include "device/buffer_pool.h"
#include "runtime/runtime.h"

namespace ordo::runtime {
namespace {

void fork_prepare() {
  device::BufferPool::global().lock_for_fork();
  comm::lock_timeouts_for_fork();
}

void fork_parent() {
  comm::unlock_timeouts_after_fork();
  device::BufferPool::global().unlock_after_fork();
}

void fork_child() {
  fork_parent();
  forget_runtime_in_forked_child();
}

}  // namespace

void register_fork_handlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(&fork_prepare, &fork_parent, &fork_child); });
}

}  // namespace ordo::runtime
