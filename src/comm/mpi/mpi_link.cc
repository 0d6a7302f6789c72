#include "comm/mpi/mpi_link.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include "comm/mpi/mpi_world.h"
#include "comm/protocol/kept_until_exit.h"
#include "core/check.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// How many sends the link may own before a send reaps the finished ones.
constexpr size_t kOwnedBeforeReaping = 16;

int checked_int(size_t value, const char* what) {
  ORDO_ARG_CHECK(value <= static_cast<size_t>(INT_MAX), "the MPI backend cannot move ", what, " of ", value,
                 " bytes as one message (MPI counts in int)");
  return static_cast<int>(value);
}

// `rows` blocks of `block` bytes, `stride` apart, as an MPI datatype; the
// caller frees it. Both counts fit in int: the link cuts regions so.
MPI_Datatype region_type(size_t rows, size_t block, size_t stride) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_create_hvector(checked_int(rows, "a block count"), checked_int(block, "a block"),
                                    static_cast<MPI_Aint>(stride), MPI_BYTE, &type),
            "MPI_Type_create_hvector");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  return type;
}

// An MPI request as the transport's neutral transfer, and back.
static_assert(sizeof(MPI_Request) <= sizeof(Transfer::handle));
Transfer as_transfer(MPI_Request request) {
  Transfer transfer;
  std::memcpy(&transfer.handle, &request, sizeof request);
  return transfer;
}
MPI_Request as_request(Transfer transfer) {
  MPI_Request request;
  std::memcpy(&request, &transfer.handle, sizeof request);
  return request;
}

// MPI_Testall over requests (the MPI lock held): true, and requests
// empty, once all are done. A collective's few requests are tested from
// the stack, without an allocation.
bool test_all_locked(Requests& requests) {
  constexpr size_t kOnStack = 16;
  MPI_Request on_stack[kOnStack];
  std::vector<MPI_Request> on_heap;
  MPI_Request* mpi = on_stack;
  if (requests.size() > kOnStack) {
    on_heap.resize(requests.size());
    mpi = on_heap.data();
  }
  for (size_t i = 0; i < requests.size(); ++i) mpi[i] = as_request(requests[i]);
  int done = 0;
  check_mpi(MPI_Testall(static_cast<int>(requests.size()), mpi, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
  if (done) {
    requests.clear();
    return true;
  }
  for (size_t i = 0; i < requests.size(); ++i) requests[i] = as_transfer(mpi[i]);
  return false;
}

// Holds the MPI lock for a call that needs MPI running.
class Calling {
 public:
  explicit Calling(std::mutex& mu) : lock_(mu) {
    if (mpi_calls_closed()) throw_error<CollectiveError>("MPI is finalized: this process is exiting");
  }

 private:
  std::lock_guard<std::mutex> lock_;
};

}  // namespace

MpiLink::MpiLink(MPI_Comm comm, size_t piece_bytes)
    : comm_(comm), piece_bytes_(piece_bytes), mu_(mpi_call_lock()) {
  ORDO_CHECK(piece_bytes_ > 0 && piece_bytes_ <= static_cast<size_t>(INT_MAX), "a message piece of ", piece_bytes_,
             " bytes");
}

MpiLink::~MpiLink() {
  // Sends still owned here go to peers that never took them (they failed):
  // their buffers stay, as MPI may still read them.
  std::lock_guard<std::mutex> lock(mu_);
  if (!mpi_calls_closed()) reap_owned_locked();
  if (owned_.empty()) return;
  // Moving a list moves no element: the buffers stay where MPI reads them.
  keep_until_exit(std::make_shared<std::list<Owned>>(std::move(owned_)));
}

void MpiLink::post_locked(Way way, const std::byte* at, int count, MPI_Datatype type, int process, int tag,
                          Requests& into) {
  // MPI's send takes a const buffer; only a receive writes it.
  void* buffer = const_cast<std::byte*>(at);
  MPI_Request request = MPI_REQUEST_NULL;
  if (way == Way::kSend) {
    check_mpi(MPI_Isend(buffer, count, type, process, tag, comm_, &request), "MPI_Isend");
  } else {
    check_mpi(MPI_Irecv(buffer, count, type, process, tag, comm_, &request), "MPI_Irecv");
  }
  into.push_back(as_transfer(request));
}

void MpiLink::post_bytes_locked(Way way, const std::byte* at, size_t bytes, int process, int tag, Requests& into) {
  do {
    const size_t part = std::min(bytes, piece_bytes_);
    post_locked(way, at, static_cast<int>(part), MPI_BYTE, process, tag, into);
    at += part;
    bytes -= part;
  } while (bytes > 0);
}

void MpiLink::post_region_locked(Way way, const std::byte* base, const Region& region, int process, int tag,
                                 Requests& into) {
  const std::byte* at = base + region.offset;
  if (region.count == 1 || region.stride == region.block) {
    return post_bytes_locked(way, at, region.bytes(), process, tag, into);
  }
  if (region.block > piece_bytes_) {  // each block is pieces of its own
    for (size_t row = 0; row < region.count; ++row) {
      post_bytes_locked(way, at + row * region.stride, region.block, process, tag, into);
    }
    return;
  }
  // As many whole blocks per message as a piece holds.
  const size_t rows_per_message = piece_bytes_ / region.block;
  for (size_t row = 0; row < region.count; row += rows_per_message) {
    MPI_Datatype type = region_type(std::min(rows_per_message, region.count - row), region.block, region.stride);
    try {
      post_locked(way, at + row * region.stride, 1, type, process, tag, into);
    } catch (...) {
      MPI_Type_free(&type);
      throw;
    }
    MPI_Type_free(&type);  // MPI keeps it until the transfer is done
  }
}

void MpiLink::send(const void* data, size_t bytes, int process, int tag, Requests& into) {
  const Calling lock(mu_);
  post_bytes_locked(Way::kSend, static_cast<const std::byte*>(data), bytes, process, tag, into);
}

void MpiLink::receive(void* data, size_t bytes, int process, int tag, Requests& into) {
  const Calling lock(mu_);
  post_bytes_locked(Way::kReceive, static_cast<const std::byte*>(data), bytes, process, tag, into);
}

void MpiLink::send_region(const std::byte* base, const Region& region, int process, int tag, Requests& into) {
  const Calling lock(mu_);
  post_region_locked(Way::kSend, base, region, process, tag, into);
}

void MpiLink::receive_region(std::byte* base, const Region& region, int process, int tag, Requests& into) {
  const Calling lock(mu_);
  post_region_locked(Way::kReceive, base, region, process, tag, into);
}

void MpiLink::post_receive(void* data, size_t bytes, int process, int tag, MPI_Request& request) {
  const Calling lock(mu_);
  check_mpi(MPI_Irecv(data, checked_int(bytes, "a message"), MPI_BYTE, process, tag, comm_, &request), "MPI_Irecv");
}

std::optional<size_t> MpiLink::test_receive(MPI_Request& request) {
  const Calling lock(mu_);
  int done = 0;
  MPI_Status status;
  check_mpi(MPI_Test(&request, &done, &status), "MPI_Test");
  if (!done) return std::nullopt;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  return static_cast<size_t>(count);
}

bool MpiLink::cancel_receive(MPI_Request& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (request == MPI_REQUEST_NULL) return true;
  if (mpi_calls_closed()) return false;
  MPI_Cancel(&request);
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  if (done) return true;
  MPI_Request_free(&request);
  return false;
}

void MpiLink::send_owned(std::string message, int process, int tag, std::shared_ptr<const std::string> body,
                         int body_tag) {
  const int count = checked_int(message.size(), "a message");
  const Calling lock(mu_);
  Owned& owned = owned_.emplace_back(Owned{std::move(message), std::move(body), {}});
  try {
    post_locked(Way::kSend, reinterpret_cast<const std::byte*>(owned.message.data()), count, MPI_BYTE, process, tag,
                owned.requests);
    if (owned.body) {
      post_bytes_locked(Way::kSend, reinterpret_cast<const std::byte*>(owned.body->data()), owned.body->size(),
                        process, body_tag, owned.requests);
    }
  } catch (...) {
    // What was posted stays owned (MPI may read it); nothing posted: dropped.
    if (owned.requests.empty()) owned_.pop_back();
    throw;
  }
  // Reaped in batches: each MPI_Test is a pass of MPI's progress engine,
  // which a send of a small collective's header would pay every time.
  if (owned_.size() >= kOwnedBeforeReaping) reap_owned_locked();
}

void MpiLink::flush_owned(std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (mpi_calls_closed()) return;
      reap_owned_locked();
      if (owned_.empty()) return;
    }
    if (std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void MpiLink::reap_owned_locked() {
  for (auto it = owned_.begin(); it != owned_.end();) {
    it = test_all_locked(it->requests) ? owned_.erase(it) : std::next(it);
  }
}

bool MpiLink::test(Requests& requests) {
  const Calling lock(mu_);
  if (!owned_.empty()) reap_owned_locked();
  if (requests.empty()) {
    // Nothing of the caller's own: still move everyone else's messages.
    int flag = 0;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    return true;
  }
  return test_all_locked(requests);
}

std::optional<std::string> MpiLink::try_take(int process, int tag, int* source) {
  return try_take(process, tag, source, nullptr);
}

std::optional<std::string> MpiLink::try_take(int process, int tag, int* source, const FollowersOf& followers_of) {
  // Owned sends are reaped by the next send and by test(), not here: each
  // MPI_Test is a pass of MPI's progress engine, and a waiter that polls
  // for a message would make one per owned send at every poll.
  const Calling lock(mu_);
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  check_mpi(MPI_Improbe(process == kAnyProcess ? MPI_ANY_SOURCE : process, tag, comm_, &found, &message, &status), "MPI_Improbe");
  if (!found) return std::nullopt;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  std::string bytes(static_cast<size_t>(count), '\0');
  check_mpi(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
  if (source != nullptr) *source = status.MPI_SOURCE;
  if (followers_of) {
    const Followers body = followers_of(bytes, status.MPI_SOURCE);
    if (body.bytes > 0) {
      post_bytes_locked(Way::kReceive, body.data, body.bytes, status.MPI_SOURCE, body.tag, *body.requests);
    }
  }
  return bytes;
}

void MpiLink::abandon(Requests& requests) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mpi_calls_closed()) return requests.clear();
  for (const Transfer transfer : requests) {
    MPI_Request request = as_request(transfer);
    if (request != MPI_REQUEST_NULL) MPI_Cancel(&request);
    // Freed, not waited for: MPI finishes or drops it on its own.
    if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
  }
  requests.clear();
}

void MpiLink::free_communicator(MPI_Comm& comm) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mpi_calls_closed()) return;
  MPI_Comm_free(&comm);
}


}  // namespace ordo::comm
