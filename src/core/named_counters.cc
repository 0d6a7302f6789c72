#include "core/named_counters.h"

#include <map>
#include <mutex>

namespace ordo::metrics {
namespace {

struct NamedCounters {
  std::mutex mu;
  // Locking: mu guards counts. name -> slot -> count.
  std::map<std::string, std::map<int, int64_t>, std::less<>> counts;
};

NamedCounters& registry() {
  static NamedCounters* counters = new NamedCounters();  // outlives exit-time readers
  return *counters;
}

}  // namespace

void count_named(std::string_view name, int slot) {
  NamedCounters& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.counts.find(name);
  if (it == r.counts.end()) it = r.counts.emplace(std::string(name), std::map<int, int64_t>{}).first;
  ++it->second[slot];
}

std::vector<std::pair<std::string, int64_t>> named_counters(int slot) {
  NamedCounters& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, slots] : r.counts) {
    int64_t total = 0;
    for (const auto& [s, count] : slots) {
      if (slot < 0 || s == slot) total += count;
    }
    if (total != 0) out.emplace_back(name, total);
  }
  return out;
}

void clear_named_counters() {
  NamedCounters& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.counts.clear();
}

}  // namespace ordo::metrics
