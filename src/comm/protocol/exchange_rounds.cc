// The exchange's round counts (exchange.h): each device's next round of
// each key, taken when it enters a round, passed when a round it has not
// done is doomed, forgotten when no longer needed to tell rounds apart.
#include <algorithm>

#include "comm/protocol/exchange.h"
#include "comm/protocol/exchange_round.h"

namespace ordo::comm {
namespace {

constexpr size_t kKeysKept = 4096;  // of keys that span processes, per device

}  // namespace

int64_t Exchange::next_number_locked(size_t index, const Key& key) const {
  const auto& next = counts_[index].next;
  const auto it = next.find(key);
  return it == next.end() ? 0 : it->second.first;
}

int64_t Exchange::take_number_locked(size_t index, const Key& key) {
  Counts& counts = counts_[index];
  auto& [next, used] = counts.next[key];
  used = ++counts.uses;
  const int64_t number = next++;
  if (counts.next.size() <= kKeysKept) return number;
  // Keys of this process's devices are forgotten when level; of the others
  // (they span processes: nobody here sees whether they are level), the
  // one unused for longest goes.
  auto oldest = counts.next.end();
  for (auto it = counts.next.begin(); it != counts.next.end(); ++it) {
    if (all_local(it->first.second)) continue;
    if (oldest == counts.next.end() || it->second.second < oldest->second.second) oldest = it;
  }
  if (oldest != counts.next.end() && oldest->first != key) counts.next.erase(oldest);
  return number;
}

void Exchange::pass_locked(size_t index, const ExchangeRound& round) {
  // A later round of the key this device waits in is left to that round.
  if (const Round* waiting = waiting_in_[index]; waiting != nullptr && waiting->round().same_key(round)) return;
  Counts& counts = counts_[index];
  auto& [next, used] = counts.next[key_of(round)];
  used = ++counts.uses;
  next = std::max(next, round.number + 1);
  Inbox& inbox = inboxes_[index];
  inbox.erase(std::remove_if(inbox.begin(), inbox.end(), [&](const ExchangeNote& n) { return n.round == round; }),
              inbox.end());
}

void Exchange::forget_if_level_locked(const ExchangeRound& done) {
  if (!all_local(done.participants)) return;
  const Key key = key_of(done);
  for (const int d : done.participants) {
    const size_t index = index_of(d);
    if (next_number_locked(index, key) != done.number + 1) return;
    if (const Round* waiting = waiting_in_[index]; waiting != nullptr && waiting->round().same_key(done)) return;
  }
  // Every participant took the round and none started the next: they all
  // start again at 0. What is left of the key in their inboxes (notes of
  // rounds done) would otherwise read as of rounds to come.
  for (const int d : done.participants) {
    const size_t index = index_of(d);
    counts_[index].next.erase(key);
    Inbox& inbox = inboxes_[index];
    inbox.erase(std::remove_if(inbox.begin(), inbox.end(),
                               [&](const ExchangeNote& n) { return n.round.same_key(done); }),
                inbox.end());
  }
}

}  // namespace ordo::comm
