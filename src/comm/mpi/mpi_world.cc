#include "comm/mpi/mpi_world.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/mpi/start_waits.h"
#include "core/log.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

std::mutex g_join_mu;
std::unique_ptr<MpiWorld> g_world;  // guarded by g_join_mu; lives until exit

std::mutex g_failure_mu;
std::string g_peer_failure;  // guarded by g_failure_mu; "" while every peer is well
std::string g_exit_name;     // "process 1 (host vm, pid 4242)"; guarded by g_failure_mu

// What every process tells the others at join. Fixed size: one meeting
// (start_waits.h) of bytes.
struct ProcessRecord {
  int32_t local_devices;
  int32_t pid;
  char host_name[64];  // truncated, NUL-terminated
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

ProcessRecord this_process(int local_devices) {
  ProcessRecord record{};
  record.local_devices = local_devices;
  record.pid = static_cast<int32_t>(getpid());
  if (gethostname(record.host_name, sizeof(record.host_name) - 1) != 0) {
    std::snprintf(record.host_name, sizeof(record.host_name), "unknown");
  }
  return record;
}

std::string process_name(int process, const std::string& host_name, int pid) {
  return str_cat("process ", process, " (host ", host_name, ", pid ", pid, ")");
}

// This process before MPI has started: its rank and the job's size as
// mpirun gave them (-1 when another launcher did).
int launcher_number(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::atoi(text) : -1;
}

// MPI_Init_thread on a thread of its own: it returns only once every
// process of the job has called it, and a process held before its start
// must not hold the others without a bound (start_waits.h). After a
// timeout the thread stays blocked in MPI until the process exits (which
// ends it: tried with a peer that never came).
int init_mpi_bounded() {
  struct Outcome {
    std::mutex mu;
    bool done = false;  // guarded by mu, as the two below
    int rc = MPI_SUCCESS;
    int provided = 0;
  };
  auto outcome = std::make_shared<Outcome>();
  std::thread([outcome] {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    std::lock_guard<std::mutex> lock(outcome->mu);
    outcome->done = true;
    outcome->rc = rc;
    outcome->provided = provided;
  }).detach();
  const int rank = launcher_number("OMPI_COMM_WORLD_RANK"), size = launcher_number("OMPI_COMM_WORLD_SIZE");
  const ProcessRecord self = this_process(0);
  const StartPlace place{
      rank < 0 ? str_cat("this process (pid ", self.pid, ")") : process_name(rank, self.host_name, self.pid),
      "the start of MPI"};
  wait_at_start(
      place, "MPI_Init_thread",
      [&] {
        std::lock_guard<std::mutex> lock(outcome->mu);
        return outcome->done;
      },
      [&] { return rank < 0 || size < 2 ? std::string("the other processes") : any_other_process(rank, size); });
  std::lock_guard<std::mutex> lock(outcome->mu);
  check_mpi(outcome->rc, "MPI_Init_thread");
  return outcome->provided;
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
    provided = init_mpi_bounded();
    std::atexit(finalize_at_exit);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw_error<CollectiveError>("MPI provides thread level ", provided,
                                 "; ordo's MPI backend needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED,
                                 ") or more");
  }
}

// Open MPI's own grouping of the processes of a node: host names need not
// be unique (containers), shared memory is what counts. The lowest rank of
// comm sharing each process's memory node, by rank.
std::vector<int> node_leaders(MPI_Comm comm, int rank, const StartPlace& place,
                              const std::function<std::string(int)>& describe) {
  int leader = rank;
  {
    // Every process has come (join's meeting): the split waits for none.
    std::lock_guard<std::mutex> lock(mpi_call_lock());
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Group node_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(node, &node_group), "MPI_Comm_group");
    check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
    const int first = 0;  // ranked by rank in comm: the node's rank 0 is its lowest
    check_mpi(MPI_Group_translate_ranks(node_group, 1, &first, group, &leader), "MPI_Group_translate_ranks");
    MPI_Group_free(&node_group);
    MPI_Group_free(&group);
    check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
  }
  return meet_records_at_start(comm, static_cast<int32_t>(leader), place, describe);
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

namespace {

std::vector<std::string> process_names(const std::vector<std::string>& host_names, const std::vector<int>& pids) {
  std::vector<std::string> names;
  for (size_t p = 0; p < pids.size(); ++p) names.push_back(process_name(static_cast<int>(p), host_names[p], pids[p]));
  return names;
}

}  // namespace

MpiWorld::MpiWorld(MPI_Comm comm, Topology topology, std::vector<std::string> host_names, std::vector<int> pids)
    : comm_(comm),
      processes_(std::move(topology), process_names(host_names, pids)),
      host_names_(std::move(host_names)),
      pids_(std::move(pids)) {}

const MpiWorld& MpiWorld::join(int local_devices) {
  std::lock_guard<std::mutex> lock(g_join_mu);
  if (g_world) {
    ORDO_ARG_CHECK(g_world->topology().local_devices() == local_devices, "this process joined its MPI job with ",
                   g_world->topology().local_devices(), " devices; it cannot drive ", local_devices,
                   " (MPI cannot start twice in a process)");
    return *g_world;
  }
  ORDO_ARG_CHECK(local_devices >= 1, "a process needs at least one device, got ", local_devices);
  check_no_failed_start();
  initialize_mpi_locked();
  int rank = 0, size = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const ProcessRecord mine = this_process(local_devices);
  const StartPlace place{describe_record(rank, mine), "the join of ordo's MPI world"};
  {
    std::lock_guard<std::mutex> failure_lock(g_failure_mu);
    g_exit_name = place.process;  // known before the waits: one may fail
  }
  MPI_Comm comm = duplicate_at_start(MPI_COMM_WORLD, place, [&] { return any_other_process(rank, size); });
  const auto describe = [](int q) { return str_cat("process ", q); };
  const std::vector<ProcessRecord> records = meet_records_at_start(comm, mine, place, describe);
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
  for (int leader : node_leaders(comm, rank, place, describe)) {
    const int next_host = static_cast<int>(host_of_leader.size());
    host_of_process.push_back(host_of_leader.try_emplace(leader, next_host).first->second);
  }
  std::vector<std::string> host_names;
  std::vector<int> pids;
  for (const ProcessRecord& r : records) {
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


}  // namespace ordo::comm
