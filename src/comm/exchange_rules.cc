#include "comm/exchange_rules.h"

#include <numeric>

#include "ordo/error.h"

namespace ordo::comm {

std::string describe_tag(std::string_view tag) { return str_cat("rendezvous '", tag, "'"); }

std::vector<int> exchange_participants(const ExchangeCall& call, int world_size) {
  // The texts of the checks are made only when one fails: this runs at
  // every rendezvous.
  ORDO_ARG_CHECK(call.device.value() >= 0 && call.device.value() < world_size, describe_tag(call.tag), ": device ",
                 call.device, " does not exist (world size ", world_size, ")");
  std::vector<int> participants;  // ordinals as data, like a replica group
  participants.reserve(call.participants.empty() ? static_cast<size_t>(world_size) : call.participants.size());
  for (const GlobalOrdinal d : call.participants) participants.push_back(d.value());
  if (participants.empty()) {
    participants.resize(static_cast<size_t>(world_size));
    std::iota(participants.begin(), participants.end(), 0);
  }
  bool among = false;
  for (size_t i = 0; i < participants.size(); ++i) {
    const int d = participants[i];
    ORDO_ARG_CHECK(d >= 0 && d < world_size, describe_tag(call.tag), ": device ", d, " among the replicas ",
                   describe_group(participants), " does not exist (world size ", world_size, ")");
    ORDO_ARG_CHECK(i == 0 || d != participants[i - 1], describe_tag(call.tag), ": device ", d,
                   " is twice among the replicas ", describe_group(participants));
    ORDO_ARG_CHECK(i == 0 || d > participants[i - 1], describe_tag(call.tag), ": the replicas ",
                   describe_group(participants), " are not sorted");
    among = among || d == call.device.value();
  }
  ORDO_ARG_CHECK(among, describe_tag(call.tag), ": device ", call.device, " is not among the replicas ",
                 describe_group(participants));
  return participants;
}

device::Failure exchange_timeout(GlobalOrdinal device, double timeout_seconds, std::string_view tag,
                                 const std::vector<int>& missing) {
  return {ErrorCode::kCollectiveTimeout, str_cat("device ", device, " waited ", timeout_seconds, " s in ",
                                                 describe_tag(tag), "; devices that never arrived: ",
                                                 describe_group(missing))};
}

device::Failure exchange_given_up(std::string_view tag, const std::string& why) {
  return {ErrorCode::kCollectiveTimeout,
          str_cat(describe_tag(tag), " cannot complete: a participant gave up on it: ", why)};
}

device::Failure exchange_peer_gone(std::string_view tag, GlobalOrdinal device, const std::string& reason) {
  return {ErrorCode::kCollective, str_cat(describe_tag(tag), ": device ", device, " is gone (", reason, ")")};
}

device::Failure exchange_out_of_memory(std::string_view tag, GlobalOrdinal device, size_t bytes) {
  return {ErrorCode::kOutOfMemory,
          str_cat(describe_tag(tag), ": device ", device, " ran out of memory sending its payload of ", bytes, " bytes")};
}

device::Failure exchange_interrupted(std::string_view tag, GlobalOrdinal device, const std::string& reason) {
  return {ErrorCode::kCollective,
          str_cat(describe_tag(tag), " cannot complete: device ", device, " was interrupted", reason)};
}

}  // namespace ordo::comm
