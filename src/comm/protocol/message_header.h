// The header that opens every message a process sends its peers about one
// collective: what each of its members brought (so that the receiver
// checks it against its own group before it reads a byte of data), or why
// the process fails the collective. Processes share no memory, so the
// fingerprints travel by value; descriptions of the calls travel only
// when the fingerprints differ, for the mismatch message.
//
//   std::string bytes = encode_message(header, payload_bytes);  // payload at payload_offset(bytes)
//   DecodedMessage theirs = decode_message(received, "process 1 (host vm, pid 42)");
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ordo/error.h"

namespace ordo::comm {

enum class MessageKind : uint32_t {
  kHeader = 1,        // the members' fingerprints (and a small all_reduce's inputs after them)
  kDescriptions = 2,  // the members' calls described, after a mismatch
  kRetraction = 3,    // the process fails a collective it had agreed to
};

struct MemberEntry {
  int device;                            // global ordinal
  std::span<const int64_t> fingerprint;  // Fingerprint::words() of its call
  std::string_view text;                 // its description (kDescriptions)
};

struct MessageHeader {
  MessageKind kind;
  int64_t sequence;  // the group's collective number
  int process;       // the sender
  std::span<const MemberEntry> members;
  // When the sender fails the collective: the error each member raises.
  ErrorCode failure_code = ErrorCode::kExecution;
  std::string_view failure;  // empty: no failure
  // The sender's last member to arrive (kHeader), and when it did by the
  // system clock (ns since the epoch): who came last across processes.
  int last_device = -1;
  int64_t last_arrival_wall_ns = 0;
};

// The header's bytes, then room for payload_bytes more, which start on a
// 64-byte boundary of the message (payload_offset).
std::string encode_message(const MessageHeader& header, size_t payload_bytes);
// The same, into `bytes`, whose memory is reused from call to call.
void encode_message(const MessageHeader& header, size_t payload_bytes, std::string& bytes);

struct DecodedMember {
  int device = 0;
  std::vector<int64_t> fingerprint;
  std::string text;
};

struct DecodedMessage {
  MessageKind kind = MessageKind::kHeader;
  int64_t sequence = 0;
  int process = 0;
  std::vector<DecodedMember> members;
  ErrorCode failure_code = ErrorCode::kExecution;
  std::string failure;
  int last_device = -1;
  int64_t last_arrival_wall_ns = 0;
  size_t payload_offset = 0;  // where the payload starts in the message
};

// Reads a message that encode_message wrote. A message too short for its
// header, or that does not start with one, is a CollectiveError naming
// `from` (another program, or a tag that two channels share): never data.
DecodedMessage decode_message(std::string_view message, const std::string& from);
// The same, into `out`, whose vectors' memory is reused from call to call.
void decode_message(std::string_view message, const std::string& from, DecodedMessage& out);

}  // namespace ordo::comm
