// The waits of the MPI backend's start, bounded as a collective's wait is:
// MPI_Init_thread, the communicators' duplicates, the meeting of the
// processes at a runtime's start, the host's shared memory and the mesh's
// addresses. A process that does not come (held in Python before it
// starts ordo, stopped, or slow) makes the others warn at the collective
// warning time and fail at the collective timeout (ordo/collective_types.h),
// naming it where MPI lets ordo know which it is; before, they waited
// without a word and without an end.
//
//   const StartPlace place{"process 0 (host vm, pid 42)", "the start of a runtime"};
//   MPI_Comm comm = duplicate_at_start(MPI_COMM_WORLD, place, [] { return std::string("process 1"); });
//   std::vector<Address> all = meet_records_at_start(comm, mine, place, describe);  // by rank
//
// A start that timed out is final for the process: it records the failure
// (MpiWorld::record_peer_failure: at exit the process does not wait in
// MPI_Finalize for the missing one; ProcessMesh::gave_up: nor long for its
// goodbye) and every later start of the backend
// fails at once, saying why (messages of the failed start may still
// arrive, and would be taken for a later one's).
//
// Locking: each MPI call takes mpi_call_lock() for itself; the waits hold
// no lock between polls. The record of a failed start is guarded by a
// mutex of its own, a leaf.
#pragma once

#include <mpi.h>

#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ordo::comm {

// Who waits, and in what step of the start: for the warning and the error.
struct StartPlace {
  std::string process;  // "process 0 (host vm, pid 42)"
  std::string step;     // "the start of a runtime"
};

// Calls done() (which takes the MPI lock itself if it calls MPI) until it
// is true. At the collective warning time it warns once, "<process> has
// waited <s> s for the other processes of its MPI job in <step> (<what>);
// missing: <missing()>"; at the collective timeout it records the failure
// and throws CollectiveTimeoutError "<process> waited <s> s ...".
void wait_at_start(const StartPlace& place, const std::string& what, const std::function<bool()>& done,
                   const std::function<std::string()>& missing);

// A duplicate of comm (MPI_Comm_idup, errors returned rather than fatal),
// bounded as above.
MPI_Comm duplicate_at_start(MPI_Comm comm, const StartPlace& place, const std::function<std::string()>& missing);

// Every process of comm gives each other one its record (`mine`, as many
// bytes in every process) by point to point messages: the records by
// rank (this process's own at its rank) once all have come. The warning
// and the error name the processes whose records have not come
// (describe(rank)). comm must carry no other point to point message with
// kStartTag.
inline constexpr int kStartTag = 1;
std::vector<std::string> meet_at_start(MPI_Comm comm, std::string_view mine, const StartPlace& place,
                                       const std::function<std::string(int)>& describe);
// The same for a record of plain bytes.
template <typename Record>
std::vector<Record> meet_records_at_start(MPI_Comm comm, const Record& mine, const StartPlace& place,
                                  const std::function<std::string(int)>& describe) {
  static_assert(std::is_trivially_copyable_v<Record>);
  const std::vector<std::string> bytes =
      meet_at_start(comm, std::string_view(reinterpret_cast<const char*>(&mine), sizeof(Record)), place, describe);
  std::vector<Record> records(bytes.size());
  for (size_t q = 0; q < bytes.size(); ++q) std::memcpy(&records[q], bytes[q].data(), sizeof(Record));
  return records;
}

// "process 1", or "one or more of processes 0, 2 and 3", or "one or more
// of the other 99 processes": whom a process of `size` at `rank` may be
// waiting for when MPI cannot say which.
std::string any_other_process(int rank, int size);

// Throws CollectiveError, naming the earlier failure, if a start of the
// backend timed out in this process.
void check_no_failed_start();

}  // namespace ordo::comm
