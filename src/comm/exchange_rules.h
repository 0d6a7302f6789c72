// What every backend's exchange (Communicator::exchange, a rendezvous)
// shares: which participants a call names, and the words of its failures.
// How participants meet is the protocol's (protocol/exchange.h).
//
//   const std::vector<int> participants = exchange_participants(call, world_size);
//   if (timed_out) return exchange_timeout(call.device, seconds, call.tag, missing);
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"
#include "device/device_data.h"

namespace ordo::comm {

// "rendezvous 'step'"
std::string describe_tag(std::string_view tag);

// The call's participants, sorted (every device of the world when it names
// none). Throws InvalidArgument, naming the tag, for a device outside the
// world, replicas repeated or unsorted, or a caller not among them.
std::vector<int> exchange_participants(const ExchangeCall& call, int world_size);

// A CollectiveTimeoutError: "device 0 waited 300 s in rendezvous 'step';
// devices that never arrived: [3]" (Python's rendezvous has said "never
// arrived" since its first version).
device::Failure exchange_timeout(GlobalOrdinal device, double timeout_seconds, std::string_view tag,
                                 const std::vector<int>& missing);
// The round can no longer complete: a participant timed out in it (why).
device::Failure exchange_given_up(std::string_view tag, const std::string& why);
// device, which the round waits for, is gone (failed or absent).
device::Failure exchange_peer_gone(std::string_view tag, GlobalOrdinal device, const std::string& reason);
// device could not keep or send its payload of `bytes` (an
// OutOfMemoryError for it; the others fail with the same words as a
// CollectiveError, at once).
device::Failure exchange_out_of_memory(std::string_view tag, GlobalOrdinal device, size_t bytes);
// device was interrupted while it waited in the round (reason: the
// interrupt's, or "by KeyboardInterrupt while it waited").
device::Failure exchange_interrupted(std::string_view tag, GlobalOrdinal device, const std::string& reason);

}  // namespace ordo::comm
