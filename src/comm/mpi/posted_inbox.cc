#include "comm/mpi/posted_inbox.h"

#include <memory>
#include <utility>

#include "comm/protocol/kept_until_exit.h"
#include "core/check.h"

namespace ordo::comm {
namespace {

// How often a waiter that reads only rings still polls MPI: Open MPI moves
// this process's own MPI sends (a long message, a header to another host)
// only while some thread of it is inside MPI.
constexpr unsigned kRingPollsPerMpiPoll = 64;

bool by_rings(const HostRings* rings, int process) { return rings != nullptr && rings->reaches(process); }

}  // namespace

PostedInbox::PostedInbox(MpiLink& link, HostRings* rings, int process, PostedTags tags)
    : link_(link), rings_(by_rings(rings, process) ? rings : nullptr), process_(process), tags_(tags) {
  if (rings_ == nullptr) post();
}

PostedInbox::~PostedInbox() {
  // MPI may still be writing into the buffer if the cancel comes too late
  // (moving a string this long keeps its buffer where it is).
  if (!link_.cancel_receive(request_)) keep_until_exit(std::make_shared<std::string>(std::move(posted_)));
}

void PostedInbox::post() {
  posted_.resize(kPostedBytes);
  link_.post_receive(posted_.data(), posted_.size(), process_, tags_.tag, request_);
}

std::optional<std::string_view> PostedInbox::try_take() {
  if (overflow_announced_) {
    std::optional<std::string> large = link_.try_take(process_, tags_.overflow_tag);
    if (!large) return std::nullopt;
    overflow_announced_ = false;
    taken_ = std::move(*large);
    return std::string_view(taken_);
  }
  if (rings_ != nullptr) {
    if (!rings_->try_take(process_, tags_.tag, taken_)) {
      if (++idle_polls_ % kRingPollsPerMpiPoll == 0) {
        Requests none;
        link_.test(none);
      }
      return std::nullopt;
    }
    idle_polls_ = 0;
    if (!taken_.empty()) return std::string_view(taken_);
    overflow_announced_ = true;
    return try_take();
  }
  const std::optional<size_t> bytes = link_.test_receive(request_);
  if (!bytes) return std::nullopt;
  // Both buffers keep their size (a resize would clear 8 KiB each time).
  std::swap(taken_, posted_);
  post();
  if (*bytes == 0) {
    overflow_announced_ = true;
    return try_take();
  }
  return std::string_view(taken_.data(), *bytes);
}

void PostedInbox::send(MpiLink& link, HostRings* rings, std::string_view message, int process, PostedTags tags) {
  ORDO_CHECK(!message.empty(), ": an empty message announces a long one");
  const bool ringed = by_rings(rings, process);
  if (ringed && message.size() <= rings->max_message()) return rings->send(process, tags.tag, message);
  if (!ringed && message.size() <= kPostedBytes) return link.send_owned(std::string(message), process, tags.tag);
  // The long one first: it is on its way when the receiver learns of it.
  link.send_owned(std::string(message), process, tags.overflow_tag);
  if (ringed) return rings->send(process, tags.tag, {});
  link.send_owned(std::string(), process, tags.tag);
}

}  // namespace ordo::comm
