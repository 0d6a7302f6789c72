#include "comm/protocol/cross_collective.h"

#include <algorithm>
#include <chrono>

#include "comm/deadlines.h"
#include "comm/describe.h"
#include "comm/protocol/data_movement.h"
#include "comm/protocol/kept_until_exit.h"
#include "comm/protocol/pacing.h"
#include "core/check.h"
#include "core/interrupt.h"

namespace ordo::comm {
namespace {

using Clock = std::chrono::steady_clock;

// An all_reduce whose staged inputs take at most this many bytes a member
// travels in the headers: one message each way instead of a header round
// before the data.
constexpr size_t kEagerBytes = 64 * 1024;

// How often a leader waiting for headers looks for failures, in polls.
constexpr int kPollsPerFailureCheck = 8;

size_t aligned_to_line(size_t bytes) { return (bytes + 63) / 64 * 64; }

device::Failure failure_of(const Error& error) { return {error.code(), error.what()}; }

}  // namespace

// What a waiting leader checks between two polls.
class CrossCollective::Watch {
 public:
  // An interruptible wait is one before the data moves: it may be
  // interrupted, and it asks the missing members' processes what they do.
  Watch(const CrossCollective& owner, const CollectiveCall& like, const CollectiveAt& at, bool interruptible,
        const char* waiting_for)
      : owner_(owner), like_(like), at_(at), interruptible_(interruptible), waiting_for_(waiting_for) {}
  ~Watch() {
    for (const auto& [device, question] : questions_) owner_.peers_.board.forget(question);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  std::optional<device::Failure> check(const std::vector<bool>& heard) {
    // One clock reading per check. The clocks start at the first check, a
    // few polls into the wait: most collectives end before it, and read no
    // clock for it.
    const Clock::time_point now = Clock::now();
    if (!deadlines_) {
      deadlines_.emplace(collective_timeouts(), now);
      started_ = next_question_ = next_interrupt_poll_ = now;
    }
    const GroupPlan& plan = owner_.plan_;
    const Peers& peers = owner_.peers_;
    if (now - started_ > std::chrono::milliseconds(1)) peers.board.pump();
    if (interruptible_) {
      if (std::optional<device::Failure> mismatch = elsewhere(heard, now)) return mismatch;
    }
    if (peers.status.any_gone()) {
      for (size_t p = 0; p < plan.processes.size(); ++p) {
        if (p == plan.me || heard[p]) continue;
        for (size_t rank : plan.ranks_of[p]) {
          const GlobalOrdinal device(plan.group[rank]);
          std::optional<std::string> reason = peers.status.gone_reason(device);
          if (!reason) continue;
          // What a peer sent before it went may still be on its way (a
          // socket, a shared-memory queue): looked for a little longer.
          if (!gone_grace_.over(now)) continue;
          return gone_failure(where(), device, *reason,
                              str_cat("on ", peers.world.describe_process(plan.processes[p])));
        }
      }
    }
    if (interruptible_) {
      if (peers.status.any_interrupted()) {
        for (size_t rank : plan.local_ranks) {
          const GlobalOrdinal device(plan.group[rank]);
          if (std::optional<std::string> reason = peers.status.interrupt_reason(device)) {
            return interrupted_failure(where(), device, reason, missing(heard));
          }
        }
      }
      if (has_interrupt_check() && now >= next_interrupt_poll_) {
        next_interrupt_poll_ = now + std::chrono::milliseconds(10);
        poll_interrupt();
      }
      if (interrupted()) return interrupted_failure(where(), leader_device(), std::nullopt, missing(heard));
    }
    if (deadlines_->warning_due(now)) {
      report_warning(slow_wait_warning(leader_device(), deadlines_->warn_seconds(), where(), missing(heard)));
    }
    if (deadlines_->timed_out(now)) {
      return timeout_failure(leader_device(), deadlines_->timeout_seconds(), where(), missing(heard));
    }
    return std::nullopt;
  }

 private:
  // A mismatch, if a missing member ran this collective's number on
  // other replica groups: asked of its process after a tenth of a second
  // of waiting, and again every second.
  std::optional<device::Failure> elsewhere(const std::vector<bool>& heard, Clock::time_point now) {
    const GroupPlan& plan = owner_.plan_;
    ProgressBoard& board = owner_.peers_.board;
    if (now - started_ > std::chrono::milliseconds(100) && now >= next_question_) {
      next_question_ = now + std::chrono::seconds(1);
      for (const auto& [device, question] : questions_) board.forget(question);
      questions_.clear();
      for (size_t p = 0; p < plan.processes.size(); ++p) {
        if (p == plan.me || heard[p]) continue;
        for (size_t rank : plan.ranks_of[p]) {
          const GlobalOrdinal device(plan.group[rank]);
          questions_.emplace_back(device, board.ask(device, at_.number));
        }
      }
    }
    for (const auto& [device, question] : questions_) {
      const std::optional<ProgressBoard::Seen> seen = board.answer(question);
      if (!seen || seen->state != ProgressBoard::Seen::State::kAt) continue;
      if ((seen->group == plan.text && seen->sequence == at_.sequence) || seen->partition == at_.partition) continue;
      return device::Failure{ErrorCode::kCollectiveMismatch,
                             partition_mismatch_message(at_.number, leader_device(), where(), device,
                                                        seen->describe(), at_.partition, seen->partition)};
    }
    return std::nullopt;
  }

  GlobalOrdinal leader_device() const { return GlobalOrdinal(owner_.plan_.group[owner_.plan_.local_ranks[0]]); }
  std::string where() const { return describe_at(like_, at_.sequence, owner_.plan_.group); }
  // "3 (is waiting in all_reduce #2 on group [2, 3], its collective #2) on
  // process 1 (host vm, pid 42)": what its process last said it does.
  std::string missing(const std::vector<bool>& heard) const {
    const GroupPlan& plan = owner_.plan_;
    ShortList out;
    for (size_t p = 0; p < plan.processes.size(); ++p) {
      if (p == plan.me || heard[p]) continue;
      for (size_t rank : plan.ranks_of[p]) {
        const GlobalOrdinal device(plan.group[rank]);
        std::string what = waiting_for_;
        for (const auto& [asked, question] : questions_) {
          if (asked != device) continue;
          if (std::optional<ProgressBoard::Seen> seen = owner_.peers_.board.answer(question)) {
            what = seen->doing(at_.number, plan.text, at_.sequence);
          }
        }
        // A member that arrived waits in its process for the others there.
        if (what == ProgressBoard::Seen::kArriving) continue;
        out.add(str_cat(device, " (", what, ")", owner_.on(device)));
      }
    }
    return out.text();
  }

  const CrossCollective& owner_;
  const CollectiveCall& like_;
  const CollectiveAt& at_;
  const bool interruptible_;
  const char* const waiting_for_;
  std::optional<Deadlines> deadlines_;           // from the first check on, as the clocks below
  GoneGrace gone_grace_{owner_.peers_.transport.gone_grace()};  // from when an awaited member was first seen gone
  Clock::time_point started_;
  Clock::time_point next_question_;
  std::vector<std::pair<GlobalOrdinal, uint64_t>> questions_;  // (device, question) asked of its process
  Clock::time_point next_interrupt_poll_;
};

CrossCollective::CrossCollective(const Peers& peers, LocalMeeting& meeting)
    : peers_(peers),
      meeting_(meeting),
      plan_(meeting.plan()),
      fingerprints_(plan_.local_ranks.size()),
      their_headers_(plan_.processes.size()),
      raw_(plan_.processes.size()),
      heard_(plan_.processes.size()),
      words_(plan_.group.size()),
      staged_(plan_.group.size()) {
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    const bool other = p != plan_.me;
    const int process = plan_.processes[p];
    auto inbox = [&](PostedTags tags) {
      return other ? peers_.transport.open_inbox(process, tags) : nullptr;
    };
    headers_.push_back(inbox(plan_.headers));
    retractions_.push_back(inbox(plan_.retractions));
  }
}

std::string CrossCollective::who(GlobalOrdinal device) const { return str_cat("device ", device, on(device)); }

std::string CrossCollective::on(GlobalOrdinal device) const {
  return str_cat(" on ", peers_.world.describe_process(peers_.world.topology().place(device).process));
}

void CrossCollective::send_to_others(const std::string& message, PostedTags tags) {
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    if (p != plan_.me) peers_.transport.send_small(message, plan_.processes[p], tags);
  }
}

void CrossCollective::tell_failure(int64_t sequence, const device::Failure& failure) {
  send_to_others(
      encode_message({MessageKind::kHeader, sequence, peers_.world.rank(), {}, failure.code, failure.message}, 0),
      plan_.headers);
}

void CrossCollective::retract(int64_t sequence, const device::Failure& failure) {
  send_to_others(
      encode_message({MessageKind::kRetraction, sequence, peers_.world.rank(), {}, failure.code, failure.message}, 0),
      plan_.retractions);
}

std::optional<device::Failure> CrossCollective::retraction(int64_t sequence) {
  if (auto early = early_retractions_.find(sequence); early != early_retractions_.end()) {
    device::Failure failure = std::move(early->second);
    early_retractions_.erase(early);
    return failure;
  }
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    if (p == plan_.me) continue;
    const int process = plan_.processes[p];
    while (std::optional<std::string_view> bytes = retractions_[p]->try_take()) {
      DecodedMessage m = decode_message(*bytes, peers_.world.describe_process(process));
      if (m.sequence < sequence) continue;  // of a collective that failed here too
      device::Failure failure{m.failure_code, std::move(m.failure)};
      if (m.sequence == sequence) return failure;
      early_retractions_.insert_or_assign(m.sequence, std::move(failure));
    }
  }
  return std::nullopt;
}

std::optional<device::Failure> CrossCollective::receive_headers(const CollectiveAt& at, const CollectiveCall& like) {
  std::vector<bool>& heard = heard_;
  std::fill(heard.begin(), heard.end(), false);
  heard[plan_.me] = true;
  size_t missing = plan_.processes.size() - 1;
  const int64_t sequence = at.sequence;
  Watch watch(*this, like, at, /*interruptible=*/true, "no word from it");
  Backoff backoff;
  int polls = 0;
  while (missing > 0) {
    for (size_t p = 0; p < plan_.processes.size(); ++p) {
      if (heard[p]) continue;
      const int process = plan_.processes[p];
      while (std::optional<std::string_view> bytes = headers_[p]->try_take()) {
        DecodedMessage& m = their_headers_[p];
        decode_message(*bytes, peers_.world.describe_process(process), m);
        if (m.sequence < sequence) continue;  // of a collective that failed here before it sent
        if (m.sequence > sequence || m.kind != MessageKind::kHeader) {
          return device::Failure{
              ErrorCode::kCollectiveMismatch,
              str_cat("collective mismatch on group ", plan_.text, ": ", peers_.world.describe_process(process),
                      " is at its collective #", m.sequence, " of the group while ",
                      who(GlobalOrdinal(plan_.group[plan_.local_ranks[0]])),
                      " is at #", sequence, " (", describe(like), "): the group's collectives are out of step")};
        }
        raw_[p] = *bytes;
        heard[p] = true;
        --missing;
        break;
      }
    }
    // A process that gave up after its header went out says so: looked
    // at once more when every header is in.
    if (missing == 0) {
      if (std::optional<device::Failure> failure = retraction(sequence)) return failure;
      break;
    }
    // Failures are rare: looked for every few polls, so that most polls
    // while a header is on its way are one probe.
    if (++polls % kPollsPerFailureCheck == 0) {
      if (std::optional<device::Failure> failure = retraction(sequence)) return failure;
      if (std::optional<device::Failure> failure = watch.check(heard)) return failure;
    }
    backoff.pause();
  }
  return std::nullopt;
}

void CrossCollective::record_timing(const CollectiveAt& at) const {
  const auto& calls = meeting_.calls();
  if (std::none_of(calls.begin(), calls.end(), [](const CollectiveCall* call) { return call->timing != nullptr; })) {
    return;  // nobody times this one: nothing to work out
  }
  // The last arrival, by the system clocks of the hosts (which need not
  // agree), measured from the local group's: never before it, and the
  // caller keeps it before the collective's end.
  GlobalOrdinal last_device = at.arrived.device;
  int64_t last_wall_ns = at.arrived.wall_ns;
  for (size_t p = 0; p < their_headers_.size(); ++p) {
    if (p == plan_.me || their_headers_[p].last_arrival_wall_ns <= last_wall_ns) continue;
    last_wall_ns = their_headers_[p].last_arrival_wall_ns;
    last_device = GlobalOrdinal(their_headers_[p].last_device);
  }
  const int64_t all_arrived_ns = at.arrived.steady_ns + (last_wall_ns - at.arrived.wall_ns);
  for (const CollectiveCall* call : calls) {
    if (call->timing == nullptr) continue;
    call->timing->all_arrived_ns = all_arrived_ns;
    call->timing->last_device = last_device;
  }
}

device::Failure CrossCollective::mismatch(const CollectiveAt& at, size_t rank, const CollectiveCall& like) {
  const int64_t sequence = at.sequence;
  const auto& calls = meeting_.calls();
  std::vector<std::string> texts(plan_.group.size());
  std::vector<MemberEntry> entries;
  for (size_t i = 0; i < calls.size(); ++i) {
    texts[plan_.local_ranks[i]] = describe(*calls[i]);
    entries.push_back({plan_.group[plan_.local_ranks[i]], {}, texts[plan_.local_ranks[i]]});
  }
  send_to_others(
      encode_message({MessageKind::kDescriptions, sequence, peers_.world.rank(), entries, ErrorCode::kExecution, {}}, 0),
      plan_.headers);
  std::vector<bool> heard(plan_.processes.size(), false);
  heard[plan_.me] = true;
  Watch watch(*this, like, at, /*interruptible=*/true, "has not described its call");
  Backoff backoff;
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    const int process = plan_.processes[p];
    while (!heard[p]) {
      if (std::optional<std::string_view> bytes = headers_[p]->try_take()) {
        DecodedMessage m = decode_message(*bytes, peers_.world.describe_process(process));
        if (m.kind != MessageKind::kDescriptions || m.sequence != sequence || m.members.size() != plan_.ranks_of[p].size()) {
          continue;
        }
        for (size_t j = 0; j < m.members.size(); ++j) texts[plan_.ranks_of[p][j]] = std::move(m.members[j].text);
        heard[p] = true;
        break;
      }
      if (std::optional<device::Failure> failure = watch.check(heard)) return *failure;
      backoff.pause();
    }
  }
  const GlobalOrdinal first(plan_.group[0]), other(plan_.group[rank]);
  return {ErrorCode::kCollectiveMismatch, mismatch_message(sequence, plan_.group, str_cat("device ", first),
                                                           texts[0] + on(first), str_cat("device ", other),
                                                           texts[rank] + on(other))};
}

CrossCollective::HeaderLayout CrossCollective::send_header(const CollectiveAt& at, const CollectiveCall& like) {
  const auto& calls = meeting_.calls();
  entries_.clear();
  for (size_t i = 0; i < calls.size(); ++i) {
    fingerprints_[i].assign(*calls[i]);
    entries_.push_back({plan_.group[plan_.local_ranks[i]], fingerprints_[i].words(), {}});
  }
  HeaderLayout layout;
  layout.eager = like.op == ir::OpKind::kAllReduce && staged_bytes(like) <= kEagerBytes;
  layout.slot = layout.eager ? aligned_to_line(staged_bytes(like)) : 0;
  encode_message({MessageKind::kHeader, at.sequence, peers_.world.rank(), entries_, ErrorCode::kExecution, {},
                  at.arrived.device.value(), at.arrived.wall_ns},
                 layout.slot * calls.size(), mine_);
  layout.payload = mine_.size() - layout.slot * calls.size();
  if (layout.eager) {
    for (size_t i = 0; i < calls.size(); ++i) {
      stage_inputs(*calls[i], reinterpret_cast<std::byte*>(mine_.data() + layout.payload + i * layout.slot));
    }
  }
  send_to_others(mine_, plan_.headers);
  return layout;
}

std::optional<device::Failure> CrossCollective::read_headers(const HeaderLayout& layout) {
  const auto& calls = meeting_.calls();
  for (size_t i = 0; i < calls.size(); ++i) {
    words_[plan_.local_ranks[i]] = fingerprints_[i].words();
    staged_[plan_.local_ranks[i]] = reinterpret_cast<const std::byte*>(mine_.data() + layout.payload + i * layout.slot);
  }
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    if (p == plan_.me) continue;
    const DecodedMessage& h = their_headers_[p];
    if (!h.failure.empty()) return device::Failure{h.failure_code, h.failure};
    const std::string& from = peers_.world.describe_process(plan_.processes[p]);
    const std::vector<size_t>& ranks = plan_.ranks_of[p];
    if (h.members.size() != ranks.size()) {
      throw_error<CollectiveError>("a header from ", from, " names ", h.members.size(), " members of group ",
                                   plan_.text, " where that process has ", ranks.size());
    }
    for (size_t j = 0; j < ranks.size(); ++j) {
      ORDO_CHECK_EQ(h.members[j].device, plan_.group[ranks[j]]);
      words_[ranks[j]] = h.members[j].fingerprint;
      staged_[ranks[j]] = reinterpret_cast<const std::byte*>(raw_[p].data() + h.payload_offset + j * layout.slot);
    }
  }
  return std::nullopt;
}

std::optional<size_t> CrossCollective::first_mismatch() const {
  for (size_t rank = 1; rank < words_.size(); ++rank) {
    if (!std::equal(words_[rank].begin(), words_[rank].end(), words_[0].begin(), words_[0].end())) return rank;
  }
  return std::nullopt;
}

void CrossCollective::reduce_eager(const HeaderLayout& layout) {
  for (size_t p = 0; p < plan_.processes.size(); ++p) {
    if (p != plan_.me && raw_[p].size() < their_headers_[p].payload_offset + layout.slot * plan_.ranks_of[p].size()) {
      throw_error<CollectiveError>("the header from ", peers_.world.describe_process(plan_.processes[p]),
                                   " is shorter than the inputs it carries");
    }
  }
  for (const CollectiveCall* call : meeting_.calls()) all_reduce_staged(*call, staged_);
}

std::optional<device::Failure> CrossCollective::move_data(const CollectiveAt& at, const CollectiveCall& like) {
  Watch watch(*this, like, at, /*interruptible=*/false, "its data has not come");
  std::vector<bool> none(plan_.processes.size(), false);
  Transfers transfers(peers_.transport, plan_, [&](Requests& requests) -> std::optional<device::Failure> {
    Backoff backoff;
    while (!peers_.transport.test(requests)) {
      if (std::optional<device::Failure> failure = retraction(at.sequence)) return failure;
      if (std::optional<device::Failure> failure = watch.check(none)) return failure;
      backoff.pause();
    }
    return std::nullopt;
  });
  std::optional<device::Failure> failure;
  try {
    failure = move_data_across(plan_, meeting_.calls(), transfers, scratch_);
  } catch (const Error& error) {
    failure = failure_of(error);
  }
  if (failure) {
    // MPI may still read the inputs or write the outputs: keep them.
    transfers.abandon();
    break_group(at.sequence, *failure);
  }
  return failure;
}

void CrossCollective::break_group(int64_t sequence, const device::Failure& failure) {
  scratch_.abandon();
  for (const CollectiveCall* call : meeting_.calls()) {
    for (const device::Buffer* b : call->inputs) keep_until_exit(b->storage);
    for (const device::Buffer* b : call->outputs) keep_until_exit(b->storage);
  }
  broken_ = str_cat("group ", plan_.text, " cannot run collectives any more: its collective #", sequence,
                    " failed while its data moved (", failure.message, ")");
  retract(sequence, failure);
}

std::optional<device::Failure> CrossCollective::lead(const CollectiveAt& at) {
  try {
    if (broken_) return device::Failure{ErrorCode::kCollective, *broken_};
    const CollectiveCall& like = *meeting_.calls()[0];
    const HeaderLayout layout = send_header(at, like);
    if (std::optional<device::Failure> failure = receive_headers(at, like)) {
      retract(at.sequence, *failure);
      return failure;
    }
    if (std::optional<device::Failure> failure = read_headers(layout)) return failure;
    record_timing(at);
    if (const std::optional<size_t> rank = first_mismatch()) return mismatch(at, *rank, like);
    if (!layout.eager) return move_data(at, like);
    reduce_eager(layout);
    return std::nullopt;
  } catch (const Error& error) {
    return failure_of(error);
  }
}

}  // namespace ordo::comm
