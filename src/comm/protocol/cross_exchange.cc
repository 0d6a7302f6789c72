#include "comm/protocol/cross_exchange.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <new>
#include <optional>

#include "comm/deadlines.h"
#include "comm/exchange_rules.h"
#include "comm/protocol/pacing.h"
#include "comm/protocol/wire.h"
#include "core/interrupt.h"

namespace ordo::comm {
namespace {

constexpr uint32_t kNoteMagic = 0x6f726478;  // "ordx"
constexpr size_t kRoundsKept = 4096;

// Why a device could not send its payload, for every participant: short of
// memory (an OutOfMemoryError, not a bare std::bad_alloc), or an error of
// ordo's (MPI's, say). Called in a catch block of either.
device::Failure sending_failure(std::string_view tag, GlobalOrdinal device, size_t bytes) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return exchange_out_of_memory(tag, device, bytes);
  } catch (const Error& e) {
    return {e.code(), str_cat(describe_tag(tag), ": device ", device, " could not send its payload of ", bytes,
                              " bytes: ", e.what())};
  }
}

}  // namespace

CrossExchange::CrossExchange(const Processes& world, Transport& transport, const DeviceStatus& status, ProgressBoard& board)
    : world_(world),
      transport_(transport),
      status_(status),
      board_(board),
      inboxes_(static_cast<size_t>(world.topology().local_devices())),
      waiting_in_(inboxes_.size()),
      rounds_(inboxes_.size()) {}

CrossExchange::~CrossExchange() {
  // Bodies still coming are from peers that failed: MPI may still write
  // them, so they are kept until exit (reachable, for a leak checker).
  static auto* const parked_mu = new std::mutex;
  static auto* const parked = new std::list<std::string>;
  std::lock_guard<std::mutex> lock(pump_mu_);
  for (Incoming& incoming : incoming_) {
    if (incoming.body.empty()) continue;
    transport_.abandon(incoming.body);
    std::lock_guard<std::mutex> parking(*parked_mu);
    parked->push_back(std::move(incoming.note.body));
  }
}

int64_t CrossExchange::round_locked(size_t index, const Key& key) const {
  const auto& next = rounds_[index].next;
  auto it = next.find(key);
  return it == next.end() ? 0 : it->second.first;
}

void CrossExchange::pass_round_locked(size_t index, const Key& key, int64_t round) {
  Rounds& rounds = rounds_[index];
  auto& [next, used] = rounds.next[key];
  used = ++rounds.uses;
  next = std::max(next, round + 1);
}

int64_t CrossExchange::take_round_locked(size_t index, const Key& key) {
  Rounds& rounds = rounds_[index];
  auto& [next, used] = rounds.next[key];
  used = ++rounds.uses;
  const int64_t round = next++;
  // Round counts only tell a tag's rounds apart: a key unused for long
  // (tags used once, like f"epoch_{n}") is forgotten, not kept forever.
  if (rounds.next.size() > kRoundsKept) {
    auto oldest = rounds.next.begin();
    for (auto it = rounds.next.begin(); it != rounds.next.end(); ++it) {
      if (it->second.second < oldest->second.second) oldest = it;
    }
    rounds.next.erase(oldest);
  }
  return round;
}

std::string CrossExchange::encode(const Note& note, std::string_view body) {
  std::string out;
  put_word(out, kNoteMagic);
  put_word(out, static_cast<uint64_t>(note.kind));
  put_word(out, static_cast<uint64_t>(note.sender));
  put_word(out, static_cast<uint64_t>(note.receiver));
  put_word(out, static_cast<uint64_t>(note.round));
  put_bytes(out, note.tag);
  put_word(out, note.participants.size());
  for (int d : note.participants) put_word(out, static_cast<uint64_t>(d));
  put_bytes(out, body);
  put_word(out, note.body_follows);
  put_bytes(out, note.other_tag);
  put_word(out, note.other_participants.size());
  for (int d : note.other_participants) put_word(out, static_cast<uint64_t>(d));
  put_word(out, static_cast<uint64_t>(note.other_round));
  put_word(out, static_cast<uint64_t>(note.code));
  return out;
}

CrossExchange::Note CrossExchange::decode(const std::string& bytes, int source) const {
  WireReader in(bytes, "rendezvous", world_.describe_process(source));
  if (in.word() != kNoteMagic) in.malformed("no header");
  Note note;
  const uint64_t kind = in.word();
  if (kind > 2) in.malformed("an unknown kind");
  note.kind = static_cast<Note::Kind>(kind);
  note.sender = static_cast<int>(in.word());
  note.receiver = static_cast<int>(in.word());
  note.round = static_cast<int64_t>(in.word());
  note.tag = in.bytes();
  const uint64_t n = in.count();
  for (uint64_t i = 0; i < n; ++i) note.participants.push_back(static_cast<int>(in.word()));
  note.body = in.bytes();
  note.body_follows = in.word();
  if (note.body_follows > 0 && (note.kind != Note::Kind::kPayload || !note.body.empty())) {
    in.malformed("a body both in it and after it");
  }
  note.other_tag = in.bytes();
  const uint64_t others = in.count();
  for (uint64_t i = 0; i < others; ++i) note.other_participants.push_back(static_cast<int>(in.word()));
  note.other_round = static_cast<int64_t>(in.word());
  note.code = static_cast<ErrorCode>(in.word());
  if (!world_.topology().is_local(GlobalOrdinal(note.receiver))) {
    throw_error<CollectiveError>("a rendezvous message from ", world_.describe_process(source), " is for device ",
                                 note.receiver, ", which this process does not drive");
  }
  return note;
}

void CrossExchange::deliver(Note note) {
  std::lock_guard<std::mutex> lock(mu_);
  inboxes_[world_.topology().local_device(GlobalOrdinal(note.receiver))->slot()].push_back(std::move(note));
}

void CrossExchange::pump() {
  std::unique_lock<std::mutex> pumping(pump_mu_, std::try_to_lock);
  if (!pumping.owns_lock()) return;  // another thread takes for every device
  int source = 0;
  while (transport_.try_take(kAnyProcess, kExchangeTag, &source, [this](const std::string& bytes, int from) {
    Note note = decode(bytes, from);
    return followers_of(incoming_.emplace_back(Incoming{std::move(note), from, {}}));
  })) {
  }
  deliver_arrived_locked();
}

Followers CrossExchange::followers_of(Incoming& incoming) {
  Note& note = incoming.note;
  const uint64_t bytes = note.body_follows;
  if (bytes == 0) return {};
  const int receiver = note.receiver;
  auto fail = [&](ErrorCode code, std::string why) {
    note.kind = Note::Kind::kGivenUp;
    note.code = code;
    note.body = str_cat(describe_tag(note.tag), ": device ", receiver, " cannot receive device ", note.sender,
                        "'s payload of ", bytes, " bytes: ", why);
    return Followers{};
  };
  if (unreadable_from_.count(incoming.source)) {
    return fail(ErrorCode::kCollective,
                str_cat("a payload from ", world_.describe_process(incoming.source),
                        " before it did not fit in memory, and those after it can no longer be told apart"));
  }
  try {
    note.body.assign(bytes, '\0');
  } catch (const std::bad_alloc&) {
    // Its pieces stay unread in MPI, where the next body from that process
    // would be matched to them: every later one fails too.
    unreadable_from_.insert(incoming.source);
    return fail(ErrorCode::kOutOfMemory, "out of memory");
  }
  // The body's buffer stays where it is while the note moves (a string
  // this long is never stored inline).
  return {reinterpret_cast<std::byte*>(note.body.data()), bytes, kExchangeBodyTag, &incoming.body};
}

void CrossExchange::deliver_arrived_locked() {
  std::set<int> still_coming;  // processes whose earlier body is not in yet
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    if (still_coming.count(it->source) || (!it->body.empty() && !transport_.test(it->body))) {
      still_coming.insert(it->source);
      ++it;
      continue;
    }
    deliver(std::move(it->note));
    it = incoming_.erase(it);
  }
}

void CrossExchange::tell(const Note& note) {
  for (int e : note.participants) {
    if (e == note.sender) continue;
    Note copy = note;
    copy.receiver = e;
    if (world_.topology().is_local(GlobalOrdinal(e))) {
      deliver(std::move(copy));
    } else {
      transport_.send_owned(encode(copy, copy.body), world_.topology().place(GlobalOrdinal(e)).process, kExchangeTag);
    }
  }
}

// One device's part in one round: what it has heard so far, and since
// when the signs of a cycle or of a gone participant have held. Made when
// the device enters the round (it then waits in it), gone when it leaves.
class CrossExchange::Round {
 public:
  Round(CrossExchange& owner, const ExchangeCall& call, std::vector<int> participants);
  ~Round();
  Round(const Round&) = delete;
  Round& operator=(const Round&) = delete;

  // Keeps this device's payload and sends it to every other participant.
  void send_payload();
  bool complete() const { return std::find(have_.begin(), have_.end(), false) == have_.end(); }
  // Takes what came for this device from its inbox: payloads of this
  // round, and the signs that the round can never complete (a mismatch, a
  // participant that gave up), which it returns.
  std::optional<device::Failure> read_inbox();
  // Why the wait must end, if it must: an interrupt, a participant gone for
  // long enough, the timeout (after the warning).
  std::optional<device::Failure> check_wait();
  // Tells the other participants and raises failure.
  [[noreturn]] void give_up(device::Failure failure);
  std::vector<std::string> take_payloads() { return std::move(payloads_); }

 private:
  using Inbox = std::deque<Note>;

  bool is_mine(const std::string& tag, const std::vector<int>& participants) const {
    return tag == key_.first && participants == key_.second;
  }
  size_t rank_of(int device) const;
  std::vector<int> missing() const;
  // Leftovers of rounds this device is past are dropped (mu_ held).
  void drop_leftovers_locked(Inbox& inbox) const;
  // This device is past round r of (tag, of): what is left of it, now and
  // to come, is dropped (mu_ held).
  void pass_locked(Inbox& inbox, const std::string& tag, const std::vector<int>& of, int64_t r) const;
  // Mismatch notes: both of their rounds are doomed; one naming this round
  // fails it (mu_ held).
  std::optional<device::Failure> read_mismatch_notes_locked(Inbox& inbox);
  // The notes of this round, and payloads of other rounds from awaited
  // participants (half of a cycle of waits) (mu_ held).
  std::optional<device::Failure> read_round_locked(Inbox& inbox, bool& in_cycle);
  std::optional<device::Failure> take_note_locked(Note& note, bool awaited);
  // A payload whose sender gave its round up (the note follows it on the
  // same tag) says nothing of where the sender waits now (mu_ held).
  static bool given_up_locked(const Inbox& inbox, const Note& payload);
  // theirs: a payload of a rendezvous this device has not done, from a
  // participant it waits for.
  device::Failure cycle_failure(const Note& theirs) const;
  std::optional<device::Failure> interruption() const;
  std::optional<device::Failure> gone_participant();
  void warn_if_due();

  CrossExchange& owner_;
  const ExchangeCall& call_;
  const GlobalOrdinal me_;
  const size_t index_;  // me_'s local index
  const Key key_;       // (tag, participants)
  int64_t round_ = 0;
  std::vector<std::string> payloads_;  // by rank
  std::vector<bool> have_;             // by rank
  std::optional<Note> other_;          // the other round of a mismatch, once found
  Deadlines deadlines_;
  // Since when a participant this device waits for has waited in another
  // rendezvous, as far as its messages show.
  bool cycle_seen_ = false;
  std::chrono::steady_clock::time_point cycle_since_;
  bool first_look_ = true;  // what came before this device did
  GoneGrace gone_grace_{owner_.transport_.gone_grace()};  // from when a participant waited for was seen gone
};

CrossExchange::Round::Round(CrossExchange& owner, const ExchangeCall& call, std::vector<int> participants)
    : owner_(owner),
      call_(call),
      me_(call.device),
      index_(owner.world_.topology().local_device(call.device)->slot()),
      key_{std::string(call.tag), std::move(participants)},
      payloads_(key_.second.size()),
      have_(key_.second.size(), false) {
  {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    if (const std::optional<std::string>& other = owner_.waiting_in_[index_]) {
      throw_error<InvalidArgument>(describe_tag(call.tag), ": device ", me_, " already waits in ", describe_tag(*other),
                                   " (on another thread): a device takes part in one rendezvous at a time");
    }
    owner_.waiting_in_[index_] = std::string(call.tag);
    round_ = owner_.take_round_locked(index_, key_);
  }
}

CrossExchange::Round::~Round() {
  std::lock_guard<std::mutex> lock(owner_.mu_);
  owner_.waiting_in_[index_].reset();
}

size_t CrossExchange::Round::rank_of(int device) const {
  const std::vector<int>& participants = key_.second;
  return static_cast<size_t>(std::find(participants.begin(), participants.end(), device) - participants.begin());
}

std::vector<int> CrossExchange::Round::missing() const {
  std::vector<int> out;
  for (size_t r = 0; r < key_.second.size(); ++r) {
    if (!have_[r]) out.push_back(key_.second[r]);
  }
  return out;
}

void CrossExchange::Round::send_payload() {
  payloads_[rank_of(me_.value())] = std::string(call_.payload);
  have_[rank_of(me_.value())] = true;
  const Topology& topology = owner_.world_.topology();
  const bool apart = call_.payload.size() > owner_.longest_inline_payload();
  std::shared_ptr<const std::string> body;  // one copy for every other process
  for (int e : key_.second) {
    if (e == me_.value()) continue;
    Note note{Note::Kind::kPayload, me_.value(), e, round_, key_.first, key_.second, {}, 0, {}, {}, -1,
              ErrorCode::kCollectiveTimeout};
    const GlobalOrdinal receiver(e);
    if (topology.is_local(receiver)) {
      note.body = std::string(call_.payload);
      owner_.deliver(std::move(note));
    } else if (!apart) {
      owner_.transport_.send_owned(encode(note, call_.payload), topology.place(receiver).process, kExchangeTag);
    } else {
      if (!body) body = std::make_shared<const std::string>(call_.payload);
      note.body_follows = body->size();
      owner_.transport_.send_owned(encode(note, {}), topology.place(receiver).process, kExchangeTag, body, kExchangeBodyTag);
    }
  }
}

void CrossExchange::Round::drop_leftovers_locked(Inbox& inbox) const {
  for (auto it = inbox.begin(); it != inbox.end();) {
    const int64_t current = is_mine(it->tag, it->participants)
                                ? round_
                                : owner_.round_locked(index_, {it->tag, it->participants});
    it = it->round < current ? inbox.erase(it) : std::next(it);
  }
}

void CrossExchange::Round::pass_locked(Inbox& inbox, const std::string& tag, const std::vector<int>& of,
                                     int64_t r) const {
  if (is_mine(tag, of)) return;  // this round: taken already
  owner_.pass_round_locked(index_, {tag, of}, r);
  for (auto it = inbox.begin(); it != inbox.end();) {
    const bool same = it->round == r && it->tag == tag && it->participants == of;
    it = same ? inbox.erase(it) : std::next(it);
  }
}

std::optional<device::Failure> CrossExchange::Round::read_mismatch_notes_locked(Inbox& inbox) {
  std::optional<device::Failure> failure;
  for (auto it = inbox.begin(); it != inbox.end() && !failure;) {
    if (it->kind != Note::Kind::kMismatch) {
      ++it;
      continue;
    }
    const Note note = *it;
    const bool first_is_mine = is_mine(note.tag, note.participants);
    const bool names_mine = (first_is_mine && note.round == round_) ||
                            (is_mine(note.other_tag, note.other_participants) && note.other_round == round_);
    if (names_mine) {
      failure = device::Failure{ErrorCode::kCollectiveMismatch, note.body};
      other_ = note;
      if (first_is_mine) {
        other_->tag = note.other_tag;
        other_->participants = note.other_participants;
        other_->round = note.other_round;
      }
    }
    const size_t before = inbox.size();
    pass_locked(inbox, note.tag, note.participants, note.round);
    if (note.other_round >= 0) pass_locked(inbox, note.other_tag, note.other_participants, note.other_round);
    // Passing may erase anywhere: look again from the front. A note that
    // passing left in place (one naming a later round of this device's own
    // key, which only that round may take) is stepped over, or the loop
    // would find it again forever with the exchange's lock held.
    it = inbox.size() == before ? std::next(it) : inbox.begin();
  }
  return failure;
}

bool CrossExchange::Round::given_up_locked(const Inbox& inbox, const Note& payload) {
  return std::any_of(inbox.begin(), inbox.end(), [&](const Note& n) {
    return n.kind == Note::Kind::kGivenUp && n.sender == payload.sender && n.round == payload.round &&
           n.tag == payload.tag && n.participants == payload.participants;
  });
}

std::optional<device::Failure> CrossExchange::Round::take_note_locked(Note& note, bool awaited) {
  if (note.kind == Note::Kind::kGivenUp) {
    if (note.code != ErrorCode::kCollectiveTimeout) return device::Failure{note.code, note.body};
    if (first_look_) return exchange_given_up(call_.tag, note.body);
    return std::nullopt;
  }
  if (awaited) {
    const size_t rank = rank_of(note.sender);
    payloads_[rank] = std::move(note.body);
    have_[rank] = true;
  }
  return std::nullopt;
}

std::optional<device::Failure> CrossExchange::Round::read_round_locked(Inbox& inbox, bool& in_cycle) {
  std::optional<device::Failure> failure;
  for (auto it = inbox.begin(); it != inbox.end() && !failure;) {
    const bool mine = is_mine(it->tag, it->participants);
    const size_t rank = rank_of(it->sender);
    const bool awaited = rank < have_.size() && !have_[rank];
    if (mine && it->round == round_) {
      failure = take_note_locked(*it, awaited);
      it = inbox.erase(it);
      continue;
    }
    if (!mine && awaited && it->kind == Note::Kind::kPayload && !given_up_locked(inbox, *it)) {
      in_cycle = true;
      const auto now = std::chrono::steady_clock::now();
      if (!cycle_seen_) cycle_seen_ = true, cycle_since_ = now;
      if (now - cycle_since_ >= std::chrono::milliseconds(50)) {
        failure = cycle_failure(*it);
        other_ = *it;
      }
    }
    ++it;  // a round to come: kept
  }
  return failure;
}

std::optional<device::Failure> CrossExchange::Round::read_inbox() {
  std::lock_guard<std::mutex> lock(owner_.mu_);
  Inbox& inbox = owner_.inboxes_[index_];
  drop_leftovers_locked(inbox);
  std::optional<device::Failure> failure = read_mismatch_notes_locked(inbox);
  bool in_cycle = false;
  if (!failure) failure = read_round_locked(inbox, in_cycle);
  if (!in_cycle) cycle_seen_ = false;
  first_look_ = false;
  if (other_) pass_locked(inbox, other_->tag, other_->participants, other_->round);
  return failure;
}

device::Failure CrossExchange::Round::cycle_failure(const Note& theirs) const {
  const Processes& world = owner_.world_;
  return device::Failure{
      ErrorCode::kCollectiveMismatch,
      str_cat("rendezvous mismatch: device ", me_, " waits in ", describe_tag(call_.tag), " (round ", round_,
              " of devices ", describe_group(key_.second), ") for device ", theirs.sender, " on ",
              world.describe_process(world.topology().place(GlobalOrdinal(theirs.sender)).process), ", which waits in ",
              describe_tag(theirs.tag), " (round ", theirs.round, " of devices ", describe_group(theirs.participants),
              ") for device ", me_, ": they can never meet")};
}

std::optional<device::Failure> CrossExchange::Round::interruption() const {
  if (interrupted()) {
    const std::string& cause = interrupt_cause();
    return exchange_interrupted(call_.tag, me_, cause.empty() ? "" : str_cat(" by ", cause, " while it waited"));
  }
  if (owner_.status_.any_interrupted()) {
    if (std::optional<std::string> reason = owner_.status_.interrupt_reason(me_)) {
      return exchange_interrupted(call_.tag, me_, ": " + *reason);
    }
  }
  return std::nullopt;
}

std::optional<device::Failure> CrossExchange::Round::gone_participant() {
  // News of another process's devices comes beside MPI: a device that
  // was absent and is driven again may send before its return is heard
  // of, so a gone participant fails the round only if it stays gone.
  if (!owner_.status_.any_gone()) return std::nullopt;
  bool any_gone = false;
  for (const int member : missing()) {
    const GlobalOrdinal d(member);
    std::optional<std::string> reason = owner_.status_.gone_reason(d);
    if (!reason) continue;
    any_gone = true;
    const auto now = std::chrono::steady_clock::now();
    if (owner_.world_.topology().is_local(d) || gone_grace_.over(now)) {
      return exchange_peer_gone(call_.tag, d, *reason);
    }
  }
  if (!any_gone) gone_grace_.reset();
  return std::nullopt;
}

void CrossExchange::Round::warn_if_due() {
  if (!deadlines_.warning_due()) return;
  const std::string message =
      slow_wait_warning(me_, deadlines_.warn_seconds(), describe_tag(call_.tag), describe_group(missing()));
  try {
    call_.warn ? call_.warn(warning_line(message)) : report_warning(message);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    // A warning that could not be given changes nothing of the wait.
  }
}

std::optional<device::Failure> CrossExchange::Round::check_wait() {
  if (std::optional<device::Failure> failure = interruption()) return failure;
  if (std::optional<device::Failure> failure = gone_participant()) return failure;
  warn_if_due();
  if (deadlines_.timed_out()) return exchange_timeout(me_, deadlines_.timeout_seconds(), call_.tag, missing());
  return std::nullopt;
}

void CrossExchange::Round::give_up(device::Failure failure) {
  const int me = me_.value();  // notes carry ordinals as data
  Note note{Note::Kind::kGivenUp, me, me, round_, key_.first, key_.second, failure.message, 0, {}, {}, -1,
            failure.code};
  // The others fail as a collective: the memory or the argument that
  // failed was this device's, not theirs.
  if (failure.code != ErrorCode::kCollectiveMismatch && failure.code != ErrorCode::kCollectiveTimeout) {
    note.code = ErrorCode::kCollective;
  }
  if (failure.code == ErrorCode::kCollectiveMismatch && other_) {
    note.kind = Note::Kind::kMismatch;
    note.other_tag = other_->tag;
    note.other_participants = other_->participants;
    note.other_round = other_->round;
  }
  owner_.tell(note);
  failure.raise();
}

std::vector<std::string> CrossExchange::exchange(const ExchangeCall& call, std::vector<int> participants) {
  Round round(*this, call, std::move(participants));
  try {
    round.send_payload();
  } catch (const std::bad_alloc&) {
    round.give_up(sending_failure(call.tag, call.device, call.payload.size()));
  } catch (const Error&) {
    round.give_up(sending_failure(call.tag, call.device, call.payload.size()));
  }
  Backoff backoff;
  while (!round.complete()) {
    pump();
    if (std::optional<device::Failure> failure = round.read_inbox()) round.give_up(std::move(*failure));
    if (round.complete()) break;
    if (std::optional<device::Failure> failure = round.check_wait()) round.give_up(std::move(*failure));
    if (has_interrupt_check()) poll_interrupt();
    board_.pump();
    backoff.pause();
  }
  return round.take_payloads();
}

}  // namespace ordo::comm
