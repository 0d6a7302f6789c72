#include "comm/mpi/host_rings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "comm/mpi/mpi_world.h"
#include "comm/mpi/start_waits.h"
#include "core/check.h"
#include "core/config.h"
#include "core/log.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr size_t kLine = 64;
// Each ring's two cursors, a cache line each: the writer's and the reader's.
constexpr size_t kCursorBytes = 2 * kLine;
constexpr size_t kMaxCapacity = 256 * 1024;
constexpr size_t kMinCapacity = 16 * 1024;
constexpr size_t kMaxSegment = 32 * 1024 * 1024;

size_t padded(size_t bytes) { return (bytes + 7) / 8 * 8; }

bool shm_wanted() { return config().mpi_shm; }

// The segment has no name at any time: it is made with memfd_create and
// reached by the host's other processes through the maker's descriptor
// (/proc/<pid>/fd/<fd>) while the maker keeps it open, so that nothing
// can stay in /dev/shm whoever is killed, and whenever. A named segment
// stayed behind when a process died between its making and the unlink
// that waited for every process to map it.
struct SegmentAddress {
  int32_t pid = 0;
  int32_t fd = -1;  // -1: the maker has none (it could not make it, or shared memory is off)
};

// A zeroed segment of `bytes`, open as a descriptor; -1, with why, when
// it cannot be made.
int make_segment(size_t bytes, std::string& why) {
  const int fd = memfd_create("ordo-rings", MFD_CLOEXEC);
  if (fd < 0) {
    why = str_cat("memfd_create: ", std::strerror(errno));
    return -1;
  }
  // Reserved now, not at first touch: no room is an error here, not a
  // SIGBUS in the middle of a collective.
  if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    why = str_cat("posix_fallocate of ", bytes, " bytes: ", std::strerror(rc));
    close(fd);
    return -1;
  }
  return fd;
}

// The maker's segment, open here; -1, with why, when it cannot be reached
// (the maker ended, or its /proc is hidden from this process).
int open_segment(const SegmentAddress& at, size_t bytes, std::string& why) {
  const std::string path = str_cat("/proc/", at.pid, "/fd/", at.fd);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    why = str_cat("open of ", path, ": ", std::strerror(errno));
    return -1;
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || static_cast<size_t>(status.st_size) < bytes) {
    why = str_cat(path, " is not a segment of ", bytes, " bytes");
    close(fd);
    return -1;
  }
  return fd;
}

std::byte* map_segment(int fd, size_t bytes, std::string& why) {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    why = str_cat("mmap: ", std::strerror(errno));
    return nullptr;
  }
  return static_cast<std::byte*>(memory);
}

// Closes a descriptor when the scope ends, however it ends.
struct ClosesAtEnd {
  int fd;
  ~ClosesAtEnd() {
    if (fd >= 0) close(fd);
  }
};

// This process's mapping of its host's segment: its own (the maker, at
// position 0 of the host) or the maker's, through /proc; null, with why
// (unless the maker had none to give), when there is none.
std::byte* map_host_segment(int me, int own_fd, const SegmentAddress& maker, size_t bytes,
                            const std::function<void()>& before_mapping, std::string& why) {
  if (me == 0) return own_fd >= 0 ? map_segment(own_fd, bytes, why) : nullptr;
  if (maker.fd < 0 || !why.empty()) return nullptr;
  if (before_mapping) before_mapping();
  const ClosesAtEnd opened{open_segment(maker, bytes, why)};
  return opened.fd >= 0 ? map_segment(opened.fd, bytes, why) : nullptr;
}

// The processes of comm sharing this one's memory, ranked by rank.
struct HostComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 0;
  int me = 0;  // this process's position
};
HostComm split_host(MPI_Comm comm, int rank) {
  HostComm host;
  std::lock_guard<std::mutex> lock(mpi_call_lock());
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host.comm), "MPI_Comm_split_type");
  check_mpi(MPI_Comm_size(host.comm, &host.size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(host.comm, &host.me), "MPI_Comm_rank");
  return host;
}

}  // namespace

// One direction between two processes: a byte ring with the writer's
// count of bytes written and the reader's of bytes read (both only grow;
// their difference is what waits in the ring).
struct HostRings::Ring {
  uint64_t* written;
  uint64_t* read;
  std::byte* bytes;
  size_t capacity;

  void copy_in(uint64_t at, const void* from, size_t count) const {
    if (count == 0) return;  // an empty message's bytes may be null
    const size_t offset = at & (capacity - 1), first = std::min(count, capacity - offset);
    std::memcpy(bytes + offset, from, first);
    std::memcpy(bytes, static_cast<const std::byte*>(from) + first, count - first);
  }
  void copy_out(uint64_t at, void* to, size_t count) const {
    const size_t offset = at & (capacity - 1), first = std::min(count, capacity - offset);
    std::memcpy(to, bytes + offset, first);
    std::memcpy(static_cast<std::byte*>(to) + first, bytes, count - first);
  }
  // Writes the record if it fits now. Caller holds the sender's outbox
  // mutex. free_from is what the sender last read of the reader's cursor:
  // it only grows, so room it showed is still there, and the cursor's line
  // is read again (taken from the reader's core) only when it shows too
  // little. Read at every send, it cost a transfer of that line each way
  // per message.
  bool try_write(int tag, std::string_view message, uint64_t& free_from) const {
    const uint64_t at = std::atomic_ref<uint64_t>(*written).load(std::memory_order_relaxed);
    const size_t record = kRecordHeader + padded(message.size());
    if (capacity - (at - free_from) < record) {
      // Acquire: the reader has copied out what it counts as read.
      free_from = std::atomic_ref<uint64_t>(*read).load(std::memory_order_acquire);
      if (capacity - (at - free_from) < record) return false;
    }
    const uint32_t header[2] = {static_cast<uint32_t>(tag), static_cast<uint32_t>(message.size())};
    copy_in(at, header, sizeof(header));
    copy_in(at + kRecordHeader, message.data(), message.size());
    std::atomic_ref<uint64_t>(*written).store(at + record, std::memory_order_release);
    return true;
  }
};

size_t HostRings::rings_bytes(size_t processes, size_t capacity) {
  return processes * processes * (kCursorBytes + capacity);
}

size_t HostRings::capacity_for(size_t processes) {
  const size_t rings = std::max<size_t>(1, processes * processes);
  return std::clamp(std::bit_floor(kMaxSegment / rings), kMinCapacity, kMaxCapacity);
}

std::unique_ptr<HostRings> HostRings::open(MPI_Comm comm, const Topology& topology,
                                           const std::function<void()>& before_mapping) {
  const int rank = topology.process();
  HostComm host = split_host(comm, rank);
  const auto free_host = [&] {
    std::lock_guard<std::mutex> lock(mpi_call_lock());
    check_mpi(MPI_Comm_free(&host.comm), "MPI_Comm_free");
  };
  if (host.size == 1) {
    free_host();
    return nullptr;
  }
  const auto processes_here = static_cast<size_t>(host.size);
  const size_t capacity = capacity_for(processes_here), bytes = rings_bytes(processes_here, capacity);
  // The first process of the host makes the segment, and keeps it open
  // until every other has mapped it or given up.
  std::string why;
  SegmentAddress mine{static_cast<int32_t>(getpid()), -1};
  if (!shm_wanted()) {
    why = "ORDO_MPI_SHM=off";
  } else if (host.me == 0) {
    mine.fd = make_segment(bytes, why);
  }
  const ClosesAtEnd made{mine.fd};
  struct Joining {
    int32_t rank;
    SegmentAddress segment;
  };
  const StartPlace place{str_cat("process ", rank), "the opening of its host's shared memory"};
  const auto describe = [&](int q) { return str_cat("the host's process ", q, " of ", host.size); };
  const std::vector<Joining> joining = meet_records_at_start(host.comm, Joining{rank, mine}, place, describe);
  std::vector<int> processes;  // the host's, by world rank
  for (const Joining& j : joining) processes.push_back(j.rank);
  std::byte* memory = map_host_segment(host.me, mine.fd, joining[0].segment, bytes, before_mapping, why);
  const std::vector<int32_t> mapped = meet_records_at_start(host.comm, int32_t{memory != nullptr}, place, describe);
  free_host();
  if (std::find(mapped.begin(), mapped.end(), 0) != mapped.end()) {
    if (memory != nullptr) munmap(memory, bytes);
    logging::log(LogLevel::kInfo,
                 str_cat("the processes of this host exchange headers by MPI, not shared memory",
                         why.empty() ? std::string(" (another process of the host could not map it)")
                                     : str_cat(" (", why, ")")));
    return nullptr;
  }
  return std::make_unique<HostRings>(std::move(processes), static_cast<size_t>(host.me), memory, capacity,
                                     [memory, bytes] { munmap(memory, bytes); });
}

HostRings::HostRings(std::vector<int> processes, size_t me, std::byte* memory, size_t capacity,
                     std::function<void()> release)
    : processes_(std::move(processes)), me_(me), memory_(memory), capacity_(capacity), release_(std::move(release)) {
  ORDO_CHECK(std::has_single_bit(capacity_) && capacity_ >= 2 * kLine, ": capacity ", capacity_);
  ORDO_CHECK(me_ < processes_.size());
  for (size_t i = 0; i < processes_.size(); ++i) {
    outboxes_.push_back(std::make_unique<Outbox>());
    inboxes_.push_back(std::make_unique<Inbox>());
  }
}

HostRings::~HostRings() {
  if (release_) release_();
}

std::optional<size_t> HostRings::other_position(int process) const {
  const auto it = std::find(processes_.begin(), processes_.end(), process);
  const auto position = static_cast<size_t>(it - processes_.begin());
  if (it == processes_.end() || position == me_) return std::nullopt;
  return position;
}

bool HostRings::reaches(int process) const { return other_position(process).has_value(); }

size_t HostRings::position_of(int process) const {
  const std::optional<size_t> position = other_position(process);
  ORDO_CHECK(position.has_value(), ": process ", process, " is not another process of this host");
  return *position;
}

HostRings::Ring HostRings::ring(size_t from, size_t to) const {
  const size_t index = from * processes_.size() + to;
  std::byte* cursors = memory_ + index * kCursorBytes;
  std::byte* data = memory_ + processes_.size() * processes_.size() * kCursorBytes + index * capacity_;
  return {reinterpret_cast<uint64_t*>(cursors), reinterpret_cast<uint64_t*>(cursors + kLine), data, capacity_};
}

void HostRings::send(int process, int tag, std::string_view message) {
  ORDO_CHECK(message.size() <= max_message(), ": a message of ", message.size(), " bytes for a ring of ", capacity_);
  const size_t to = position_of(process);
  Outbox& out = *outboxes_[to];
  std::lock_guard<std::mutex> lock(out.mu);
  if (out.pending.empty() && ring(me_, to).try_write(tag, message, out.free_from)) return;
  out.pending.emplace_back(tag, std::string(message));
  any_pending_.store(true, std::memory_order_release);
  flush_locked(to, out);
}

void HostRings::flush_locked(size_t to, Outbox& out) {
  const Ring r = ring(me_, to);
  while (!out.pending.empty() && r.try_write(out.pending.front().first, out.pending.front().second, out.free_from)) {
    out.pending.pop_front();
  }
  if (!out.pending.empty()) any_pending_.store(true, std::memory_order_release);
}

void HostRings::flush() {
  if (!any_pending_.exchange(false, std::memory_order_acq_rel)) return;
  for (size_t to = 0; to < processes_.size(); ++to) {
    if (to == me_) continue;
    std::lock_guard<std::mutex> lock(outboxes_[to]->mu);
    flush_locked(to, *outboxes_[to]);
  }
}

bool HostRings::try_take(int process, int tag, std::string& into) {
  const size_t from = position_of(process);
  Inbox& in = *inboxes_[from];
  const Ring r = ring(from, me_);
  // Most polls of a waiting leader find nothing: they learn it without the
  // mutex. A message another thread is moving from the ring to the queues
  // right now shows at a later poll.
  if (in.queued_count.load(std::memory_order_acquire) == 0 &&
      std::atomic_ref<uint64_t>(*r.written).load(std::memory_order_relaxed) ==
          std::atomic_ref<uint64_t>(*r.read).load(std::memory_order_relaxed)) {
    if (any_pending_.load(std::memory_order_acquire)) flush();
    return false;
  }
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(in.mu);
    if (auto queued = in.queued.find(tag); queued != in.queued.end() && !queued->second.empty()) {
      into = std::move(queued->second.front());
      queued->second.pop_front();
      in.queued_count.fetch_sub(1, std::memory_order_relaxed);
      found = true;
    } else {
      const uint64_t start = std::atomic_ref<uint64_t>(*r.read).load(std::memory_order_relaxed);
      uint64_t at = start;
      // Acquire: the bytes of every record counted as written are there.
      const uint64_t end = std::atomic_ref<uint64_t>(*r.written).load(std::memory_order_acquire);
      while (at < end) {
        uint32_t header[2];
        r.copy_out(at, header, sizeof(header));
        const size_t record = kRecordHeader + padded(header[1]);
        if (record > end - at) {
          throw_error<CollectiveError>("the shared-memory ring from process ", process, " holds a record of ",
                                       header[1], " bytes where only ", end - at - kRecordHeader, " were written");
        }
        const int record_tag = static_cast<int>(header[0]);
        const bool mine = !found && record_tag == tag;
        std::string& message = mine ? into : in.queued[record_tag].emplace_back();
        if (!mine) in.queued_count.fetch_add(1, std::memory_order_release);
        found = found || mine;
        message.resize(header[1]);
        r.copy_out(at + kRecordHeader, message.data(), header[1]);
        at += record;
      }
      // Release: the sender may write over these bytes once it sees this.
      if (at != start) std::atomic_ref<uint64_t>(*r.read).store(at, std::memory_order_release);
    }
  }
  if (any_pending_.load(std::memory_order_acquire)) flush();
  return found;
}

}  // namespace ordo::comm
