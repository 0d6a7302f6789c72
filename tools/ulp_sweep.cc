// ordo_ulp_sweep: every float32 input of the transcendental row functions
// (kernels/vector_math.h) in every instruction set this CPU can run, against
// a float64 reference (scripts/ulp-sweep.sh runs it). Prints, per function
// and set, the largest error in ulps of the true value and where, the
// inputs whose error comes near the function's bound, and whether every set
// gave the same bits; exits 1 when a bound is broken or the sets differ.
//
// The reference and the bounds: tests/float32_accuracy.h.
//
//   ordo_ulp_sweep [--threads N] [--stride S] [--ops exp,log,...] [--list K]
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/elementwise_rows.h"
#include "kernels/vector_math.h"
#include "float32_accuracy.h"

namespace ordo::kernels {
namespace {

using ir::OpKind;

struct Near {
  uint32_t bits;
  double error;
};

// One function in one set, over the inputs swept so far.
struct Tally {
  double max_error = 0;
  uint32_t worst = 0;
  uint64_t checked = 0;
  uint64_t correctly_rounded = 0;
  std::vector<Near> near;  // error >= the near threshold, at most kKeepNear
  uint64_t near_count = 0;
  uint64_t other_bits = 0;  // results whose bits differ from the first set's
  uint32_t first_other = 0;

  void merge(const Tally& t) {
    if (t.max_error > max_error || (t.max_error == max_error && t.worst < worst && t.checked)) {
      max_error = t.max_error;
      worst = t.worst;
    }
    checked += t.checked;
    correctly_rounded += t.correctly_rounded;
    near.insert(near.end(), t.near.begin(), t.near.end());
    near_count += t.near_count;
    if (t.other_bits && (!other_bits || t.first_other < first_other)) first_other = t.first_other;
    other_bits += t.other_bits;
  }
};

constexpr size_t kKeepNear = 100000;
constexpr uint64_t kChunk = 1 << 16;

struct Options {
  int threads = 0;
  uint64_t stride = 1;
  std::vector<OpKind> ops;
  size_t list = 20;
};

std::string name(OpKind op) { return std::string(ir::op_name(op)); }

const char* isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kSse2: return "sse2";
    case VectorIsa::kAvx2: return "avx2";
    case VectorIsa::kAvx512: return "avx512";
  }
  return "?";
}

std::vector<VectorIsa> runnable_sets() {
  std::vector<VectorIsa> sets = {VectorIsa::kSse2};
  if (best_vector_isa() != VectorIsa::kSse2) sets.push_back(VectorIsa::kAvx2);
  if (best_vector_isa() == VectorIsa::kAvx512) sets.push_back(VectorIsa::kAvx512);
  return sets;
}

bool same_result(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

// Inputs first, first + stride, ... below 2^32 of chunk `index`.
void sweep_chunk(OpKind op, const std::vector<VectorIsa>& sets, uint64_t index, uint64_t stride,
                 std::vector<Tally>& tallies, std::vector<float>& x, std::vector<std::vector<float>>& got) {
  const double bound = float32_ulp_bound(op);
  const double near = near_threshold(bound);
  x.clear();
  for (uint64_t i = 0; i < kChunk; ++i) {
    const uint64_t bits = (index * kChunk + i) * stride;
    if (bits >= (uint64_t{1} << 32)) break;
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  const RowOperand operand{x.data(), 1};
  for (size_t s = 0; s < sets.size(); ++s) {
    got[s].resize(x.size());
    vector_math_row(op, DType::kFloat32, sets[s])(got[s].data(), static_cast<int64_t>(x.size()), &operand);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = float32_reference(op, x[i]);
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    for (size_t s = 0; s < sets.size(); ++s) {
      Tally& t = tallies[s];
      const double error = float32_ulp_error(got[s][i], want);
      ++t.checked;
      t.correctly_rounded += same_result(got[s][i], static_cast<float>(want));
      if (error > t.max_error) {
        t.max_error = error;
        t.worst = bits;
      }
      if (error >= near) {
        ++t.near_count;
        if (t.near.size() < kKeepNear) t.near.push_back({bits, error});
      }
      if (s > 0 && !same_result(got[s][i], got[0][i])) {
        if (!t.other_bits) t.first_other = bits;
        ++t.other_bits;
      }
    }
  }
}

std::vector<Tally> sweep(OpKind op, const std::vector<VectorIsa>& sets, const Options& options) {
  const uint64_t inputs = ((uint64_t{1} << 32) + options.stride - 1) / options.stride;
  const uint64_t chunks = (inputs + kChunk - 1) / kChunk;
  std::atomic<uint64_t> next{0};
  std::mutex mutex;
  std::vector<Tally> total(sets.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back([&] {
      std::vector<Tally> mine(sets.size());
      std::vector<float> x;
      std::vector<std::vector<float>> got(sets.size());
      for (uint64_t c; (c = next.fetch_add(1)) < chunks;) sweep_chunk(op, sets, c, options.stride, mine, x, got);
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t s = 0; s < sets.size(); ++s) total[s].merge(mine[s]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return total;
}

std::string text(uint32_t bits) {
  char buffer[80];
  const float x = std::bit_cast<float>(bits);
  std::snprintf(buffer, sizeof buffer, "0x%08x %a (%.9g)", bits, static_cast<double>(x), static_cast<double>(x));
  return buffer;
}

// Prints one function's tallies; false when a bound is broken or the sets
// differ.
bool report(OpKind op, const std::vector<VectorIsa>& sets, std::vector<Tally>& tallies, size_t list) {
  const double bound = float32_ulp_bound(op);
  bool ok = true;
  for (size_t s = 0; s < sets.size(); ++s) {
    Tally& t = tallies[s];
    const bool within = t.max_error <= bound;
    ok = ok && within && t.other_bits == 0;
    std::printf("%-8s %-6s max %.4f ulp (bound %.2f%s) at %s; correctly rounded %.6f%%", name(op).c_str(),
                isa_name(sets[s]), t.max_error, bound, within ? "" : ", BROKEN", text(t.worst).c_str(),
                100.0 * double(t.correctly_rounded) / double(t.checked));
    if (std::isfinite(near_threshold(bound))) {
      std::printf("; %llu near (>= %.2f)", static_cast<unsigned long long>(t.near_count), near_threshold(bound));
    }
    if (s > 0) {
      std::printf("; bits as %s: %s", isa_name(sets[0]),
                  t.other_bits ? ("DIFFER " + std::to_string(t.other_bits) + "x, first " + text(t.first_other)).c_str()
                               : "same");
    }
    std::printf("\n");
  }
  std::vector<Near>& near = tallies.back().near;  // the best set's: the same inputs when the bits agree
  std::sort(near.begin(), near.end(), [](const Near& a, const Near& b) { return a.error > b.error; });
  for (size_t i = 0; i < near.size() && i < list; ++i) {
    std::printf("  near %-8s %s %.4f ulp\n", name(op).c_str(), text(near[i].bits).c_str(), near[i].error);
  }
  std::fflush(stdout);
  return ok;
}

OpKind parse_op(const std::string& text) {
  for (OpKind op : kFloat32MathOps) {
    if (text == ir::op_name(op)) return op;
  }
  std::fprintf(stderr, "ordo_ulp_sweep: unknown function '%s'\n", text.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: ordo_ulp_sweep [--threads N] [--stride S] [--ops exp,log,...] [--list K]\n");
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (arg == "--threads") {
      options.threads = std::max(1, std::atoi(value.c_str()));
    } else if (arg == "--stride") {
      options.stride = std::max<uint64_t>(1, std::strtoull(value.c_str(), nullptr, 0));
    } else if (arg == "--list") {
      options.list = std::strtoull(value.c_str(), nullptr, 0);
    } else if (arg == "--ops") {
      for (size_t start = 0; start <= value.size();) {
        const size_t comma = std::min(value.find(',', start), value.size());
        options.ops.push_back(parse_op(value.substr(start, comma - start)));
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "ordo_ulp_sweep: unknown option '%s'\n", arg.c_str());
      std::exit(2);
    }
  }
  if (options.ops.empty()) options.ops.assign(std::begin(kFloat32MathOps), std::end(kFloat32MathOps));
  return options;
}

}  // namespace
}  // namespace ordo::kernels

int main(int argc, char** argv) {
  using namespace ordo::kernels;
  const Options options = parse(argc, argv);
  const std::vector<VectorIsa> sets = runnable_sets();
  std::printf("float32 inputs: every %llu-th bit pattern; sets:", static_cast<unsigned long long>(options.stride));
  for (VectorIsa isa : sets) std::printf(" %s", isa_name(isa));
  std::printf(" (the kernels and fused groups use %s)\n", isa_name(best_vector_isa()));
  bool ok = true;
  for (OpKind op : options.ops) {
    // Fused groups and one-op kernels take their row function from row_fn:
    // the one swept here.
    if (row_fn(op, ordo::DType::kFloat32, ordo::DType::kFloat32) !=
        vector_math_row(op, ordo::DType::kFloat32, best_vector_isa())) {
      std::printf("%s: the kernels' row function is not vector_math_row's\n", name(op).c_str());
      ok = false;
    }
    std::vector<Tally> tallies = sweep(op, sets, options);
    ok = report(op, sets, tallies, options.list) && ok;
  }
  std::printf("%s\n", ok ? "every function within its bound, the same bits in every set" : "FAILED");
  return ok ? 0 : 1;
}
