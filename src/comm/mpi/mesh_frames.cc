#include "comm/mpi/mesh_frames.h"

#include <algorithm>
#include <cstring>

#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr uint32_t kHelloMagic = 0x6d64726f;  // "ordm"
constexpr uint32_t kVersion = 1;
constexpr size_t kFrameHead = sizeof(uint32_t) + sizeof(uint8_t);

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
T get(std::string_view body, size_t at) {
  T value;
  std::memcpy(&value, body.data() + at, sizeof(value));
  return value;
}

std::string_view capped(std::string_view text, size_t room) { return text.substr(0, std::min(text.size(), room)); }

}  // namespace

MeshFrame MeshFrame::hello(int rank, uint64_t nonce) {
  MeshFrame frame;
  frame.kind = FrameKind::kHello;
  frame.rank = rank;
  frame.nonce = nonce;
  return frame;
}
MeshFrame MeshFrame::goodbye() { return MeshFrame{}; }
MeshFrame MeshFrame::last_words(std::string words) {
  MeshFrame frame;
  frame.kind = FrameKind::kLastWords;
  frame.words = std::move(words);
  return frame;
}
MeshFrame MeshFrame::device_news(DeviceNews news) {
  MeshFrame frame;
  frame.kind = FrameKind::kDeviceNews;
  frame.news = std::move(news);
  return frame;
}

std::string encode_frame(const MeshFrame& frame) {
  std::string body;
  switch (frame.kind) {
    case FrameKind::kHello:
      put(body, kHelloMagic);
      put(body, kVersion);
      put(body, static_cast<int32_t>(frame.rank));
      put(body, frame.nonce);
      break;
    case FrameKind::kGoodbye:
      break;
    case FrameKind::kLastWords:
      body = capped(frame.words, kMaxFrameBody);
      break;
    case FrameKind::kDeviceNews:
      put(body, static_cast<uint8_t>(frame.news.kind));
      put(body, static_cast<int32_t>(frame.news.device.value()));
      put(body, frame.news.runtime);
      body += capped(frame.news.reason, kMaxFrameBody - body.size());
      break;
  }
  std::string bytes;
  bytes.reserve(kFrameHead + body.size());
  put(bytes, static_cast<uint32_t>(body.size()));
  put(bytes, static_cast<uint8_t>(frame.kind));
  bytes += body;
  return bytes;
}

void FrameReader::malformed(const std::string& why) const {
  throw_error<CollectiveError>("a message from ", from_, " on ordo's process mesh is malformed (", why, ")");
}

MeshFrame FrameReader::decode_body(FrameKind kind, std::string_view body) const {
  switch (kind) {
    case FrameKind::kHello: {
      constexpr size_t kSize = 2 * sizeof(uint32_t) + sizeof(int32_t) + sizeof(uint64_t);
      if (body.size() != kSize) malformed(str_cat("a hello of ", body.size(), " bytes instead of ", kSize));
      if (get<uint32_t>(body, 0) != kHelloMagic) malformed("a hello that is not ordo's");
      const uint32_t version = get<uint32_t>(body, 4);
      if (version != kVersion) malformed(str_cat("a hello of version ", version, " where ", kVersion, " is spoken"));
      return MeshFrame::hello(get<int32_t>(body, 8), get<uint64_t>(body, 12));
    }
    case FrameKind::kGoodbye:
      if (!body.empty()) malformed(str_cat("a goodbye with ", body.size(), " bytes in it"));
      return MeshFrame::goodbye();
    case FrameKind::kLastWords:
      return MeshFrame::last_words(std::string(body));
    case FrameKind::kDeviceNews: {
      constexpr size_t kFixed = sizeof(uint8_t) + sizeof(int32_t) + sizeof(uint64_t);
      if (body.size() < kFixed) malformed(str_cat("device news of ", body.size(), " bytes, shorter than ", kFixed));
      const uint8_t news_kind = get<uint8_t>(body, 0);
      if (news_kind > static_cast<uint8_t>(DeviceNews::Kind::kPresent)) {
        malformed(str_cat("device news of unknown kind ", int{news_kind}));
      }
      const int32_t device = get<int32_t>(body, 1);
      if (device < 0) malformed(str_cat("device news about device ", device));
      return MeshFrame::device_news({static_cast<DeviceNews::Kind>(news_kind), GlobalOrdinal(device),
                                     std::string(body.substr(kFixed)), get<uint64_t>(body, 5)});
    }
  }
  malformed(str_cat("a frame of unknown kind ", static_cast<int>(kind)));
}

std::optional<MeshFrame> FrameReader::next() {
  const std::string_view rest = std::string_view(buffer_).substr(consumed_);
  if (rest.size() < kFrameHead) return std::nullopt;
  const uint32_t body_size = get<uint32_t>(rest, 0);
  if (body_size > kMaxFrameBody) malformed(str_cat("a frame of ", body_size, " bytes, over the limit of ", kMaxFrameBody));
  if (rest.size() < kFrameHead + body_size) return std::nullopt;
  const auto kind = static_cast<FrameKind>(get<uint8_t>(rest, sizeof(uint32_t)));
  MeshFrame frame = decode_body(kind, rest.substr(kFrameHead, body_size));
  consumed_ += kFrameHead + body_size;
  // Keeps the buffer from growing without end on a long stream.
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  } else if (consumed_ > (size_t{64} << 10)) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return frame;
}

}  // namespace ordo::comm
