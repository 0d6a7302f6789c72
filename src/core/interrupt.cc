#include "core/interrupt.h"

#include <algorithm>
#include <utility>

#include "ordo/error.h"

namespace ordo {
namespace {

using Clock = std::chrono::steady_clock;

thread_local ScopedInterruptCheck* t_check = nullptr;

}  // namespace

ScopedInterruptCheck::ScopedInterruptCheck(Check check, void* context)
    : check_(check), context_(context), outer_(t_check) {
  t_check = this;
}

ScopedInterruptCheck::~ScopedInterruptCheck() { t_check = outer_; }

bool has_interrupt_check() { return t_check != nullptr; }

bool poll_interrupt() {
  ScopedInterruptCheck* check = t_check;
  if (check == nullptr) return false;
  if (check->interrupted_) return true;
  const Clock::time_point now = Clock::now();
  if (now - check->last_poll_ < kInterruptPollPeriod) return false;
  check->last_poll_ = now;
  check->interrupted_ = check->check_(check->context_);
  return check->interrupted_;
}

bool interrupted() { return t_check != nullptr && t_check->interrupted_; }

void set_interrupt_cause(std::string cause) {
  if (t_check != nullptr) t_check->cause_ = std::move(cause);
}

const std::string& interrupt_cause() {
  static const std::string kNone;
  return t_check != nullptr ? t_check->cause_ : kNone;
}

Clock::time_point interrupt_poll_deadline(Clock::time_point deadline) {
  if (t_check == nullptr) return deadline;
  return std::min(deadline, Clock::now() + kInterruptPollPeriod);
}

void throw_interrupted(std::string_view what) { throw_error<ExecutionError>(what, " was interrupted"); }

}  // namespace ordo
