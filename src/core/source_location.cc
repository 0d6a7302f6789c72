#include "core/source_location.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace ordo {
namespace source_location_internal {

std::atomic<int> g_ir_debug_set{-1};

}  // namespace source_location_internal

namespace {

// FNV-1a: a hash that is the same in every process of the job.
uint64_t stable_hash(std::string_view file, int line) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : file) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return (h ^ static_cast<uint32_t>(line)) * 0x100000001B3ull;
}

// Locking: mu guards both members. Locations live in a deque (they never
// move) and are never freed: nodes and plans of any thread point at them.
struct InternTable {
  std::mutex mu;
  std::deque<SourceLocation> locations;
  std::unordered_map<std::string, std::unordered_map<int, const SourceLocation*>> by_file;
};

InternTable& intern_table() {
  static InternTable* table = new InternTable;  // never destroyed: nodes outlive statics
  return *table;
}

std::atomic<UserLocationProvider> g_provider{nullptr};
thread_local const SourceLocation* t_location = nullptr;

}  // namespace

const SourceLocation* intern_source_location(std::string_view file, int line) {
  InternTable& table = intern_table();
  std::lock_guard<std::mutex> lock(table.mu);
  auto& lines = table.by_file[std::string(file)];
  auto [it, added] = lines.try_emplace(line, nullptr);
  if (added) {
    it->second = &table.locations.emplace_back(SourceLocation{std::string(file), line, stable_hash(file, line)});
  }
  return it->second;
}

void set_ir_debug_enabled(bool enabled) { source_location_internal::g_ir_debug_set.store(enabled ? 1 : 0); }
bool ir_debug_enabled() { return ir_debug_on(); }

void ScopedUserLocation::enter(const std::source_location& where) {
  if (t_location != nullptr || where.line() == 0) return;
  t_location = intern_source_location(where.file_name(), static_cast<int>(where.line()));
  set_ = true;
}

ScopedUserLocation::ScopedUserLocation(const SourceLocation* where) {
  if (!ir_debug_on() || where == nullptr || t_location != nullptr) return;
  t_location = where;
  set_ = true;
}

void ScopedUserLocation::leave() { t_location = nullptr; }

void set_user_location_provider(UserLocationProvider provider) { g_provider.store(provider); }

const SourceLocation* user_location_when_on() {
  if (UserLocationProvider provider = g_provider.load(std::memory_order_relaxed)) {
    if (const SourceLocation* where = provider()) return where;
  }
  return t_location;
}

}  // namespace ordo
