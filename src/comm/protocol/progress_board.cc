#include "comm/protocol/progress_board.h"

#include "comm/describe.h"
#include "comm/protocol/wire.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr uint64_t kQuestionMagic = 0x6f726471;  // "ordq"
constexpr uint64_t kAnswerMagic = 0x6f726461;    // "orda"

}  // namespace

std::string ProgressBoard::Seen::describe() const {
  return str_cat(ir::op_name(op), " #", sequence, " on group ", group);
}

std::string ProgressBoard::Seen::doing(int64_t number, const std::string& waiting_group,
                                      int64_t waiting_sequence) const {
  if (started == 0) return "has not reached a collective yet";
  if (state == State::kAt && group == waiting_group && sequence == waiting_sequence) return kArriving;
  if (state == State::kAt) return str_cat("ran ", describe(), " as its collective #", number);
  if (inside) return str_cat("is waiting in ", latest, ", its collective #", started - 1);
  return str_cat("has not reached a collective since its collective #", started - 1, " (", latest, ")");
}

ProgressBoard::ProgressBoard(const Processes& world, Transport& transport, const LocalGroups& groups)
    : world_(world), transport_(transport), groups_(groups) {}

ProgressBoard::Seen ProgressBoard::seen(GlobalOrdinal device, int64_t number) const {
  const DeviceProgress::Snapshot snapshot = groups_.progress(device).read(number, device);
  Seen seen;
  seen.started = snapshot.started;
  seen.inside = snapshot.inside;
  if (snapshot.latest) seen.latest = snapshot.latest->describe();
  if (number >= snapshot.started) return seen;
  if (!snapshot.wanted) {
    seen.state = Seen::State::kForgotten;
    return seen;
  }
  const ProgressEntry& entry = *snapshot.wanted;
  seen.state = Seen::State::kAt;
  seen.op = entry.op;
  seen.partition = entry.partition->text;
  seen.group = describe_group(*entry.group);
  seen.sequence = entry.sequence;
  return seen;
}

uint64_t ProgressBoard::ask(GlobalOrdinal device, int64_t number) {
  uint64_t question = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    question = ++last_question_;
    answers_.emplace(question, std::nullopt);
  }
  std::string bytes;
  put_word(bytes, kQuestionMagic);
  put_word(bytes, question);
  put_word(bytes, static_cast<uint64_t>(device.value()));
  put_word(bytes, static_cast<uint64_t>(number));
  transport_.send_owned(std::move(bytes), world_.topology().place(device).process, kQuestionTag);
  return question;
}

std::optional<ProgressBoard::Seen> ProgressBoard::answer(uint64_t question) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = answers_.find(question);
  if (it == answers_.end() || !it->second) return std::nullopt;
  return *it->second;
}

void ProgressBoard::forget(uint64_t question) {
  std::lock_guard<std::mutex> lock(mu_);
  answers_.erase(question);
}

void ProgressBoard::pump() {
  int source = 0;
  while (std::optional<std::string> bytes = transport_.try_take(kAnyProcess, kQuestionTag, &source)) {
    WireReader in(*bytes, "progress questions", world_.describe_process(source));
    if (in.word() != kQuestionMagic) in.malformed("no header");
    const uint64_t question = in.word();
    const GlobalOrdinal device(static_cast<int>(in.word()));
    const auto number = static_cast<int64_t>(in.word());
    if (!world_.topology().is_local(device)) continue;
    const Seen s = seen(device, number);
    std::string answer;
    put_word(answer, kAnswerMagic);
    put_word(answer, question);
    put_word(answer, static_cast<uint64_t>(s.state));
    put_word(answer, static_cast<uint64_t>(s.started));
    put_word(answer, static_cast<uint64_t>(s.inside));
    put_bytes(answer, s.latest);
    put_word(answer, static_cast<uint64_t>(s.op));
    put_bytes(answer, s.partition);
    put_bytes(answer, s.group);
    put_word(answer, static_cast<uint64_t>(s.sequence));
    transport_.send_owned(std::move(answer), source, kAnswerTag);
  }
  while (std::optional<std::string> bytes = transport_.try_take(kAnyProcess, kAnswerTag, &source)) {
    WireReader in(*bytes, "progress questions", world_.describe_process(source));
    if (in.word() != kAnswerMagic) in.malformed("no header");
    const uint64_t question = in.word();
    Seen s;
    s.state = static_cast<Seen::State>(in.word());
    s.started = static_cast<int64_t>(in.word());
    s.inside = in.word() != 0;
    s.latest = in.bytes();
    s.op = static_cast<ir::OpKind>(in.word());
    s.partition = in.bytes();
    s.group = in.bytes();
    s.sequence = static_cast<int64_t>(in.word());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = answers_.find(question);
    if (it != answers_.end()) it->second = std::move(s);  // else: its asker gave up waiting
  }
}

}  // namespace ordo::comm
