// The questions other processes ask about where each device of this
// process is in its program of collectives, answered from the devices'
// progress records (progress.h). A device numbers its collectives 0, 1,
// 2, ... in program order, and in an SPMD program every device's
// collective #k is the same op on the same partition. A leader that has
// waited a while for another process asks that process what each missing
// member did at #k; a member that ran #k on another partition (other
// replica groups) can never come, and both sides raise
// CollectiveMismatchError instead of waiting for the timeout.
//
//   ...  // waiting for device 5 of another process, at its collective #number:
//   const uint64_t question = board.ask(5, number);
//   board.pump();  // answers others' questions, files answers to ours
//   if (std::optional<ProgressBoard::Seen> seen = board.answer(question)) ...
//
// Questions and answers travel on tags of their own (kQuestionTag,
// kAnswerTag). A process answers while one of its threads waits (every
// waiter pumps): a process whose devices all compute answers later, which
// only delays the verdict.
//
// Locking: mu_ guards the answers; a leaf below the transport's callers
// (pump releases it before calling the transport). The records are read
// as progress.h says, lock-free.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/protocol/local_groups.h"
#include "comm/protocol/transport.h"
#include "core/device_numbers.h"
#include "ir/ops.h"

namespace ordo::comm {

inline constexpr int kQuestionTag = 2;
inline constexpr int kAnswerTag = 3;

class ProgressBoard {
 public:
  // groups: whose records the answers come from.
  ProgressBoard(const Processes& world, Transport& transport, const LocalGroups& groups);

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
  const Processes& world_;
  Transport& transport_;
  const LocalGroups& groups_;
  std::mutex mu_;
  uint64_t last_question_ = 0;
  std::map<uint64_t, std::optional<Seen>> answers_;  // by question asked; empty until answered
};

}  // namespace ordo::comm
