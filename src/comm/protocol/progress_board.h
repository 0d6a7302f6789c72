// Where each device of this process is in its program of collectives, and
// the questions other processes ask about it. A device numbers its
// collectives 0, 1, 2, ... in program order, and in an SPMD program every
// device's collective #k is the same op on the same partition. A leader
// that has waited a while for another process asks that process what each
// missing member did at #k; a member that ran #k on another partition
// (other replica groups) can never come, and both sides raise
// CollectiveMismatchError instead of waiting for the timeout.
//
//   const int64_t number = board.start(device, {op, &partition_text, &group_text, sequence});
//   ...  // waiting for device 5 of another process:
//   const uint64_t question = board.ask(5, number);
//   board.pump();  // answers others' questions, files answers to ours
//   if (std::optional<ProgressBoard::Seen> seen = board.answer(question)) ...
//
// Questions and answers travel on tags of their own (kQuestionTag,
// kAnswerTag). A process answers while one of its threads waits (every
// waiter pumps): a process whose devices all compute answers later, which
// only delays the verdict.
//
// Locking: mu_ guards the records and the answers; a leaf below the
// transport's callers (pump releases it before calling the transport).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/protocol/transport.h"
#include "core/device_numbers.h"
#include "ir/ops.h"

namespace ordo::comm {

inline constexpr int kQuestionTag = 2;
inline constexpr int kAnswerTag = 3;

class ProgressBoard {
 public:
  ProgressBoard(const Processes& world, Transport& transport);

  struct Note {
    ir::OpKind op;
    const std::string* partition;  // "[[0, 1], [2, 3]]": lives as long as the communicator
    const std::string* group;      // "[0, 1]"
    int64_t sequence;              // the collective's number in its group
  };
  // Local device starts its next collective; returns the collective's
  // number. finish: it left it (done or failed).
  int64_t start(GlobalOrdinal device, const Note& note);
  void finish(GlobalOrdinal device);

  struct Seen {
    enum class State { kNotYet, kAt, kForgotten } state = State::kNotYet;
    int64_t started = 0;  // collectives the device started
    bool inside = false;  // still in its latest
    std::string latest;   // its latest, described
    // Of the collective asked for, when kAt:
    ir::OpKind op = ir::OpKind::kAllReduce;
    std::string partition, group;
    int64_t sequence = 0;
    // "all_reduce #3 on group [0, 1]"
    std::string describe() const;
    // What it does, for a peer that waits for it at its collective
    // #number, #sequence of group: "has not reached a collective yet",
    // "is waiting in all_reduce #3 on group [0, 1], its collective #3", ...
    std::string doing(int64_t number, const std::string& waiting_group, int64_t waiting_sequence) const;
    static constexpr const char* kArriving = "is arriving here";
  };
  // What local device did at its collective #number.
  Seen seen(GlobalOrdinal device, int64_t number) const;

  // Asks device's process (another) what it did at #number; the answer
  // comes through pump().
  uint64_t ask(GlobalOrdinal device, int64_t number);
  std::optional<Seen> answer(uint64_t question);
  // The asker gives up on a question (answered or not).
  void forget(uint64_t question);
  void pump();

 private:
  static constexpr int64_t kHistory = 16;
  struct Record {
    int64_t started = 0;
    int64_t finished = 0;
    std::vector<Note> notes = std::vector<Note>(kHistory);  // collective #n at n % kHistory
  };

  const Processes& world_;
  Transport& transport_;
  mutable std::mutex mu_;
  std::vector<Record> records_;  // by local device index
  uint64_t last_question_ = 0;
  std::map<uint64_t, std::optional<Seen>> answers_;  // by question asked; empty until answered
};

}  // namespace ordo::comm
