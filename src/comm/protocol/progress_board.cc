#include "comm/protocol/progress_board.h"

#include "comm/protocol/wire.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr uint64_t kQuestionMagic = 0x6f726471;  // "ordq"
constexpr uint64_t kAnswerMagic = 0x6f726461;    // "orda"

std::string describe_collective(ir::OpKind op, int64_t sequence, const std::string& group) {
  if (sequence < 0) return str_cat(ir::op_name(op), " on group ", group);
  return str_cat(ir::op_name(op), " #", sequence, " on group ", group);
}

std::string note_text(const ProgressBoard::Note& note) {
  return describe_collective(note.op, note.sequence, *note.group);
}

}  // namespace

std::string ProgressBoard::Seen::describe() const { return describe_collective(op, sequence, group); }

std::string ProgressBoard::Seen::doing(int64_t number, const std::string& waiting_group,
                                      int64_t waiting_sequence) const {
  if (started == 0) return "has not reached a collective yet";
  if (state == State::kAt && group == waiting_group && sequence == waiting_sequence) return kArriving;
  if (state == State::kAt) return str_cat("ran ", describe(), " as its collective #", number);
  if (inside) return str_cat("is waiting in ", latest, ", its collective #", started - 1);
  return str_cat("has not reached a collective since its collective #", started - 1, " (", latest, ")");
}

ProgressBoard::ProgressBoard(const Processes& world, Transport& transport)
    : world_(world), transport_(transport), records_(static_cast<size_t>(world.topology().local_devices())) {}

int64_t ProgressBoard::start(GlobalOrdinal device, const Note& note) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& record = records_[world_.topology().local_device(device)->slot()];
  record.notes[static_cast<size_t>(record.started % kHistory)] = note;
  return record.started++;
}

void ProgressBoard::finish(GlobalOrdinal device) {
  std::lock_guard<std::mutex> lock(mu_);
  ++records_[world_.topology().local_device(device)->slot()].finished;
}

ProgressBoard::Seen ProgressBoard::seen(GlobalOrdinal device, int64_t number) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Record& record = records_[world_.topology().local_device(device)->slot()];
  Seen seen;
  seen.started = record.started;
  seen.inside = record.finished < record.started;
  if (record.started > 0) {
    const Note& latest = record.notes[static_cast<size_t>((record.started - 1) % kHistory)];
    seen.latest = note_text(latest);
  }
  if (number >= record.started) return seen;
  if (record.started - number > kHistory) {
    seen.state = Seen::State::kForgotten;
    return seen;
  }
  const Note& note = record.notes[static_cast<size_t>(number % kHistory)];
  seen.state = Seen::State::kAt;
  seen.op = note.op;
  seen.partition = *note.partition;
  seen.group = *note.group;
  seen.sequence = note.sequence;
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
