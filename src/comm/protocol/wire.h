// The words of the MPI backend's small messages (the exchange's notes,
// progress questions and answers): unsigned 64-bit words and
// length-prefixed bytes, in the byte order of the machine (every process
// of a job runs on the same kind of host).
//
//   std::string out;
//   put_word(out, 7);
//   put_bytes(out, "tag");
//   WireReader in(out, "rendezvous", "process 1 (host vm, pid 42)");
//   in.word();   // 7
//   in.bytes();  // "tag"
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ordo/error.h"

namespace ordo::comm {

inline void put_word(std::string& out, uint64_t word) {
  out.append(reinterpret_cast<const char*>(&word), sizeof(word));
}

inline void put_bytes(std::string& out, std::string_view bytes) {
  put_word(out, bytes.size());
  out.append(bytes);
}

// Reads what put_word and put_bytes wrote. A message shorter than it says
// is a CollectiveError: "a message from <from> is not one of ordo's
// <kind> (N bytes, shorter than it says)".
class WireReader {
 public:
  WireReader(const std::string& message, const char* kind, std::string from)
      : message_(message), kind_(kind), from_(std::move(from)) {}

  uint64_t word() {
    uint64_t value = 0;
    need(sizeof(value));
    std::memcpy(&value, message_.data() + at_, sizeof(value));
    at_ += sizeof(value);
    return value;
  }
  std::string bytes() {
    const uint64_t n = word();
    need(n);
    std::string out = message_.substr(at_, n);
    at_ += n;
    return out;
  }
  // A count of words to come that the message cannot hold fails here.
  uint64_t count() {
    const uint64_t n = word();
    need(n > (message_.size() - at_) / sizeof(uint64_t) ? message_.size() + 1 : 0);
    return n;
  }
  [[noreturn]] void malformed(const char* why) const {
    throw_error<CollectiveError>("a message from ", from_, " is not one of ordo's ", kind_, " (", message_.size(),
                                 " bytes, ", why, ")");
  }

 private:
  void need(uint64_t n) const {
    if (n > message_.size() - at_) malformed("shorter than it says");
  }

  const std::string& message_;
  const char* const kind_;
  const std::string from_;
  size_t at_ = 0;
};

}  // namespace ordo::comm
