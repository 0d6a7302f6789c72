#include "comm/protocol/kept_until_exit.h"

#include <list>
#include <mutex>

namespace ordo::comm {

void keep_until_exit(std::shared_ptr<const void> memory) {
  // Never destroyed: the list outlives every static that might still hold
  // a transfer, and stays reachable from here.
  static auto* const mu = new std::mutex;
  static auto* const kept = new std::list<std::shared_ptr<const void>>;
  std::lock_guard<std::mutex> lock(*mu);
  kept->push_back(std::move(memory));
}

}  // namespace ordo::comm
