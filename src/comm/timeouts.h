// The lock of the collective timeouts, held around fork() (runtime/fork.cc)
// so that a child finds it free. The timeouts themselves are public
// (ordo/collective_types.h).
#pragma once

namespace ordo::comm {

void lock_timeouts_for_fork();
void unlock_timeouts_after_fork();

}  // namespace ordo::comm
