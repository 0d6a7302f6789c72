#include "comm/mpi/message_header.h"

#include <cstring>

#include "ordo/error.h"

namespace ordo::comm {
namespace {

// "ordo" and the layout's version: a message of anything else fails here.
constexpr uint32_t kMagic = 0x6f72646f;
constexpr uint32_t kVersion = 1;

// The fixed part, then fingerprint words, then the description's bytes.
struct FixedPart {
  uint32_t magic;
  uint32_t version;
  int64_t sequence;
  int32_t sender;
  uint32_t fingerprint_words;
  uint64_t description_bytes;
};

}  // namespace

size_t header_size(const MessageHeader& header) {
  return sizeof(FixedPart) + header.fingerprint.size() * sizeof(int64_t) + header.description.size();
}

std::string encode_header(const MessageHeader& header, size_t payload_bytes) {
  std::string bytes(header_size(header) + payload_bytes, '\0');
  const FixedPart fixed{kMagic,
                        kVersion,
                        header.sequence,
                        header.sender,
                        static_cast<uint32_t>(header.fingerprint.size()),
                        header.description.size()};
  char* at = bytes.data();
  std::memcpy(at, &fixed, sizeof(fixed));
  at += sizeof(fixed);
  if (!header.fingerprint.empty()) std::memcpy(at, header.fingerprint.data(), header.fingerprint.size_bytes());
  at += header.fingerprint.size_bytes();
  if (!header.description.empty()) std::memcpy(at, header.description.data(), header.description.size());
  return bytes;
}

DecodedHeader decode_header(std::string_view message, const std::string& from) {
  FixedPart fixed{};
  auto malformed = [&](const char* why) {
    throw_error<CollectiveError>("a message from ", from, " is not one of ordo's collectives (", why, ", ",
                                 message.size(), " bytes)");
  };
  if (message.size() < sizeof(fixed)) malformed("shorter than a header");
  std::memcpy(&fixed, message.data(), sizeof(fixed));
  if (fixed.magic != kMagic) malformed("no header");
  if (fixed.version != kVersion) malformed("another version of the header");
  const uint64_t words_bytes = uint64_t{fixed.fingerprint_words} * sizeof(int64_t);
  const uint64_t rest = message.size() - sizeof(fixed);
  if (words_bytes > rest || fixed.description_bytes > rest - words_bytes) malformed("shorter than its header says");

  DecodedHeader header;
  header.sequence = fixed.sequence;
  header.sender = fixed.sender;
  header.fingerprint.resize(fixed.fingerprint_words);
  const char* at = message.data() + sizeof(fixed);
  if (words_bytes != 0) std::memcpy(header.fingerprint.data(), at, words_bytes);
  at += words_bytes;
  header.description.assign(at, fixed.description_bytes);
  header.payload_offset = sizeof(fixed) + words_bytes + fixed.description_bytes;
  return header;
}

}  // namespace ordo::comm
