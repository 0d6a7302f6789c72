// The main job: an SPMD program on a world of 4 devices: 4 in-process
// devices (a thread each), or processes under mpirun that together drive 4
// (scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=2 build/ordo_demo), with the
// same per-device results.
//  1. Data-parallel training: every device fits a linear model on its own
//     shard; gradients are averaged with all_reduce every step, so all
//     devices hold the same weights.
//  2. Every collective once, printing per device what it got, what was
//     expected, and whether they match.
// Every device's lines travel to the process of ordinal 0 (rendezvous),
// which prints them in ordinal order. Exits non-zero if anything does not
// match.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "ordo/ordo.h"

namespace {

constexpr int kDevices = 4;
constexpr int kSteps = 40;
constexpr int64_t kSamples = 32;
constexpr int64_t kFeatures = 4;

std::mutex g_mu;
bool g_all_matched = true;                      // guarded by g_mu
std::vector<std::vector<std::string>> g_lines;  // per device, this process's; guarded by g_mu
// Every device's lines, in ordinal order, on the process of ordinal 0;
// written by ordinal 0's thread, read after the spawn.
std::vector<std::string> g_printed;

std::string show(const std::vector<float>& v) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < v.size(); ++i) out << (i ? " " : "") << v[i];
  out << ']';
  return out.str();
}

// Device d's lines to every device, each with whether they all matched.
void share_lines(int d) {
  std::string mine;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    mine = g_all_matched ? "1" : "0";
    for (const std::string& line : g_lines[d]) mine += line + "\n";
  }
  const std::vector<std::string> every = ordo::rendezvous("tour lines", mine);
  std::vector<std::string> lines;
  bool all_matched = true;
  for (const std::string& device_lines : every) {
    all_matched = all_matched && device_lines[0] == '1';
    for (size_t start = 1, end; (end = device_lines.find('\n', start)) != std::string::npos; start = end + 1) {
      lines.push_back(device_lines.substr(start, end - start));
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_all_matched = g_all_matched && all_matched;
  if (d == 0) g_printed = std::move(lines);
}

void report(int device, const char* what, const std::vector<float>& got, const std::vector<float>& expected) {
  const bool match = got == expected;
  char line[256];
  std::snprintf(line, sizeof(line), "  device %d  %-22s got %-18s expected %-18s %s", device, what,
                show(got).c_str(), show(expected).c_str(), match ? "ok" : "MISMATCH");
  std::lock_guard<std::mutex> lock(g_mu);
  g_all_matched = g_all_matched && match;
  g_lines[device].push_back(line);
}

// Part 1: returns the device's final weights.
std::vector<float> train(int device) {
  // The model to recover: w_i = i + 1.
  ordo::Tensor true_w = ordo::reshape(ordo::arange(1, kFeatures + 1, 1, ordo::DType::kFloat32), {kFeatures, 1});
  ordo::Tensor x = ordo::rand_normal({kSamples, kFeatures}, /*seed=*/100 + device);
  ordo::Tensor y = ordo::matmul(x, true_w);
  ordo::Tensor w = ordo::zeros({kFeatures, 1});
  for (int step = 0; step < kSteps; ++step) {
    ordo::Tensor error = ordo::matmul(x, w) - y;
    ordo::Tensor grad = ordo::matmul(ordo::transpose(x, 0, 1), error) * (2.0 / kSamples);
    // Average the gradients of every device: one collective per step.
    grad = ordo::all_reduce(ordo::ReduceType::kSum, grad, 1.0 / kDevices);
    w.assign(w - grad * 0.1);
    ordo::mark_step();
  }
  return w.to_vector<float>();
}

std::string as_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}
std::vector<float> as_floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

// Part 1 on device d: trains, then checks every device's weights
// against device 0's (each device gets them all).
void train_and_compare(int d) {
  const std::vector<std::string> every = ordo::rendezvous("weights", as_bytes(train(d)));
  bool all_matched = true;
  std::vector<std::string> lines;
  for (int device = 0; device < kDevices; ++device) {
    const std::vector<float> weights = as_floats(every[device]);
    bool close = true;
    for (int64_t i = 0; i < kFeatures; ++i) close = close && std::fabs(weights[i] - float(i + 1)) < 0.05f;
    const bool same = every[device] == every[0];
    all_matched = all_matched && close && same;
    char line[256];
    std::snprintf(line, sizeof(line), "  device %d  w = %-38s expected ~[1 2 3 4]  %s, %s", device,
                  show(weights).c_str(), close ? "ok" : "NOT CONVERGED",
                  same ? "same as device 0" : "DIFFERS FROM DEVICE 0");
    lines.push_back(line);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_all_matched = g_all_matched && all_matched;
  if (d == 0) g_printed = std::move(lines);
}

// Part 2: every collective on device d, with the value numpy would give.
void tour(int d) {
  const float me = float(d);
  ordo::Tensor mine = ordo::full({2}, me, ordo::DType::kFloat32);
  ordo::Tensor sum = ordo::all_reduce(ordo::ReduceType::kSum, mine);
  ordo::Tensor low = ordo::all_reduce(ordo::ReduceType::kMin, mine + 1.0);
  ordo::Tensor gathered = ordo::all_gather(ordo::full({1}, me, ordo::DType::kFloat32));
  ordo::Tensor pair_gathered = ordo::all_gather(ordo::full({1}, me, ordo::DType::kFloat32), 0, {{0, 2}, {1, 3}});
  ordo::Tensor shard = ordo::reduce_scatter(ordo::ReduceType::kSum, ordo::arange(0, 8, 1, ordo::DType::kFloat32),
                                            1.0, 0, kDevices);
  ordo::Tensor row = ordo::arange(0, kDevices, 1, ordo::DType::kFloat32) + me * 10.0;
  ordo::Tensor exchanged = ordo::all_to_all(row, 0, 0, kDevices);
  std::vector<std::pair<int, int>> ring;
  for (int i = 0; i < kDevices; ++i) ring.emplace_back(i, (i + 1) % kDevices);
  ordo::Tensor from_left = ordo::collective_permute(mine, ring);
  std::vector<ordo::Tensor> broadcast{ordo::full({2}, me + 100, ordo::DType::kFloat32)};
  ordo::collective_broadcast(broadcast, /*root_ordinal=*/2);
  ordo::mark_step();  // one graph, one chain of 8 collectives

  const float all = 0 + 1 + 2 + 3;
  report(d, "all_reduce sum", sum.to_vector<float>(), {all, all});
  report(d, "all_reduce min of x+1", low.to_vector<float>(), {1, 1});
  report(d, "all_gather", gathered.to_vector<float>(), {0, 1, 2, 3});
  report(d, "all_gather {0,2},{1,3}", pair_gathered.to_vector<float>(), {float(d % 2), float(d % 2 + 2)});
  report(d, "reduce_scatter sum", shard.to_vector<float>(), {8.0f * d, 8.0f * d + 4});
  report(d, "all_to_all", exchanged.to_vector<float>(), {me, 10 + me, 20 + me, 30 + me});
  const float left = float((d + kDevices - 1) % kDevices);
  report(d, "collective_permute", from_left.to_vector<float>(), {left, left});
  report(d, "collective_broadcast", broadcast[0].to_vector<float>(), {102, 102});
  share_lines(d);
}

void print_lines_of_every_device(bool printer) {
  if (!printer) return;
  for (const std::string& line : g_printed) std::printf("%s\n", line.c_str());
}

int run_demo() {
  // The runtime starts with ORDO_NUM_DEVICES devices in this process
  // (default 4); under mpirun the world is every process's.
  const int processes = ordo::world_size() / ordo::num_devices();
  if (ordo::world_size() != kDevices) {
    std::fprintf(stderr, "ordo demo: needs a world of %d devices, this one has %d (%d per process): run it "
                 "without ORDO_NUM_DEVICES, or as scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=2 build/ordo_demo\n",
                 kDevices, ordo::world_size(), ordo::num_devices());
    return 2;
  }
  const bool printer = ordo::get_ordinal(0) == 0;  // the process of ordinal 0
  if (printer && processes == 1) std::printf("ordo demo: an SPMD program on %d in-process devices\n\n", kDevices);
  if (printer && processes > 1) {
    std::printf("ordo demo: an SPMD program on %d devices, %d processes x %d devices\n\n", kDevices, processes,
                ordo::num_devices());
  }

  if (printer) std::printf("1. data-parallel linear regression, gradients averaged by all_reduce, %d steps\n", kSteps);
  ordo::spawn(train_and_compare);
  print_lines_of_every_device(printer);

  if (printer) std::printf("\n2. every collective (values the same as torch_xla's xla_model would give)\n");
  g_lines.resize(kDevices);
  ordo::spawn(tour);
  print_lines_of_every_device(printer);

  const ordo::CompileCacheStats stats = ordo::compile_cache_stats();
  if (printer) {
    std::printf("\ngraphs%s: %lld compiled, %lld reused from the compile cache\n",
                processes == 1 ? "" : " of this process", static_cast<long long>(stats.misses),
                static_cast<long long>(stats.hits));
    std::printf("everything matched: %s\n", g_all_matched ? "yes" : "NO");
  }
  ordo::shutdown();
  return g_all_matched ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run_demo();
  } catch (const std::exception& e) {  // a runtime that cannot start, say
    std::fprintf(stderr, "ordo demo: %s\n", e.what());
    return 1;
  }
}
