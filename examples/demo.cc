// The main job: an SPMD program on 4 in-process devices (a thread each).
//  1. Data-parallel training: every device fits a linear model on its own
//     shard; gradients are averaged with all_reduce every step, so all
//     devices hold the same weights.
//  2. Every collective once, printing per device what it got, what was
//     expected, and whether they match.
// Exits non-zero if anything does not match.
#include <cmath>
#include <cstdio>
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
std::vector<std::vector<std::string>> g_lines;  // per device, guarded by g_mu

std::string show(const std::vector<float>& v) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < v.size(); ++i) out << (i ? " " : "") << v[i];
  out << ']';
  return out.str();
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
}

}  // namespace

int main() {
  ordo::init(kDevices);
  std::printf("ordo demo: an SPMD program on %d in-process devices\n\n", kDevices);

  std::printf("1. data-parallel linear regression, gradients averaged by all_reduce, %d steps\n", kSteps);
  std::vector<std::vector<float>> weights(kDevices);
  ordo::spawn([&](int d) { weights[d] = train(d); });
  for (int d = 0; d < kDevices; ++d) {
    bool close = true;
    for (int64_t i = 0; i < kFeatures; ++i) close = close && std::fabs(weights[d][i] - float(i + 1)) < 0.05f;
    const bool same = weights[d] == weights[0];
    g_all_matched = g_all_matched && close && same;
    std::printf("  device %d  w = %-38s expected ~[1 2 3 4]  %s, %s\n", d, show(weights[d]).c_str(),
                close ? "ok" : "NOT CONVERGED", same ? "same as device 0" : "DIFFERS FROM DEVICE 0");
  }

  std::printf("\n2. every collective (values the same as torch_xla's xla_model would give)\n");
  g_lines.resize(kDevices);
  ordo::spawn(tour);
  for (const auto& lines : g_lines) {
    for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  }

  const ordo::CompileCacheStats stats = ordo::compile_cache_stats();
  std::printf("\ngraphs: %lld compiled, %lld reused from the compile cache\n",
              static_cast<long long>(stats.misses), static_cast<long long>(stats.hits));
  std::printf("everything matched: %s\n", g_all_matched ? "yes" : "NO");
  ordo::shutdown();
  return g_all_matched ? 0 : 1;
}
