// Memory a transport may still read or write after its owner gave up on
// it (a peer failed while data moved, and MPI cannot cancel a send): kept
// until the process exits, and reachable, so that a leak checker does not
// count it.
//
//   keep_until_exit(std::shared_ptr<std::byte[]>(std::move(scratch)));
#pragma once

#include <memory>

namespace ordo::comm {

void keep_until_exit(std::shared_ptr<const void> memory);

}  // namespace ordo::comm
