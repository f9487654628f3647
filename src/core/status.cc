#include "src/core/status.h"

namespace gpuscope {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kNoData:
      name = "NO_DATA";
      break;
    case Code::kInvalidArgument:
      name = "INVALID_ARGUMENT";
      break;
    case Code::kNotFound:
      name = "NOT_FOUND";
      break;
    case Code::kUnavailable:
      name = "UNAVAILABLE";
      break;
    case Code::kDeadlineExceeded:
      name = "DEADLINE_EXCEEDED";
      break;
    case Code::kInternal:
      name = "INTERNAL";
      break;
  }
  return message_.empty() ? std::string(name) : std::string(name) + ": " + message_;
}

}  // namespace gpuscope
