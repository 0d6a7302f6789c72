// The MPI transport's inbox (protocol/transport.h): one kind of message
// of a group (its headers, or its retractions) from one other process,
// received into a buffer posted before they come. MPI then matches a message as it lands and copies it once, into that
// buffer; a probed message would first wait in MPI's unexpected queue and
// be copied again when taken (1 KiB each way between two processes here:
// 0.7-1.3 us posted against 1.2-1.6 us probed).
//
//   PostedInbox inbox(link, rings, process, plan.headers);
//   PostedInbox::send(link, rings, encode_message(...), process, plan.headers);
//   while (std::optional<std::string_view> bytes = inbox.try_take()) decode_message(*bytes, ...);
//
// A message longer than the posted buffer (a large eager input, a long
// description) goes on its overflow tag, followed by an empty
// message on its tag that says so: the messages keep their order (MPI
// keeps it per tag), and the posted buffers stay small.
//
// From another process of this host the messages come through shared
// memory instead (host_rings.h); a message longer than a ring takes goes
// on the overflow tag by MPI, announced the same way.
//
// Locking: an inbox is used by one thread at a time (its group's leader);
// the MPI calls take the MPI lock (mpi_link.h), the rings their own.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <string_view>

#include "comm/mpi/host_rings.h"
#include "comm/mpi/mpi_link.h"
#include "comm/protocol/transport.h"

namespace ordo::comm {

class PostedInbox final : public Inbox {
 public:
  // The posted buffer: a header with a 1 KiB all_reduce's inputs for a few
  // members fits.
  static constexpr size_t kPostedBytes = 8 * 1024;

  // rings: this host's (null: none), used when they reach process.
  PostedInbox(MpiLink& link, HostRings* rings, int process, PostedTags tags);
  ~PostedInbox() override;
  PostedInbox(const PostedInbox&) = delete;
  PostedInbox& operator=(const PostedInbox&) = delete;

  // The next message from the process, if it has come; the bytes stay
  // valid until the next call.
  std::optional<std::string_view> try_take() override;

  // Sends message as the next one of its kind to process (to its inbox
  // there): through rings when they reach it.
  static void send(MpiLink& link, HostRings* rings, std::string_view message, int process, PostedTags tags);

 private:
  void post();

  MpiLink& link_;
  HostRings* const rings_;  // null when the messages come by MPI
  const int process_;
  const PostedTags tags_;
  std::string posted_;  // MPI writes the next message here
  std::string taken_;   // the message try_take returned last
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool overflow_announced_ = false;  // the next message is on the overflow tag
  unsigned idle_polls_ = 0;          // of the rings, since one found a message
};

}  // namespace ordo::comm
