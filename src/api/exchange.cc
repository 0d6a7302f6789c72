// ordo/collectives.h, the host-side exchange: rendezvous through the
// communicator (Python's rendezvous and mesh_reduce pickle and call it).
#include <algorithm>

#include "ordo/collectives.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo {

std::vector<std::string> rendezvous(std::string_view tag, std::string_view payload,
                                    const std::vector<int>& replicas,
                                    const std::function<void(const std::string& line)>& on_warning) {
  runtime::Runtime& rt = runtime::get();
  const LocalDevice device = rt.checked_device(current_device());
  std::vector<GlobalOrdinal> participants;  // the replicas are global ordinals
  participants.reserve(replicas.size());
  for (const int replica : replicas) participants.emplace_back(replica);
  std::sort(participants.begin(), participants.end());
  return rt.communicator().exchange({rt.ordinal_of(device), tag, participants, payload, on_warning});
}

}  // namespace ordo
