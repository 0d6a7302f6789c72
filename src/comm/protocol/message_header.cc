#include "comm/protocol/message_header.h"

#include <cstring>

namespace ordo::comm {
namespace {

// "ordo" and the layout's version: a message of anything else fails here.
constexpr uint32_t kMagic = 0x6f72646f;
constexpr uint32_t kVersion = 3;
constexpr size_t kPayloadAlignment = 64;

struct FixedPart {
  uint32_t magic;
  uint32_t version;
  uint32_t kind;
  int32_t process;
  int64_t sequence;
  uint32_t members;
  int32_t failure_code;
  uint64_t failure_bytes;
  int32_t last_device;
  int32_t unused = 0;
  int64_t last_arrival_wall_ns;
};

struct MemberPart {
  int32_t device;
  uint32_t fingerprint_words;
  uint64_t text_bytes;
};

size_t header_bytes(const MessageHeader& header) {
  size_t bytes = sizeof(FixedPart) + header.failure.size();
  for (const MemberEntry& m : header.members) {
    bytes += sizeof(MemberPart) + m.fingerprint.size_bytes() + m.text.size();
  }
  return bytes;
}

size_t aligned(size_t bytes) { return (bytes + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment; }

void put(char*& at, const void* data, size_t bytes) {
  if (bytes != 0) std::memcpy(at, data, bytes);
  at += bytes;
}

}  // namespace

std::string encode_message(const MessageHeader& header, size_t payload_bytes) {
  std::string bytes;
  encode_message(header, payload_bytes, bytes);
  return bytes;
}

void encode_message(const MessageHeader& header, size_t payload_bytes, std::string& bytes) {
  const size_t head = header_bytes(header);
  bytes.assign((payload_bytes == 0 ? head : aligned(head)) + payload_bytes, '\0');
  const FixedPart fixed{kMagic,
                        kVersion,
                        static_cast<uint32_t>(header.kind),
                        header.process,
                        header.sequence,
                        static_cast<uint32_t>(header.members.size()),
                        static_cast<int32_t>(header.failure_code),
                        header.failure.size(),
                        header.last_device,
                        0,
                        header.last_arrival_wall_ns};
  char* at = bytes.data();
  put(at, &fixed, sizeof(fixed));
  for (const MemberEntry& m : header.members) {
    const MemberPart part{m.device, static_cast<uint32_t>(m.fingerprint.size()), m.text.size()};
    put(at, &part, sizeof(part));
    put(at, m.fingerprint.data(), m.fingerprint.size_bytes());
    put(at, m.text.data(), m.text.size());
  }
  put(at, header.failure.data(), header.failure.size());
}

DecodedMessage decode_message(std::string_view message, const std::string& from) {
  DecodedMessage out;
  decode_message(message, from, out);
  return out;
}

void decode_message(std::string_view message, const std::string& from, DecodedMessage& out) {
  auto malformed = [&](const char* why) {
    throw_error<CollectiveError>("a message from ", from, " is not one of ordo's collectives (", why, ", ",
                                 message.size(), " bytes)");
  };
  size_t at = 0;
  // Copies `bytes` from the message at `at`, if it has them.
  auto take = [&](void* out, uint64_t bytes) {
    if (bytes > message.size() - at) malformed("shorter than its header says");
    if (bytes != 0) std::memcpy(out, message.data() + at, bytes);
    at += bytes;
  };
  FixedPart fixed{};
  if (message.size() < sizeof(fixed)) malformed("shorter than a header");
  take(&fixed, sizeof(fixed));
  if (fixed.magic != kMagic) malformed("no header");
  if (fixed.version != kVersion) malformed("another version of the header");
  if (fixed.kind < 1 || fixed.kind > 3) malformed("an unknown kind of message");
  out.kind = static_cast<MessageKind>(fixed.kind);
  out.process = fixed.process;
  out.sequence = fixed.sequence;
  out.failure_code = static_cast<ErrorCode>(fixed.failure_code);
  out.last_device = fixed.last_device;
  out.last_arrival_wall_ns = fixed.last_arrival_wall_ns;
  if (fixed.members > (message.size() - at) / sizeof(MemberPart)) malformed("shorter than its header says");
  out.members.resize(fixed.members);
  for (DecodedMember& member : out.members) {
    MemberPart part{};
    take(&part, sizeof(part));
    member.device = part.device;
    if (part.fingerprint_words > (message.size() - at) / sizeof(int64_t)) malformed("shorter than its header says");
    member.fingerprint.resize(part.fingerprint_words);
    take(member.fingerprint.data(), uint64_t{part.fingerprint_words} * sizeof(int64_t));
    if (part.text_bytes > message.size() - at) malformed("shorter than its header says");
    member.text.resize(part.text_bytes);
    take(member.text.data(), part.text_bytes);
  }
  if (fixed.failure_bytes > message.size() - at) malformed("shorter than its header says");
  out.failure.resize(fixed.failure_bytes);
  take(out.failure.data(), fixed.failure_bytes);
  out.payload_offset = at == message.size() ? at : aligned(at);
  if (out.payload_offset > message.size()) malformed("shorter than its header says");
}

}  // namespace ordo::comm
