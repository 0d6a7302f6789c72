// A local device: an ordinal and a worker that runs its graphs in order.
//
// Locking: error_mu guards failed_graph_error, which the worker sets when a
// graph fails and the next mark_step of the device takes (and clears).
#pragma once

#include <mutex>
#include <string>

#include "device/worker.h"

namespace ordo::device {

class Device {
 public:
  explicit Device(int ordinal) : ordinal_(ordinal) {}

  int ordinal() const { return ordinal_; }
  Worker& worker() { return worker_; }

  // Keeps the first failure until it is taken.
  void record_failure(const std::string& message);
  // The recorded failure, cleared; empty if none.
  std::string take_failure();

 private:
  const int ordinal_;
  std::mutex error_mu_;
  std::string failed_graph_error_;
  Worker worker_;
};

}  // namespace ordo::device
