#include "comm/mpi/mpi_world.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "core/log.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

std::mutex g_join_mu;
std::unique_ptr<MpiWorld> g_world;  // guarded by g_join_mu; lives until exit

std::mutex g_failure_mu;
std::string g_peer_failure;  // guarded by g_failure_mu; "" while every peer is well
std::string g_exit_name;     // "process 1 (host vm, pid 4242)"; guarded by g_failure_mu

// What every process tells the others at join. Fixed size: one
// MPI_Allgather of bytes.
struct ProcessRecord {
  int32_t local_devices;
  int32_t pid;
  int32_t node_leader;  // the lowest world rank sharing this process's memory node
  char host_name[64];   // truncated, NUL-terminated
};

bool g_calls_closed = false;  // guarded by mpi_call_lock()

void finalize_at_exit() {
  // Threads of ordo may still poll (a worker in a collective, a thread
  // answering questions): they find the calls closed instead of a
  // finalized MPI.
  std::lock_guard<std::mutex> calls(mpi_call_lock());
  g_calls_closed = true;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(g_failure_mu);
    failure = g_peer_failure;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (!failure.empty()) {
    logging::log(LogLevel::kError, str_cat(g_exit_name, " exits without MPI_Finalize (its fence would wait for a peer "
                                           "that may never come): ", failure));
    return;
  }
  MPI_Finalize();
}

// Open MPI loads its plugins with dlopen, and some of Debian's do not name
// the libraries whose symbols they use: libmpi must be in the global scope
// even when ordo itself was loaded RTLD_LOCAL (Python). Promotes the
// already loaded libmpi, as mpi4py does.
void promote_libmpi_to_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) == 0 || info.dli_fname == nullptr) return;
  // Never closed: libmpi stays loaded for the life of the process anyway.
  dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

// Caller holds g_join_mu.
void initialize_mpi_locked() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  int provided = 0;
  if (initialized) {
    check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  } else {
    int finalized = 0;
    check_mpi(MPI_Finalized(&finalized), "MPI_Finalized");
    ORDO_ARG_CHECK(!finalized, "MPI was finalized in this process: ordo's MPI backend cannot start again");
    promote_libmpi_to_global();
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw_error<CollectiveError>("MPI provides thread level ", provided,
                                 "; ordo's MPI backend needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED,
                                 ") or more");
  }
}

ProcessRecord this_process(MPI_Comm comm, int rank, int local_devices) {
  ProcessRecord record{};
  record.local_devices = local_devices;
  record.pid = static_cast<int32_t>(getpid());
  if (gethostname(record.host_name, sizeof(record.host_name) - 1) != 0) {
    std::snprintf(record.host_name, sizeof(record.host_name), "unknown");
  }
  // Open MPI's own grouping of the processes of a node: host names need
  // not be unique (containers), shared memory is what counts.
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int node_rank = 0;
  check_mpi(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank");
  int leader = node_rank == 0 ? rank : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MAX, node), "MPI_Allreduce");
  record.node_leader = leader;
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
  return record;
}

std::string process_name(int process, const std::string& host_name, int pid) {
  return str_cat("process ", process, " (host ", host_name, ", pid ", pid, ")");
}
std::string describe_record(int process, const ProcessRecord& record) {
  return process_name(process, record.host_name, record.pid);
}

void check_same_devices(const std::vector<ProcessRecord>& records) {
  bool same = true;
  for (const ProcessRecord& r : records) same = same && r.local_devices == records[0].local_devices;
  if (same) return;
  std::string counts;
  for (size_t p = 0; p < records.size(); ++p) {
    counts += str_cat(p ? ", " : "", describe_record(static_cast<int>(p), records[p]), ": ",
                      records[p].local_devices);
  }
  throw_error<InvalidArgument>("the processes of this job disagree on how many devices each drives "
                               "(ORDO_NUM_DEVICES): ",
                               counts, "; every process must drive as many");
}

}  // namespace

std::mutex& mpi_call_lock() {
  static std::mutex* lock = new std::mutex;  // never destroyed: threads may poll until exit
  return *lock;
}

bool mpi_calls_closed() { return g_calls_closed; }

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) std::snprintf(text, sizeof(text), "error %d", rc);
  throw_error<CollectiveError>(what, " failed: ", text);
}

MpiWorld::MpiWorld(MPI_Comm comm, Topology topology, std::vector<std::string> host_names, std::vector<int> pids)
    : comm_(comm), topology_(std::move(topology)), host_names_(std::move(host_names)), pids_(std::move(pids)) {
  for (size_t p = 0; p < pids_.size(); ++p) {
    descriptions_.push_back(process_name(static_cast<int>(p), host_names_[p], pids_[p]));
  }
}

const MpiWorld& MpiWorld::join(int local_devices) {
  std::lock_guard<std::mutex> lock(g_join_mu);
  if (g_world) {
    ORDO_ARG_CHECK(g_world->topology().local_devices() == local_devices, "this process joined its MPI job with ",
                   g_world->topology().local_devices(), " devices; it cannot drive ", local_devices,
                   " (MPI cannot start twice in a process)");
    return *g_world;
  }
  ORDO_ARG_CHECK(local_devices >= 1, "a process needs at least one device, got ", local_devices);
  initialize_mpi_locked();
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");

  const ProcessRecord mine = this_process(comm, rank, local_devices);
  std::vector<ProcessRecord> records(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&mine, sizeof(ProcessRecord), MPI_BYTE, records.data(), sizeof(ProcessRecord), MPI_BYTE,
                          comm),
            "MPI_Allgather");
  {
    std::lock_guard<std::mutex> failure_lock(g_failure_mu);
    g_exit_name = describe_record(rank, mine);
  }
  try {
    // Every process has every record: all of them throw the same error,
    // and free the communicator together.
    check_same_devices(records);
  } catch (const InvalidArgument&) {
    MPI_Comm_free(&comm);
    throw;
  }

  std::map<int, int> host_of_leader;  // numbered in order of first appearance
  std::vector<int> host_of_process;
  std::vector<std::string> host_names;
  std::vector<int> pids;
  for (const ProcessRecord& r : records) {
    host_of_process.push_back(host_of_leader.try_emplace(r.node_leader, static_cast<int>(host_of_leader.size()))
                                  .first->second);
    host_names.emplace_back(r.host_name);
    pids.push_back(r.pid);
  }
  g_world.reset(new MpiWorld(comm, Topology(local_devices, rank, std::move(host_of_process)), std::move(host_names),
                             std::move(pids)));
  return *g_world;
}

void MpiWorld::record_peer_failure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(g_failure_mu);
  if (g_peer_failure.empty()) g_peer_failure = reason;
}

const std::string& MpiWorld::describe_process(int process) const {
  return descriptions_[static_cast<size_t>(process)];
}

}  // namespace ordo::comm
