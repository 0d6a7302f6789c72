// What the communication conformance suite needs of a backend, and the
// plain reference every result is compared with. The suite drives a
// Communicator directly: no tracing, no runtime, no graphs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "comm/in_process/in_process_communicator.h"
#include "comm/simulated/simulated_job.h"
#include "core/half_float.h"
#include "device/buffer.h"
#include "ordo/ordo.h"

namespace ordo::conformance {

// What a case tells the communicator of a device: comm().tell({Event::kFailed, d, "why"}).
using Event = comm::DeviceEvent::Kind;

// This process's part of a world under test: its communicator and the
// devices it drives (global ordinals, ascending). In-process that is every
// device; under MPI the process's own (rank x L .. rank x L + L - 1). The
// suite calls the communicator for these devices only, builds every
// device's inputs (they depend on the case and the device alone) so that
// it computes the whole reference itself, and checks its own devices.
struct Session {
  std::unique_ptr<comm::Communicator> comm;
  std::vector<int> devices;
  // At every step of a case, after the barrier: the simulated transport
  // delivers what was sent before it (a real barrier outlasts a message).
  std::function<void()> settle;
  // How many devices each process of the world drives (0 or the world: one process).
  int devices_per_process = 0;
  bool drives(int device) const { return std::binary_search(devices.begin(), devices.end(), device); }
};

// A backend under test: how to make this process's session of a world.
struct Backend {
  std::string name;
  // The one world size it makes (an MPI job's processes x devices); 0: any.
  int world = 0;
  std::function<Session(int world)> make;
  // Set by a backend whose worlds span processes (MPI, a job of one
  // process too): holds this process until every process of the job calls
  // it, for the steps of a case that must follow another process's (a
  // process that skips a device must not leave the case, or clear a mark,
  // before its peers saw what they wait for). Out of band: it needs no
  // live device, and no collective or exchange of the backend under test.
  std::function<void()> barrier;
  // Whether the world's devices live in several processes (MPI, the
  // simulated transport): the suites then cover fewer large cases.
  bool spans_processes = false;
};

inline Backend in_process_backend() {
  return {"in_process", 0, [](int world) {
            Session session{std::make_unique<comm::InProcessCommunicator>(world), std::vector<int>(world), {}};
            for (int d = 0; d < world; ++d) session.devices[d] = d;
            return session;
          },
          {}};
}

// The protocol among processes over the simulated transport
// (comm/simulated/): a world of 4, 6 or 8 is processes of 2 devices, any
// other processes of 1, and the schedule (delays, reorderings, sends done
// only once received, a slow or frozen process; no death) is drawn from
// the world size.
inline Backend simulated_backend() {
  return {"simulated", 0, [](int world) {
            const int per_process = world >= 4 && world % 2 == 0 ? 2 : 1;
            const int processes = world / per_process;
            const comm::Schedule schedule = comm::Schedule::from_seed(static_cast<uint64_t>(world), processes,
                                                                      comm::Faults::kBenign);
            auto job = std::make_unique<comm::SimulatedJob>(processes, per_process, schedule);
            comm::SimNetwork& network = job->network();
            Session session{std::move(job), std::vector<int>(world), [&network] { network.settle(); }, per_process};
            for (int d = 0; d < world; ++d) session.devices[d] = d;
            return session;
          },
          {},
          true};
}

// Every backend this binary checks: the in-process one and the simulated
// one, unless the binary's main put others in their place before
// InitGoogleTest (the MPI variants, tests/mpi/conformance_mpi_main.cc).
inline std::vector<Backend>& backends() {
  static std::vector<Backend> list = {in_process_backend(), simulated_backend()};
  return list;
}

// A parameterised suite's case: a backend (its index in backends()) and a
// world size, named "in_process_world4".
using Param = std::tuple<size_t, int>;
inline std::string backend_and_world(const ::testing::TestParamInfo<Param>& info) {
  return backends()[std::get<0>(info.param)].name + "_world" + std::to_string(std::get<1>(info.param));
}

// Every backend at each world size from min_world to 8 that it makes.
inline std::vector<Param> cases(int min_world) {
  std::vector<Param> all;
  for (size_t b = 0; b < backends().size(); ++b) {
    for (int world = min_world; world <= 8; ++world) {
      if (backends()[b].world == 0 || backends()[b].world == world) all.emplace_back(b, world);
    }
  }
  return all;
}

// What every case of both suites shares: the backend, the world and this
// process's session of it.
class BackendCase : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    world_ = std::get<1>(GetParam());
    session_ = backend().make(world_);
  }
  void TearDown() override {
    // Every process ends the case before any destroys its communicator.
    step("the end of the case");
    session_ = {};
    set_collective_timeouts({});
  }

  const Backend& backend() const { return backends()[std::get<0>(GetParam())]; }
  comm::Communicator& comm() { return *session_.comm; }
  const std::vector<int>& devices() const { return session_.devices; }
  bool drives(int device) const { return session_.drives(device); }
  bool across_processes() const { return backend().spans_processes; }

  // Waits for every process of the job (nothing in-process). Every
  // process calls it as many times in a case: unconditionally, and where
  // no ASSERT of the case can have returned before it.
  void step(const char* what) {
    if (session_.settle) session_.settle();
    if (!backend().barrier) return;
    try {
      backend().barrier();
    } catch (const Error& e) {
      ADD_FAILURE() << "the processes could not meet at " << what << ": " << e.what();
    }
  }

  // A fresh communicator of the same world, made once every process is
  // done with the old one.
  void remake() {
    step("a fresh communicator");
    session_ = {};
    session_ = backend().make(world_);
  }

  int world_ = 1;
  Session session_;
};

// One device's part in one collective: its attributes, inputs and outputs.
struct DevicePart {
  std::vector<std::shared_ptr<device::Buffer>> inputs;
  std::vector<std::shared_ptr<device::Buffer>> outputs;
};

// Runs one collective with every device of the session on a thread of its
// own, as the devices' workers would, and returns each device's error
// message ("" when it succeeded; parts and the outcome are indexed by
// global ordinal). attrs[d] is device d's attributes; a device whose
// skip(d) holds does not take part; before(d), if given, runs on device d's
// thread just before it calls the communicator.
struct Outcome {
  std::vector<std::string> errors;        // by device; "" = success
  std::vector<ErrorCode> codes;           // by device, for the failed ones
  std::vector<comm::CollectiveTiming> timings;  // by device, for the ones that succeeded
};
inline Outcome run_collective(Session& session, ir::OpKind op, const std::vector<ir::CollectiveAttrs>& attrs,
                              std::vector<DevicePart>& parts, const std::function<bool(int)>& skip = {},
                              const std::function<void(int)>& before = {}) {
  Outcome outcome{std::vector<std::string>(parts.size()), std::vector<ErrorCode>(parts.size()),
                  std::vector<comm::CollectiveTiming>(parts.size())};
  std::vector<std::thread> threads;
  for (const int d : session.devices) {
    if (skip && skip(d)) continue;
    threads.emplace_back([&, d] {
      std::vector<const device::Buffer*> inputs, outputs;
      for (const auto& b : parts[d].inputs) inputs.push_back(b.get());
      for (const auto& b : parts[d].outputs) outputs.push_back(b.get());
      if (before) before(d);
      try {
        session.comm->run({op, attrs[d], GlobalOrdinal(d), inputs, outputs, &outcome.timings[d]});
      } catch (const Error& e) {
        outcome.errors[d] = e.what();
        outcome.codes[d] = e.code();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return outcome;
}

// The input value of element i of tensor t on device d: every dtype's
// values differ across devices, elements and tensors; floats have varied
// exponents, so that a sum taken in another order rounds differently, and
// zeros of both signs; integers reach far enough to wrap when summed or
// multiplied.
template <typename T>
T input_value(int device, size_t tensor, int64_t i) {
  // splitmix64's finalizer: every bit of m depends on every input bit.
  uint64_t m = (static_cast<uint64_t>(i) << 16) ^ (static_cast<uint64_t>(device) << 4) ^ tensor;
  m = (m ^ (m >> 30)) * 0xBF58476D1CE4E5B9ull;
  m = (m ^ (m >> 27)) * 0x94D049BB133111EBull;
  m ^= m >> 31;
  if constexpr (kIsHalfFloat<T>) {
    return float_to_half<T>(input_value<float>(device, tensor, i));
  } else if constexpr (std::is_same_v<T, bool>) {
    return (m % 3) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(m >> 3);  // any value of T, negative included
  } else {
    // One element in 8 a zero of either sign: min and max keep the earlier
    // rank's on ties, which only the sign of a zero shows.
    if ((m >> 50) % 8 == 0) return static_cast<T>((m >> 40) % 2 ? -0.0 : 0.0);
    const double mantissa = static_cast<double>(m % 2001) - 1000.0;
    return static_cast<T>(std::ldexp(mantissa, static_cast<int>((m >> 12) % 24) - 12));
  }
}

// The reduce types as a user reads their definition: integers wrap, min
// and max propagate NaN (the suite's inputs hold one NaN bit pattern).
// Integers are added and multiplied in their unsigned type: wrapping.
template <typename T, bool kInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct Arithmetic {
  using type = T;
};
template <typename T>
struct Arithmetic<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
T reduce_reference(ReduceType reduce, T a, T b) {
  using Wide = typename Arithmetic<T>::type;
  switch (reduce) {
    case ReduceType::kSum:
      if constexpr (std::is_same_v<T, bool>) return a || b;
      else return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
    case ReduceType::kMul:
      if constexpr (std::is_same_v<T, bool>) return a && b;
      else return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
    case ReduceType::kMin:
    case ReduceType::kMax:
      if constexpr (std::is_floating_point_v<T>) {
        // A NaN wins; of two NaNs, the later rank's (DESIGN: collectives'
        // max and min, NanOfTwo::kSecond).
        if (std::isnan(b)) return b;
        if (std::isnan(a)) return a;
      }
      return reduce == ReduceType::kMin ? (b < a ? b : a) : (b > a ? b : a);
    case ReduceType::kAnd:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(a & b);
      else return a;
    case ReduceType::kOr:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(a | b);
      else return a;
  }
  return a;
}

// scale * (values[0] op values[1] op ...), in that order; the scale is
// applied in double and rounded once, as the documentation says.
template <typename T>
T reduce_in_rank_order(ReduceType reduce, double scale, const std::vector<T>& values) {
  if constexpr (kIsHalfFloat<T>) {
    // The 16-bit floats: in float32, rounded once at the end.
    std::vector<float> wide;
    for (const T& v : values) wide.push_back(half_to_float(v));
    if (values.size() == 1 && scale == 1.0) return values[0];  // a copy, bits and all
    return float_to_half<T>(reduce_in_rank_order(reduce, scale, wide));
  }
  else {
    T r = values[0];
    for (size_t q = 1; q < values.size(); ++q) r = reduce_reference(reduce, r, values[q]);
    if constexpr (!std::is_same_v<T, bool>) {
      if (scale != 1.0) r = static_cast<T>(static_cast<double>(r) * scale);
    }
    return r;
  }
}

// An element as a message prints it.
template <typename T>
auto printable(T x) {
  if constexpr (kIsHalfFloat<T>) {
    return half_to_float(x);
  } else {
    return +x;
  }
}

// Bitwise equality, NaN payloads included.
template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace ordo::conformance
