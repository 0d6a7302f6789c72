#include "comm/interrupted_devices.h"

namespace ordo::comm {

device::Failure interrupted_failure(const std::string& where, int device, const std::optional<std::string>& reason,
                                    const std::string& missing) {
  return {ErrorCode::kCollective,
          str_cat(where, " was interrupted on device ", device, ": ",
                  reason.value_or("the thread that waited in it was interrupted"),
                  "; devices that had not arrived: ", missing)};
}

}  // namespace ordo::comm
