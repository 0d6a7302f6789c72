// The main job: an SPMD training step traced on several devices at once.
// Each device (a thread) fits a linear model to its own shard of data with
// plain gradient descent; every step is one mark_step. The output shows the
// loss falling on every device and how many graphs were compiled vs reused.
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ordo/ordo.h"

namespace {

constexpr int kDevices = 4;
constexpr int kSteps = 8;
constexpr int64_t kSamples = 64;
constexpr int64_t kFeatures = 8;

struct DeviceResult {
  std::vector<float> losses;
  std::vector<float> weights;
};

DeviceResult train_on(int device) {
  ordo::DeviceGuard on(device);
  // The model to recover: w_i = 0.5 * (i + 1).
  ordo::Tensor true_w = ordo::reshape(ordo::arange(1, kFeatures + 1, 1, ordo::DType::kFloat32), {kFeatures, 1}) * 0.5;
  ordo::Tensor x = ordo::rand_normal({kSamples, kFeatures}, /*seed=*/100 + device);
  ordo::Tensor y = ordo::matmul(x, true_w);
  ordo::Tensor w = ordo::zeros({kFeatures, 1});
  DeviceResult result;
  for (int step = 0; step < kSteps; ++step) {
    ordo::Tensor error = ordo::matmul(x, w) - y;
    ordo::Tensor loss = ordo::mean(error * error);
    ordo::Tensor grad = ordo::matmul(ordo::transpose(x, 0, 1), error) * (2.0 / kSamples);
    w.assign(w - grad * 0.2);
    ordo::mark_step();  // one graph per step: submitted, not waited for
    result.losses.push_back(loss.item<float>());
  }
  result.weights = w.to_vector<float>();
  return result;
}

}  // namespace

int main() {
  ordo::init(kDevices);
  std::vector<DeviceResult> results(kDevices);
  std::vector<std::thread> threads;
  for (int d = 0; d < kDevices; ++d) {
    threads.emplace_back([d, &results] { results[d] = train_on(d); });
  }
  for (std::thread& t : threads) t.join();

  std::printf("ordo demo: linear regression, %d devices traced by %d threads, %d steps each\n\n",
              kDevices, kDevices, kSteps);
  bool converged = true;
  for (int d = 0; d < kDevices; ++d) {
    std::printf("device %d loss:", d);
    for (float loss : results[d].losses) std::printf(" %8.4f", loss);
    std::printf("\n         w:   ");
    for (float w : results[d].weights) std::printf(" %6.3f", w);
    std::printf("\n");
    converged = converged && results[d].losses.back() < 0.05f * results[d].losses.front();
  }
  std::printf("\n(expected w: 0.500 1.000 1.500 2.000 2.500 3.000 3.500 4.000)\n");
  const ordo::CompileCacheStats stats = ordo::compile_cache_stats();
  std::printf("graphs: %lld compiled, %lld reused from the compile cache (%d steps on %d devices)\n",
              static_cast<long long>(stats.misses), static_cast<long long>(stats.hits),
              kSteps, kDevices);
  std::printf("every device's loss fell below 5%% of its start: %s\n", converged ? "yes" : "NO");
  ordo::shutdown();
  return converged ? 0 : 1;
}
