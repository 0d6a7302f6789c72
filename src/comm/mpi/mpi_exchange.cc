#include "comm/mpi/mpi_exchange.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "comm/deadlines.h"
#include "comm/exchange_rules.h"
#include "core/interrupt.h"

namespace ordo::comm {
namespace {

constexpr uint32_t kNoteMagic = 0x6f726478;  // "ordx"

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void put_bytes(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

// Reads what encode wrote; anything else is a CollectiveError naming the sender.
class Reader {
 public:
  Reader(const std::string& bytes, std::string from) : bytes_(bytes), from_(std::move(from)) {}
  uint64_t u64() {
    uint64_t v = 0;
    need(sizeof(v));
    std::memcpy(&v, bytes_.data() + at_, sizeof(v));
    at_ += sizeof(v);
    return v;
  }
  std::string bytes() {
    const uint64_t n = u64();
    need(n);
    std::string out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }

 private:
  void need(uint64_t n) {
    if (n > bytes_.size() - at_) {
      throw_error<CollectiveError>("a message from ", from_, " is not one of ordo's rendezvous (",
                                   bytes_.size(), " bytes, shorter than it says)");
    }
  }
  const std::string& bytes_;
  const std::string from_;
  size_t at_ = 0;
};

}  // namespace

MpiExchange::MpiExchange(const MpiWorld& world, MpiLink& link, const GoneDevices& gone,
                         const InterruptedDevices& interrupted, ProgressBoard& board)
    : world_(world),
      link_(link),
      gone_(gone),
      interrupted_(interrupted),
      board_(board),
      inboxes_(static_cast<size_t>(world.topology().local_devices())),
      waiting_(inboxes_.size(), false) {}

std::string MpiExchange::encode(const Note& note) {
  std::string out;
  put_u64(out, kNoteMagic);
  put_u64(out, note.given_up ? 1 : 0);
  put_u64(out, static_cast<uint64_t>(note.sender));
  put_u64(out, static_cast<uint64_t>(note.receiver));
  put_u64(out, static_cast<uint64_t>(note.count));
  put_bytes(out, note.tag);
  put_u64(out, note.participants.size());
  for (int d : note.participants) put_u64(out, static_cast<uint64_t>(d));
  put_bytes(out, note.body);
  return out;
}

MpiExchange::Note MpiExchange::decode(const std::string& bytes, int source) const {
  Reader in(bytes, world_.describe_process(source));
  if (in.u64() != kNoteMagic) {
    throw_error<CollectiveError>("a message from ", world_.describe_process(source),
                                 " is not one of ordo's rendezvous (no header)");
  }
  Note note;
  note.given_up = in.u64() != 0;
  note.sender = static_cast<int>(in.u64());
  note.receiver = static_cast<int>(in.u64());
  note.count = static_cast<int64_t>(in.u64());
  note.tag = in.bytes();
  const uint64_t n = in.u64();
  if (n > bytes.size()) in.bytes();  // fails: a count no message of this size can hold
  for (uint64_t i = 0; i < n; ++i) note.participants.push_back(static_cast<int>(in.u64()));
  note.body = in.bytes();
  if (!world_.topology().is_local(note.receiver)) {
    throw_error<CollectiveError>("a rendezvous message from ", world_.describe_process(source), " is for device ",
                                 note.receiver, ", which this process does not drive");
  }
  return note;
}

void MpiExchange::deliver(Note note) {
  std::lock_guard<std::mutex> lock(mu_);
  inboxes_[static_cast<size_t>(*world_.topology().index_of(note.receiver))].push_back(std::move(note));
}

void MpiExchange::pump() {
  int source = 0;
  while (std::optional<std::string> bytes = link_.try_take(MPI_ANY_SOURCE, kExchangeTag, &source)) {
    deliver(decode(*bytes, source));
  }
}

void MpiExchange::tell_given_up(const ExchangeCall& call, const std::vector<int>& participants,
                                const std::map<int, int64_t>& counts, const std::string& why) {
  for (int e : participants) {
    if (e == call.device) continue;
    Note note{true, call.device, e, counts.at(e), std::string(call.tag), participants, why};
    if (world_.topology().is_local(e)) {
      deliver(std::move(note));
    } else {
      link_.send_owned(encode(note), world_.topology().place(e).process, kExchangeTag);
    }
  }
}

std::vector<std::string> MpiExchange::exchange(const ExchangeCall& call, std::vector<int> participants) {
  const int me = call.device;
  const auto index = static_cast<size_t>(*world_.topology().index_of(me));
  std::map<int, int64_t> counts;  // by peer: which of our shared exchanges this is
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_[index]) {
      throw_error<InvalidArgument>(describe_tag(call.tag), ": device ", me,
                                   " already waits in a rendezvous (on another thread): a device takes part in one "
                                   "rendezvous at a time");
    }
    waiting_[index] = true;
    for (int e : participants) {
      if (e != me) counts[e] = counts_[{me, e}]++;
    }
  }
  struct NotWaiting {
    MpiExchange& self;
    size_t index;
    ~NotWaiting() {
      std::lock_guard<std::mutex> lock(self.mu_);
      self.waiting_[index] = false;
    }
  } not_waiting{*this, index};

  for (int e : participants) {
    if (e == me) continue;
    Note note{false, me, e, counts[e], std::string(call.tag), participants, std::string(call.payload)};
    if (world_.topology().is_local(e)) {
      deliver(std::move(note));
    } else {
      link_.send_owned(encode(note), world_.topology().place(e).process, kExchangeTag);
    }
  }
  const auto rank_of = [&](int d) {
    return static_cast<size_t>(std::find(participants.begin(), participants.end(), d) - participants.begin());
  };
  std::vector<std::string> payloads(participants.size());
  std::vector<bool> have(participants.size(), false);
  payloads[rank_of(me)] = std::string(call.payload);
  have[rank_of(me)] = true;
  auto missing = [&] {
    std::vector<int> out;
    for (size_t r = 0; r < participants.size(); ++r) {
      if (!have[r]) out.push_back(participants[r]);
    }
    return out;
  };
  auto give_up = [&](device::Failure failure) -> std::vector<std::string> {
    tell_given_up(call, participants, counts, failure.message);
    failure.raise();
  };
  Deadlines deadlines;
  Backoff backoff;
  while (std::count(have.begin(), have.end(), false) > 0) {
    pump();
    std::optional<device::Failure> failure;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::deque<Note>& inbox = inboxes_[index];
      for (auto it = inbox.begin(); it != inbox.end() && !failure;) {
        const auto count = counts.find(it->sender);
        const size_t rank = rank_of(it->sender);
        if (count == counts.end() || it->count < count->second || (rank < have.size() && have[rank])) {
          // Not of this exchange: a leftover of an earlier round (dropped),
          // or of the sender's next one (kept for later).
          it = (count == counts.end() || it->count > count->second) ? std::next(it) : inbox.erase(it);
          continue;
        }
        if (it->count > count->second || it->tag != call.tag || it->participants != participants) {
          failure = device::Failure{
              ErrorCode::kCollectiveMismatch,
              str_cat("rendezvous mismatch: device ", me, " waits in ", describe_tag(call.tag), " of devices ",
                      describe_group(participants), " for device ", it->sender, " (",
                      world_.describe_process(world_.topology().place(it->sender).process), "), which waits in ",
                      describe_tag(it->tag), " of devices ", describe_group(it->participants),
                      ": they can never meet")};
        } else if (it->given_up) {
          failure = exchange_given_up(call.tag, it->body);
        } else {
          payloads[rank] = std::move(it->body);
          have[rank] = true;
        }
        it = inbox.erase(it);
      }
    }
    if (failure) {
      if (failure->code == ErrorCode::kCollectiveMismatch) failure->raise();  // the peer finds it too
      return give_up(std::move(*failure));
    }
    if (std::count(have.begin(), have.end(), false) == 0) break;
    if (interrupted()) {
      const std::string& cause = interrupt_cause();
      return give_up(exchange_interrupted(call.tag, me, cause.empty() ? "" : str_cat(" by ", cause, " while it waited")));
    }
    if (interrupted_.any()) {
      if (std::optional<std::string> reason = interrupted_.reason(me)) {
        return give_up(exchange_interrupted(call.tag, me, ": " + *reason));
      }
    }
    if (gone_.any()) {
      for (int d : missing()) {
        if (std::optional<std::string> reason = gone_.reason(d)) return give_up(exchange_peer_gone(call.tag, d, *reason));
      }
    }
    if (deadlines.warning_due()) {
      const std::string message =
          slow_wait_warning(me, deadlines.warn_seconds(), describe_tag(call.tag), describe_group(missing()));
      try {
        call.warn ? call.warn(warning_line(message)) : report_warning(message);
      } catch (abi::__forced_unwind&) {
        throw;
      } catch (...) {
        // A warning that could not be given changes nothing of the wait.
      }
    }
    if (deadlines.timed_out()) {
      return give_up(exchange_timeout(me, deadlines.timeout_seconds(), call.tag, missing()));
    }
    if (has_interrupt_check()) poll_interrupt();
    board_.pump();
    backoff.pause();
  }
  return payloads;
}

}  // namespace ordo::comm
