#include "comm/protocol/pacing.h"

namespace ordo::comm {

void Backoff::pause() {
  using namespace std::chrono;
  if (pauses_++ % kPausesPerClockRead == 0) {
    const steady_clock::time_point now = steady_clock::now();
    if (!started_) started_ = now;
    waited_ = now - *started_;
  }
  const auto waited = waited_;
  if (waited < microseconds(50)) {
    if (oversubscribed()) std::this_thread::yield();
    return;
  }
  if (waited < milliseconds(5)) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(sleep_);
  sleep_ = std::min<microseconds>(2 * sleep_, milliseconds(1));
}

}  // namespace ordo::comm
