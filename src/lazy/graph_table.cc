#include "lazy/graph_table.h"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <new>

namespace ordo::lazy {
namespace {

std::mutex g_tables_mu;
std::unique_ptr<GraphTable> g_table;        // guarded by g_tables_mu
std::atomic<GraphTable*> g_current{nullptr};  // what graphs() returns

// In a forked child: the parent's table stays as it is (its graphs' locks
// may be held by threads that are not here), leaked with the parent's
// runtime; the child's first use makes a table for its own runtime.
void forget_table_in_forked_child() {
  new (&g_tables_mu) std::mutex();  // only this thread exists now
  g_current.store(nullptr, std::memory_order_release);
  (void)g_table.release();
}

}  // namespace

GraphTable::GraphTable(runtime::Runtime& runtime) : runtime_(runtime) {
  graphs_.reserve(static_cast<size_t>(runtime.num_devices()));
  for (const LocalDevice device : runtime.local_devices()) graphs_.push_back(std::make_unique<DeviceGraph>(device));
}

GraphTable& graphs() {
  GraphTable* current = g_current.load(std::memory_order_acquire);
  if (current != nullptr) return *current;
  std::lock_guard<std::mutex> lock(g_tables_mu);
  if (!g_table) {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &forget_table_in_forked_child); });
    g_table = std::make_unique<GraphTable>(runtime::get());
    g_current.store(g_table.get(), std::memory_order_release);
  }
  return *g_table;
}

void stop_graphs_and_runtime() {
  std::lock_guard<std::mutex> lock(g_tables_mu);
  g_current.store(nullptr, std::memory_order_release);
  // Freed under the lock: the next runtime's graphs take the same pending
  // lists, which freeing a graph empties.
  const std::unique_ptr<GraphTable> released = std::move(g_table);
  runtime::stop();
}

}  // namespace ordo::lazy
