// ordo's MPI backend against Open MPI's MPI_Allreduce (bench/mpi_allreduce.c,
// run by scripts/bench-mpi.sh in the same invocation, alternating): float32
// sum, the same sizes and the same timing protocol (a barrier, a run of
// back-to-back calls, the slowest device's time per call, the median of
// kReps runs; 100 back-to-back 1 KiB calls per run for the latency).
//
//   scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=1 build/ordo_bench_mpi comm 4194304 16777216
//   scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=1 build/ordo_bench_mpi graph 4194304
//
// - comm: the communicator alone (comm::make_mpi_communicator), driven by one
//   thread per local device, pinned where the runtime pins that device's
//   worker (which calls the communicator): unpinned, the two processes'
//   threads share one CPU in about half the runs, and a 1 KiB all_reduce
//   then takes 100-150 us instead of 3.
// - graph: ordo's runtime (traced, cut and run): one all_reduce per step
//   for the bandwidth, 100 chained 1 KiB all_reduces in one graph for the
//   latency. Needs a runtime that runs on the MPI world under mpirun.
//
// Process 0 prints "bytes seconds_per_all_reduce" per size, then
// "latency_1k seconds", as bench/mpi_allreduce.c does. With one device per
// process it also times MPI_Allreduce itself in the same processes, its
// runs of 100 1 KiB calls alternating with ordo's ("latency_1k_mpi"): a
// separate invocation may get the two processes' CPUs placed otherwise
// (MPI's own 1 KiB time moves between 0.6 and 1.5 us from one invocation
// to the next on the 2-core VM). At the graph level it also prints the
// part of ordo's time spent tracing ("latency_1k_trace", per all_reduce).
//
//   build/ordo_bench_mpi machine    (no mpirun) prints "cross_core_one_way_ns
//   N": the machine's state that the 1 KiB figures follow.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cross_core_latency.h"
#include "comm/fingerprint.h"
#include "comm/mpi/host_rings.h"
#include "comm/protocol/message_header.h"
#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_world.h"
#include "device/buffer.h"
#include "device/cpu_placement.h"
#include "ordo/ordo.h"
#include "runtime/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReps = 7;
constexpr int kChain = 100;        // all_reduces per latency run
constexpr int64_t kLatencyBytes = 1024;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// bench/mpi_allreduce.c's count of calls per run.
int iterations_for(int64_t bytes) { return static_cast<int>(std::clamp<int64_t>((int64_t{32} << 20) / bytes, 3, 1000)); }

// What a device's thread does, at either level.
struct Device {
  virtual ~Device() = default;
  // Prepares all_reduces of `bytes` (float32).
  virtual void use_size(int64_t bytes) = 0;
  // `count` all_reduces back to back (chained in one graph at the graph level).
  virtual void all_reduces(int count) = 0;
  // The largest of every device's `seconds`: also a barrier.
  virtual double slowest(double seconds) = 0;
  // The seconds spent tracing since the last call (at the graph level).
  virtual double take_trace_seconds() { return 0; }
};

// Seconds per call of one run of `calls` all_reduces made by `run`: the
// slowest device's (device meets its peers before and after).
double one_run(Device& device, int calls, const std::function<void()>& run) {
  device.slowest(0);
  const auto start = Clock::now();
  run();
  return device.slowest(std::chrono::duration<double>(Clock::now() - start).count() / calls);
}

// Seconds per all_reduce of `runs` x `per_run` all_reduces of the device.
double one_run(Device& device, int runs, int per_run) {
  return one_run(device, runs * per_run, [&] {
    for (int i = 0; i < runs; ++i) device.all_reduces(per_run);
  });
}

// Seconds per all_reduce: the median over kReps runs.
double time_per_all_reduce(Device& device, int runs, int per_run) {
  std::vector<double> samples;
  for (int r = 0; r < kReps; ++r) samples.push_back(one_run(device, runs, per_run));
  return median(samples);
}

// MPI_Allreduce of 1 KiB on a copy of the world's communicator, called as
// ordo's backend calls MPI (under its lock): the latency's reference, in
// the same processes, with one device per process (MPI's ranks are then
// ordo's devices).
class MpiReference {
 public:
  explicit MpiReference(MPI_Comm world) : in_(kLatencyBytes / 4, 1.0f), out_(kLatencyBytes / 4) {
    std::lock_guard<std::mutex> lock(ordo::comm::mpi_call_lock());
    ordo::comm::check_mpi(MPI_Comm_dup(world, &comm_), "MPI_Comm_dup");
  }
  void all_reduces(int count) {
    std::lock_guard<std::mutex> lock(ordo::comm::mpi_call_lock());
    for (int i = 0; i < count; ++i) {
      ordo::comm::check_mpi(MPI_Allreduce(in_.data(), out_.data(), static_cast<int>(in_.size()), MPI_FLOAT, MPI_SUM,
                                          comm_),
                            "MPI_Allreduce");
    }
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;  // kept until exit, as the communicator is
  std::vector<float> in_, out_;
};

// The whole measurement, on every local device's thread; `print` on one.
void measure(Device& device, const std::vector<int64_t>& sizes, bool print, bool chain_in_graph,
             MpiReference* reference = nullptr) {
  for (int64_t bytes : sizes) {
    device.use_size(bytes);
    time_per_all_reduce(device, 2, 1);  // warm: pages, plans, MPI's connections
    const double seconds = time_per_all_reduce(device, iterations_for(bytes), 1);
    if (print) std::printf("%lld %.9g\n", static_cast<long long>(bytes), seconds);
  }
  device.use_size(kLatencyBytes);
  // MPI makes 100 calls per run; the graph level runs them as one chain.
  const int runs = chain_in_graph ? 1 : kChain, per_run = chain_in_graph ? kChain : 1;
  time_per_all_reduce(device, runs, per_run);
  if (reference == nullptr) {
    const double latency = time_per_all_reduce(device, runs, per_run);
    if (print) std::printf("latency_1k %.9g\n", latency);
  } else {
    reference->all_reduces(kChain);  // warm
    std::vector<double> ordo_runs, trace_runs, mpi_runs;
    device.take_trace_seconds();
    for (int r = 0; r < kReps; ++r) {
      ordo_runs.push_back(one_run(device, runs, per_run));
      trace_runs.push_back(device.slowest(device.take_trace_seconds() / kChain));
      mpi_runs.push_back(one_run(device, kChain, [&] { reference->all_reduces(kChain); }));
    }
    if (print) std::printf("latency_1k %.9g\nlatency_1k_mpi %.9g\n", median(ordo_runs), median(mpi_runs));
    // The part of the graph level's figure spent tracing (in it, not added).
    if (print && chain_in_graph) std::printf("latency_1k_trace %.9g\n", median(trace_runs));
  }
  if (print) std::fflush(stdout);
}

using ordo::comm::CollectiveCall;
using ordo::comm::HostRings;
using ordo::comm::Communicator;
using ordo::comm::MpiWorld;

// A local device of the communicator, called from its own thread.
class CommDevice : public Device {
 public:
  CommDevice(Communicator& comm, ordo::GlobalOrdinal ordinal) : comm_(comm), ordinal_(ordinal) {
    max_.reduce = ordo::ReduceType::kMax;
    time_in_ = ordo::device::allocate_buffer(ordo::DType::kFloat64, {1});
    time_out_ = ordo::device::allocate_buffer(ordo::DType::kFloat64, {1});
  }
  void use_size(int64_t bytes) override {
    in_ = ordo::device::allocate_buffer(ordo::DType::kFloat32, {bytes / 4});
    out_ = ordo::device::allocate_buffer(ordo::DType::kFloat32, {bytes / 4});
    float* data = in_->mutable_data<float>();
    for (int64_t i = 0; i < in_->numel; ++i) data[i] = static_cast<float>(i % 97 + ordinal_.value());
    std::memset(out_->storage.get(), 0, out_->nbytes());
  }
  void all_reduces(int count) override {
    const ordo::device::Buffer* in[] = {in_.get()};
    const ordo::device::Buffer* out[] = {out_.get()};
    for (int i = 0; i < count; ++i) comm_.run({ordo::ir::OpKind::kAllReduce, sum_, ordinal_, in, out});
  }
  double slowest(double seconds) override {
    *time_in_->mutable_data<double>() = seconds;
    const ordo::device::Buffer* in[] = {time_in_.get()};
    const ordo::device::Buffer* out[] = {time_out_.get()};
    comm_.run({ordo::ir::OpKind::kAllReduce, max_, ordinal_, in, out});
    return *time_out_->mutable_data<double>();
  }

 private:
  Communicator& comm_;
  const ordo::GlobalOrdinal ordinal_;
  ordo::ir::CollectiveAttrs sum_, max_;
  std::shared_ptr<ordo::device::Buffer> in_, out_, time_in_, time_out_;
};

// A local device of ordo's runtime, called from its spawn thread.
class GraphDevice : public Device {
 public:
  explicit GraphDevice(int device) : device_(device) {}
  void use_size(int64_t bytes) override {
    x_ = ordo::rand_uniform({bytes / 4}, static_cast<uint64_t>(ordo::get_ordinal(device_)), 0.0, 1.0, ordo::DType::kFloat32, device_);
    ordo::mark_step_and_wait(device_);
  }
  void all_reduces(int count) override {
    const auto start = Clock::now();
    ordo::Tensor y = x_;
    // Scaled so that a chain stays finite; one per step when count is 1.
    for (int i = 0; i < count; ++i) y = ordo::all_reduce(ordo::ReduceType::kSum, y, count > 1 ? 0.5 : 1.0);
    trace_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    ordo::mark_step_and_wait(device_);
  }
  double slowest(double seconds) override {
    ordo::Tensor t = ordo::from_vector<double>({seconds}, {1}, device_);
    return ordo::all_reduce(ordo::ReduceType::kMax, t).item<double>();
  }
  double take_trace_seconds() override { return std::exchange(trace_seconds_, 0.0); }

 private:
  const int device_;
  ordo::Tensor x_;
  double trace_seconds_ = 0;
};

// What moving a 1 KiB all_reduce's header costs alone, between the two
// processes of one host: each sends the other the message a leader sends
// (the same encoding and size: a member's fingerprint, then the staged 1 KiB)
// through the host's shared-memory rings and takes the other's, 100 times a
// run, the median of kReps runs. No checks, no fold: the floor under the
// communicator's 1 KiB figure ("ring_exchange_1k"), beside MPI's own.
void time_ring_exchange(const MpiWorld& world, HostRings& rings, CommDevice& device, ordo::GlobalOrdinal ordinal,
                        bool print) {
  constexpr int kTag = 1 << 20;  // a tag no group uses
  const int peer = 1 - world.rank();
  auto in = ordo::device::allocate_buffer(ordo::DType::kFloat32, {kLatencyBytes / 4});
  auto out = ordo::device::allocate_buffer(ordo::DType::kFloat32, {kLatencyBytes / 4});
  const ordo::device::Buffer* ins[] = {in.get()};
  const ordo::device::Buffer* outs[] = {out.get()};
  ordo::ir::CollectiveAttrs sum;
  ordo::comm::Fingerprint fingerprint;
  fingerprint.assign({ordo::ir::OpKind::kAllReduce, sum, ordinal, ins, outs});
  const ordo::comm::MemberEntry member{ordinal.value(), fingerprint.words(), {}};
  const std::string message = ordo::comm::encode_message(
      {ordo::comm::MessageKind::kHeader, 0, world.rank(), std::span(&member, 1), ordo::ErrorCode::kExecution, {},
       ordinal.value(), 0},
      kLatencyBytes);
  std::string received;
  auto exchanges = [&] {
    for (int i = 0; i < kChain; ++i) {
      rings.send(peer, kTag, message);
      while (!rings.try_take(peer, kTag, received)) {
      }
    }
  };
  exchanges();  // warm
  std::vector<double> runs;
  for (int r = 0; r < kReps; ++r) runs.push_back(one_run(device, kChain, exchanges));
  if (print) std::printf("ring_exchange_1k %.9g\n", median(runs));
}

int run_comm(const std::vector<int64_t>& sizes) {
  const MpiWorld& world = MpiWorld::join(ordo::runtime::num_devices_from_env());
  Communicator* comm = ordo::comm::make_mpi_communicator(world).release();  // until exit: mpirun ends the job (as the tests do)
  // Rings of the bench's own, for the transport alone (null on two hosts).
  const std::unique_ptr<HostRings> rings = HostRings::open(world.comm(), world.topology());
  const int local = world.topology().local_devices();
  std::vector<std::thread> threads;
  for (int i = 0; i < local; ++i) {
    threads.emplace_back([&, i] {
      // Where the runtime's worker of this device runs (and calls the
      // communicator from).
      const ordo::GlobalOrdinal ordinal = world.topology().global_ordinal(ordo::LocalDevice(i));
      ordo::device::pin_current_thread(ordo::device::worker_cpu(world.topology().host_ordinal(ordinal)));
      CommDevice device(*comm, ordinal);
      std::optional<MpiReference> reference;
      if (local == 1) reference.emplace(world.comm());
      const bool print = world.rank() == 0 && i == 0;
      measure(device, sizes, print, /*chain_in_graph=*/false, reference ? &*reference : nullptr);
      if (local == 1 && world.size() == 2 && rings != nullptr) time_ring_exchange(world, *rings, device, ordinal, print);
    });
  }
  for (std::thread& t : threads) t.join();
  return 0;
}

int run_graph(const std::vector<int64_t>& sizes) {
  ordo::init(ordo::runtime::num_devices_from_env());
  const char* processes = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (processes != nullptr && std::atoi(processes) > 1 && ordo::world_size() == ordo::num_devices()) {
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank != nullptr && std::atoi(rank) == 0) std::fprintf(stderr,
                 "ordo_bench_mpi graph: skipped: under mpirun with %s processes ordo's runtime runs only this "
                 "process's %d devices (this build's runtime does not run on the MPI world)\n",
                 processes, ordo::num_devices());
    ordo::shutdown();
    return 77;
  }
  const bool first_process = ordo::get_ordinal(0) == 0;
  const int first_ordinal = ordo::get_ordinal(0);
  ordo::spawn([&](int ordinal) {  // spawn gives global ordinals; the runtime's calls take indices
    GraphDevice device(ordinal - first_ordinal);
    std::optional<MpiReference> reference;
    if (ordo::num_devices() == 1 && ordo::world_size() > 1) reference.emplace(MpiWorld::join(1).comm());
    measure(device, sizes, first_process && ordinal == first_ordinal, /*chain_in_graph=*/true,
            reference ? &*reference : nullptr);
  });
  ordo::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string level = argc > 1 ? argv[1] : "";
  if (level == "machine") {
    if (const std::optional<double> ns = ordo_bench::cross_core_one_way_ns()) {
      std::printf("cross_core_one_way_ns %.1f\n", *ns);
    }
    return 0;
  }
  if (level != "comm" && level != "graph") {
    std::fprintf(stderr, "usage: %s comm|graph <bytes>...  (under scripts/mpirun.sh), or %s machine\n", argv[0],
                 argv[0]);
    return 2;
  }
  std::vector<int64_t> sizes;
  for (int i = 2; i < argc; ++i) {
    const long long bytes = std::atoll(argv[i]);
    if (bytes <= 0 || bytes % 4 != 0) {
      std::fprintf(stderr, "%s: a size must be a positive multiple of 4 bytes, not '%s'\n", argv[0], argv[i]);
      return 2;
    }
    sizes.push_back(bytes);
  }
  return level == "comm" ? run_comm(sizes) : run_graph(sizes);
}
