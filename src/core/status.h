// Status: the outcome of an operation that can fail for reasons of the environment (file missing,
// device gone, receiver down). Impossible states are not statuses; they abort.
//
// Thread-safety: a value type; copies are independent.
#pragma once

#include <string>
#include <utility>

namespace gpuscope {

class Status {
 public:
  enum class Code { kOk, kNoData, kInvalidArgument, kNotFound, kUnavailable, kDeadlineExceeded, kInternal };

  Status() = default;
  static Status Ok() { return Status(); }
  // "No data" (no GPUs, not in a job) is its own outcome: logged at debug level, never an error.
  static Status NoData(std::string message) { return Status(Code::kNoData, std::move(message)); }
  static Status InvalidArgument(std::string message) {
    return Status(Code::kInvalidArgument, std::move(message));
  }
  static Status NotFound(std::string message) { return Status(Code::kNotFound, std::move(message)); }
  static Status Unavailable(std::string message) { return Status(Code::kUnavailable, std::move(message)); }
  static Status DeadlineExceeded(std::string message) {
    return Status(Code::kDeadlineExceeded, std::move(message));
  }
  static Status Internal(std::string message) { return Status(Code::kInternal, std::move(message)); }

  bool ok() const { return code_ == Code::kOk; }
  // True for kOk and kNoData: the operation did what it could and nothing is wrong.
  bool succeeded() const { return code_ == Code::kOk || code_ == Code::kNoData; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace gpuscope
