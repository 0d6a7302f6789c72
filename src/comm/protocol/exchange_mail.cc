#include "comm/protocol/exchange_mail.h"

#include <memory>
#include <new>

#include "comm/exchange_rules.h"
#include "comm/protocol/kept_until_exit.h"
#include "comm/protocol/wire.h"

namespace ordo::comm {
namespace {

constexpr uint32_t kNoteMagic = 0x6f726478;  // "ordx"

void put_round(std::string& out, const ExchangeRound& round) {
  put_bytes(out, round.tag);
  put_word(out, round.participants.size());
  for (int d : round.participants) put_word(out, static_cast<uint64_t>(d));
}

void read_round(WireReader& in, ExchangeRound& round) {
  round.tag = in.bytes();
  const uint64_t n = in.count();
  for (uint64_t i = 0; i < n; ++i) round.participants.push_back(static_cast<int>(in.word()));
}

}  // namespace

ExchangeMail::ExchangeMail(const Processes& world, Transport& transport, Exchange& exchange, ProgressBoard& board)
    : world_(world), transport_(transport), exchange_(exchange), board_(board) {}

ExchangeMail::~ExchangeMail() {
  // Bodies still coming are from peers that failed: MPI may still write them.
  std::lock_guard<std::mutex> lock(pump_mu_);
  for (Incoming& incoming : incoming_) {
    if (incoming.body.empty()) continue;
    transport_.abandon(incoming.body);
    keep_until_exit(std::make_shared<std::string>(std::move(incoming.note.body)));
  }
}

std::string ExchangeMail::encode(const ExchangeNote& note, std::string_view body) {
  std::string out;
  put_word(out, kNoteMagic);
  put_word(out, static_cast<uint64_t>(note.kind));
  put_word(out, static_cast<uint64_t>(note.sender));
  put_word(out, static_cast<uint64_t>(note.receiver));
  put_word(out, static_cast<uint64_t>(note.round.number));
  put_round(out, note.round);
  put_bytes(out, body);
  put_word(out, note.body_follows);
  put_round(out, note.other);
  put_word(out, static_cast<uint64_t>(note.other.number));
  put_word(out, static_cast<uint64_t>(note.code));
  return out;
}

ExchangeNote ExchangeMail::decode(const std::string& bytes, int source) const {
  WireReader in(bytes, "rendezvous", world_.describe_process(source));
  if (in.word() != kNoteMagic) in.malformed("no header");
  ExchangeNote note;
  const uint64_t kind = in.word();
  if (kind > 2) in.malformed("an unknown kind");
  note.kind = static_cast<ExchangeNote::Kind>(kind);
  note.sender = static_cast<int>(in.word());
  note.receiver = static_cast<int>(in.word());
  note.round.number = static_cast<int64_t>(in.word());
  read_round(in, note.round);
  note.body = in.bytes();
  note.body_follows = in.word();
  if (note.body_follows > 0 && (note.kind != ExchangeNote::Kind::kPayload || !note.body.empty())) {
    in.malformed("a body both in it and after it");
  }
  read_round(in, note.other);
  note.other.number = static_cast<int64_t>(in.word());
  note.code = static_cast<ErrorCode>(in.word());
  if (!world_.topology().is_local(GlobalOrdinal(note.receiver))) {
    throw_error<CollectiveError>("a rendezvous message from ", world_.describe_process(source), " is for device ",
                                 note.receiver, ", which this process does not drive");
  }
  return note;
}

void ExchangeMail::send_payload(ExchangeNote note, const std::vector<int>& receivers, std::string_view payload) {
  const Topology& topology = world_.topology();
  const bool apart = payload.size() > longest_inline_payload();
  std::shared_ptr<const std::string> body;  // one copy for every other process
  if (apart) {
    body = std::make_shared<const std::string>(payload);
    note.body_follows = body->size();
  }
  for (const int e : receivers) {
    note.receiver = e;
    const int process = topology.place(GlobalOrdinal(e)).process;
    if (apart) {
      transport_.send_owned(encode(note, {}), process, kExchangeTag, body, kExchangeBodyTag);
    } else {
      transport_.send_owned(encode(note, payload), process, kExchangeTag);
    }
  }
}

void ExchangeMail::send(const ExchangeNote& note) {
  transport_.send_owned(encode(note, note.body), world_.topology().place(GlobalOrdinal(note.receiver)).process,
                        kExchangeTag);
}

void ExchangeMail::collect() {
  std::unique_lock<std::mutex> pumping(pump_mu_, std::try_to_lock);
  if (!pumping.owns_lock()) return;  // another thread takes for every device
  int source = 0;
  while (transport_.try_take(kAnyProcess, kExchangeTag, &source, [this](const std::string& bytes, int from) {
    ExchangeNote note = decode(bytes, from);
    return followers_of(incoming_.emplace_back(Incoming{std::move(note), from, {}}));
  })) {
  }
  deliver_arrived_locked();
}

Followers ExchangeMail::followers_of(Incoming& incoming) {
  ExchangeNote& note = incoming.note;
  const uint64_t bytes = note.body_follows;
  if (bytes == 0) return {};
  const int receiver = note.receiver;
  auto fail = [&](ErrorCode code, std::string why) {
    note.kind = ExchangeNote::Kind::kGivenUp;
    note.code = code;
    note.body = str_cat(describe_tag(note.round.tag), ": device ", receiver, " cannot receive device ", note.sender,
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

void ExchangeMail::deliver_arrived_locked() {
  std::set<int> still_coming;  // processes whose earlier body is not in yet
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    if (still_coming.count(it->source) || (!it->body.empty() && !transport_.test(it->body))) {
      still_coming.insert(it->source);
      ++it;
      continue;
    }
    exchange_.deliver(std::move(it->note));
    it = incoming_.erase(it);
  }
}

}  // namespace ordo::comm
