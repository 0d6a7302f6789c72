// The exchange's cycle rule (exchange.h): a search of the waits this
// process knows of, from a waiting device back to itself.
#include <algorithm>
#include <deque>
#include <map>

#include "comm/exchange_rules.h"
#include "comm/protocol/exchange.h"
#include "comm/protocol/exchange_round.h"

namespace ordo::comm {

std::vector<std::pair<int, ExchangeRound>> Exchange::waits_of_locked(int device) const {
  std::vector<std::pair<int, ExchangeRound>> waits;
  if (const std::optional<LocalDevice> local = topology_.local_device(GlobalOrdinal(device))) {
    const Round* round = waiting_in_[local->slot()];
    if (round == nullptr || round->failed_locked() || round->complete_locked()) return waits;
    for (const int missing : round->missing_locked()) waits.emplace_back(missing, round->round());
    return waits;
  }
  // Another process's device waits for each device of this one that holds
  // its payload of a round that device has not done.
  for (size_t index = 0; index < inboxes_.size(); ++index) {
    const Inbox& inbox = inboxes_[index];
    const auto theirs = std::find_if(inbox.begin(), inbox.end(), [&](const ExchangeNote& note) {
      return note.kind == ExchangeNote::Kind::kPayload && note.sender == device &&
             note.round.number >= next_number_locked(index, key_of(note.round)) && !given_up(inbox, note);
    });
    if (theirs != inbox.end()) waits.emplace_back(theirs->receiver, theirs->round);
  }
  return waits;
}

bool Exchange::given_up(const Inbox& inbox, const ExchangeNote& payload) {
  // The note that says so follows the payload; a mismatch dooms the round
  // whoever found it.
  return std::any_of(inbox.begin(), inbox.end(), [&](const ExchangeNote& note) {
    if (note.kind == ExchangeNote::Kind::kMismatch) return note.names(payload.round);
    return note.kind == ExchangeNote::Kind::kGivenUp && note.sender == payload.sender && note.round == payload.round;
  });
}

std::optional<Exchange::WaitCycle> Exchange::wait_cycle_locked(int me) const {
  // Breadth first over the devices that wait; came_from leads back to me,
  // with the round each of them waits in.
  std::map<int, std::pair<int, ExchangeRound>> came_from;
  std::deque<int> frontier{me};
  while (!frontier.empty()) {
    const int waiter = frontier.front();
    frontier.pop_front();
    for (auto& [awaited, round] : waits_of_locked(waiter)) {
      if (awaited == me) {
        WaitCycle cycle;
        cycle.devices.push_back(waiter);
        cycle.rounds.push_back(std::move(round));
        while (cycle.devices.back() != me) {
          const auto& [from, in] = came_from.at(cycle.devices.back());
          cycle.devices.push_back(from);
          cycle.rounds.push_back(in);
        }
        std::reverse(cycle.devices.begin(), cycle.devices.end());
        std::reverse(cycle.rounds.begin(), cycle.rounds.end());
        cycle.local = all_local(cycle.devices);
        return cycle;
      }
      if (came_from.count(awaited) != 0) continue;
      came_from.emplace(awaited, std::make_pair(waiter, std::move(round)));
      frontier.push_back(awaited);
    }
  }
  return std::nullopt;
}

std::string Exchange::mismatch_message(const WaitCycle& cycle) const {
  std::string message = str_cat("rendezvous mismatch: device ", cycle.devices[0]);
  for (size_t i = 0; i < cycle.devices.size(); ++i) {
    const ExchangeRound& round = cycle.rounds[i];
    const GlobalOrdinal next(cycle.devices[(i + 1) % cycle.devices.size()]);
    message += str_cat(i == 0 ? " waits in " : ", which waits in ", describe_tag(round.tag), " (round ",
                       round.number, " of devices ", describe_group(round.participants), ") for device ", next);
    if (!topology_.is_local(next)) message += " on " + post_->describe_process(topology_.place(next).process);
  }
  return message + ": they can never meet";
}

void Exchange::fail_cycle_locked(const WaitCycle& cycle) {
  // Every device of the cycle fails; those of this process here, each
  // then telling its round's participants, naming the round its wait led
  // to: the device of another process that waits there is among them.
  const device::Failure mismatch{ErrorCode::kCollectiveMismatch, mismatch_message(cycle)};
  for (size_t i = 0; i < cycle.devices.size(); ++i) {
    const std::optional<LocalDevice> local = topology_.local_device(GlobalOrdinal(cycle.devices[i]));
    if (!local) continue;
    Round* round = waiting_in_[local->slot()];
    if (round != nullptr && !round->failed_locked()) round->fail_locked(mismatch, cycle.rounds[(i + 1) % cycle.rounds.size()]);
  }
  cv_.notify_all();
}

}  // namespace ordo::comm
