#include "comm/gone_devices.h"

#include "comm/communicator.h"

namespace ordo::comm {

device::Failure gone_failure(const std::string& where, int device, const std::string& reason,
                             const std::string& when) {
  return {ErrorCode::kCollective,
          str_cat(where, " cannot complete: device ", device, " is gone (", reason, "), ", when)};
}

device::Failure abandoned_failure(int device, ir::OpKind op, int64_t sequence, const std::vector<int>& group,
                                  const std::string& reason) {
  return {ErrorCode::kCollective, str_cat("device ", device, " will not join ", ir::op_name(op), " #", sequence,
                                          " on group ", describe_group(group), ": ", reason)};
}

}  // namespace ordo::comm
