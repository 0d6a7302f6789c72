#include "comm/mpi/start_waits.h"

#include <memory>
#include <mutex>

#include "comm/deadlines.h"
#include "comm/mpi/mpi_world.h"
#include "comm/mpi/process_mesh.h"
#include "comm/protocol/pacing.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

std::mutex g_failed_mu;
std::string g_failed_start;  // guarded by g_failed_mu; "" while no start failed

// What MPI may still write or read after a wait for it gave up (a
// collective cannot be cancelled): kept until exit, reachable from a
// static so that a leak checker sees it held.
void park(std::shared_ptr<void> buffers) {
  static auto* const mu = new std::mutex;
  static auto* const parked = new std::vector<std::shared_ptr<void>>;
  std::lock_guard<std::mutex> lock(*mu);
  parked->push_back(std::move(buffers));
}

[[noreturn]] void fail_start(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_failed_mu);
    if (g_failed_start.empty()) g_failed_start = message;
  }
  MpiWorld::record_peer_failure(message);
  // A start after the mesh's join: its wait at exit for the peers' goodbyes
  // lasts 2 s, as after a failed collective (a missing peer may never say it).
  if (ProcessMesh* mesh = ProcessMesh::joined()) mesh->gave_up(message);
  throw_error<CollectiveTimeoutError>(message);
}

// Runs wait; if it throws, parks buffers first.
template <typename Wait>
void keeping_on_failure(const std::shared_ptr<void>& buffers, const Wait& wait) {
  try {
    wait();
  } catch (...) {
    park(buffers);
    throw;
  }
}

void wait_for_request(MPI_Request& request, const StartPlace& place, const std::string& what,
                      const std::function<std::string()>& missing) {
  wait_at_start(
      place, what,
      [&] {
        std::lock_guard<std::mutex> lock(mpi_call_lock());
        int done = 0;
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what.c_str());
        return done != 0;
      },
      missing);
}

}  // namespace

void wait_at_start(const StartPlace& place, const std::string& what, const std::function<bool()>& done,
                   const std::function<std::string()>& missing) {
  Deadlines deadlines;
  Backoff backoff;
  while (!done()) {
    const Deadlines::Clock::time_point now = Deadlines::Clock::now();
    const std::string waits_in = str_cat(" for the other processes of its MPI job in ", place.step, " (", what, ")");
    if (deadlines.warning_due(now)) {
      report_warning(str_cat(place.process, " has waited ", deadlines.warn_seconds(), " s", waits_in,
                             "; missing: ", missing()));
    }
    if (deadlines.timed_out(now)) {
      fail_start(str_cat(place.process, " waited ", deadlines.timeout_seconds(), " s", waits_in,
                         "; missing: ", missing()));
    }
    backoff.pause();
  }
}

MPI_Comm duplicate_at_start(MPI_Comm comm, const StartPlace& place, const std::function<std::string()>& missing) {
  check_no_failed_start();
  auto copy = std::make_shared<MPI_Comm>(MPI_COMM_NULL);  // MPI writes it when the duplicate is made
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_call_lock());
    check_mpi(MPI_Comm_idup(comm, copy.get(), &request), "MPI_Comm_idup");
  }
  keeping_on_failure(copy, [&] { wait_for_request(request, place, "MPI_Comm_idup", missing); });
  std::lock_guard<std::mutex> lock(mpi_call_lock());
  check_mpi(MPI_Comm_set_errhandler(*copy, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return *copy;
}

std::vector<std::string> meet_at_start(MPI_Comm comm, std::string_view mine, const StartPlace& place,
                                       const std::function<std::string(int)>& describe) {
  check_no_failed_start();
  struct Meeting {
    std::string mine;
    std::vector<std::string> records;     // by rank
    std::vector<MPI_Request> sends, receives;  // by rank; null once done
  };
  auto meeting = std::make_shared<Meeting>();
  int rank = 0, size = 0;
  {
    std::lock_guard<std::mutex> lock(mpi_call_lock());
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    meeting->mine = std::string(mine);
    meeting->records.assign(static_cast<size_t>(size), std::string(mine.size(), '\0'));
    meeting->records[static_cast<size_t>(rank)] = meeting->mine;
    meeting->sends.assign(static_cast<size_t>(size), MPI_REQUEST_NULL);
    meeting->receives.assign(static_cast<size_t>(size), MPI_REQUEST_NULL);
    const int bytes = static_cast<int>(mine.size());
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      const auto at = static_cast<size_t>(q);
      check_mpi(MPI_Irecv(meeting->records[at].data(), bytes, MPI_BYTE, q, kStartTag, comm, &meeting->receives[at]),
                "MPI_Irecv");
      check_mpi(MPI_Isend(meeting->mine.data(), bytes, MPI_BYTE, q, kStartTag, comm, &meeting->sends[at]),
                "MPI_Isend");
    }
  }
  Meeting& m = *meeting;
  const auto all_done = [&] {
    std::lock_guard<std::mutex> lock(mpi_call_lock());
    bool done = true;
    for (std::vector<MPI_Request>* requests : {&m.receives, &m.sends}) {
      for (MPI_Request& request : *requests) {
        int finished = 1;
        if (request != MPI_REQUEST_NULL) check_mpi(MPI_Test(&request, &finished, MPI_STATUS_IGNORE), "MPI_Test");
        done = done && finished != 0;
      }
    }
    return done;
  };
  const auto missing = [&] {
    std::string who;
    for (int q = 0; q < size; ++q) {
      const auto at = static_cast<size_t>(q);
      if (m.receives[at] == MPI_REQUEST_NULL && m.sends[at] == MPI_REQUEST_NULL) continue;
      who += str_cat(who.empty() ? "" : ", ", describe(q));
    }
    return who;
  };
  keeping_on_failure(meeting, [&] { wait_at_start(place, "a message from every other process", all_done, missing); });
  return std::move(m.records);
}

std::string any_other_process(int rank, int size) {
  constexpr int kListed = 8;
  if (size == 2) return str_cat("process ", 1 - rank);
  if (size - 1 > kListed) return str_cat("one or more of the other ", size - 1, " processes");
  std::string listed;
  for (int q = 0, named = 0; q < size; ++q) {
    if (q == rank) continue;
    ++named;
    listed += str_cat(named == 1 ? "" : (named == size - 1 ? " and " : ", "), q);
  }
  return str_cat("one or more of processes ", listed);
}

void check_no_failed_start() {
  std::lock_guard<std::mutex> lock(g_failed_mu);
  if (g_failed_start.empty()) return;
  throw_error<CollectiveError>("ordo's MPI backend cannot start in this process: an earlier start failed (",
                               g_failed_start, "), and MPI starts once per process; restart the job");
}

}  // namespace ordo::comm
