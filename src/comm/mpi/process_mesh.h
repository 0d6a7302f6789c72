// TEMPORARY stand-in (untracked): replaced by the mesh helper's file.
#pragma once
#include <functional>
#include <map>
#include <string>
#include "comm/mpi/mpi_world.h"
namespace ordo::comm {
struct DeviceNews {
  enum class Kind { kFailed, kAbsent, kPresent };
  Kind kind;
  int device;
  std::string reason;
};
class ProcessMesh {
 public:
  static ProcessMesh& join(const MpiWorld&) { static ProcessMesh mesh; return mesh; }
  struct Handlers {
    std::function<void(int process, const std::string& reason)> process_died;
    std::function<void(const DeviceNews&)> device_news;
  };
  void set_handlers(Handlers h) { handlers_ = std::move(h); }
  void announce(const DeviceNews&) {}
 private:
  Handlers handlers_;
};
}
