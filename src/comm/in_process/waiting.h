// Waiting at a rendezvous: a short spin (peers usually arrive within
// microseconds), then a real wait, with the warning and timeout.
#pragma once

#include "comm/in_process/rendezvous.h"

namespace ordo::comm {

// Waits until every participant arrived; raises the rendezvous failure, or
// fails it with a timeout naming the missing devices. device is the waiter.
void wait_for_arrivals(Rendezvous& rendezvous, int device);
// Waits until every participant finished its share. They are all present
// and doing bounded work, so this needs no timeout.
void wait_for_finish(Rendezvous& rendezvous);

}  // namespace ordo::comm
