#include "ordo/error.h"

namespace ordo {

void throw_error_code(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      throw InvalidArgument(message);
    case ErrorCode::kDType:
      throw DTypeError(message);
    case ErrorCode::kOutOfRange:
      throw OutOfRange(message);
    case ErrorCode::kExecution:
      throw ExecutionError(message);
    case ErrorCode::kOutOfMemory:
      throw OutOfMemoryError(message);
    case ErrorCode::kCollective:
      throw CollectiveError(message);
    case ErrorCode::kCollectiveMismatch:
      throw CollectiveMismatchError(message);
    case ErrorCode::kCollectiveTimeout:
      throw CollectiveTimeoutError(message);
    case ErrorCode::kInternal:
      throw InternalError(message);
  }
  throw InternalError(message);
}

}  // namespace ordo
