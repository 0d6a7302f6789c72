// The header that opens every message of the MPI backend: what the sender
// brought to the collective, so that the receiver checks it against its own
// call before it reads a byte of data. Processes share no memory, so the
// fingerprint travels by value, with the sender's description of its call
// for the mismatch message (the receiver has no CollectiveCall of the
// sender's to describe).
//
//   std::string bytes = encode_header({sequence, device, mine.words(), describe(call)}, payload_bytes);
//   ... MPI_Isend(bytes.data(), ...) ... MPI_Irecv(...) ...
//   DecodedHeader theirs = decode_header(received, "process 1 (host vm, pid 42)");
//   if (!same_words(theirs.fingerprint, mine.words())) throw CollectiveMismatchError(...);
//   const char* data = received.data() + theirs.payload_offset;
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ordo::comm {

struct MessageHeader {
  int64_t sequence;                     // the group's collective number
  int sender;                           // global ordinal
  std::span<const int64_t> fingerprint; // Fingerprint::words() of the sender's call
  std::string_view description;         // describe(call), for messages
};

// The header's bytes, with room for payload_bytes more after it (the
// caller writes the payload at header_size(header) onwards).
std::string encode_header(const MessageHeader& header, size_t payload_bytes);
size_t header_size(const MessageHeader& header);

struct DecodedHeader {
  int64_t sequence = 0;
  int sender = 0;
  std::vector<int64_t> fingerprint;
  std::string description;
  size_t payload_offset = 0;  // where the payload starts in the message
};

// Reads a header that encode_header wrote. A message too short for its
// header, or that does not start with one, is a CollectiveError naming
// `from` (another program, or a tag that two channels share): never data.
DecodedHeader decode_header(std::string_view message, const std::string& from);

}  // namespace ordo::comm
