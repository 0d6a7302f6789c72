// What the processes of an MPI job tell each other on ordo's process mesh
// (process_mesh.h), beside MPI: one TCP stream per pair of processes, a
// stream of frames. Encoding and decoding only, no sockets.
//
//   std::string bytes = encode_frame(MeshFrame::device_news({DeviceNews::Kind::kFailed, 3, "boom"}));
//   FrameReader reader("process 1 (host vm, pid 42)");
//   reader.append(received.data(), received.size());
//   while (std::optional<MeshFrame> frame = reader.next()) ...   // throws on a malformed stream
//
// A frame is its body's length (uint32), its kind (uint8), then the body:
//   hello        "ordm", version (uint32), sender rank (int32), the receiver's nonce (uint64)
//   goodbye      nothing: a clean exit follows
//   last words   why the sender is about to end ("raised RuntimeError: boom")
//   device news  the news's kind (uint8), device (int32), runtime (uint64), the reason's bytes
// Both ends are processes of one job built from one source: native byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "comm/protocol/transport.h"  // DeviceNews
#include "core/device_numbers.h"

namespace ordo::comm {

enum class FrameKind : uint8_t { kHello = 1, kGoodbye = 2, kLastWords = 3, kDeviceNews = 4 };

struct MeshFrame {
  FrameKind kind = FrameKind::kGoodbye;
  int rank = 0;        // kHello: the sender's
  uint64_t nonce = 0;  // kHello: the receiver's, as the join's allgather told the sender
  std::string words;   // kLastWords
  DeviceNews news;     // kDeviceNews

  static MeshFrame hello(int rank, uint64_t nonce);
  static MeshFrame goodbye();
  static MeshFrame last_words(std::string words);
  static MeshFrame device_news(DeviceNews news);
};

// A body longer than this is malformed: nothing ordo sends comes close.
constexpr size_t kMaxFrameBody = size_t{1} << 20;

// The frame's bytes; a text longer than the limit is cut, never refused
// (a reason must not stop the news).
std::string encode_frame(const MeshFrame& frame);

// Cuts one peer's stream into frames. Owned by one thread.
class FrameReader {
 public:
  // `from` names the peer in errors.
  explicit FrameReader(std::string from) : from_(std::move(from)) {}
  void append(const char* bytes, size_t size) { buffer_.append(bytes, size); }
  // The next whole frame, if one has arrived. A stream that is not one of
  // the mesh's is a CollectiveError "a message from <from> on ordo's process
  // mesh is malformed (<why>)"; the reader is then unusable.
  std::optional<MeshFrame> next();
  // Bytes received that are not a whole frame yet.
  size_t pending_bytes() const { return buffer_.size() - consumed_; }

 private:
  [[noreturn]] void malformed(const std::string& why) const;
  MeshFrame decode_body(FrameKind kind, std::string_view body) const;

  std::string from_;
  std::string buffer_;
  size_t consumed_ = 0;  // buffer_ before this is read
};

}  // namespace ordo::comm
