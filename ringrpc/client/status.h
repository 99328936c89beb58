// ringrpc/client/status.h — the status every ringrpc call ends with: one of gRPC's
// 17 codes, a message, and optional binary details
// (grpc-status-details-bin). Shaped like grpc::Status.
//
//   ringrpc::Status s = stub->SayHello(&ctx, req, &resp);
//   if (!s.ok()) std::cerr << s.error_code() << ": " << s.error_message();
#ifndef RINGRPC_CLIENT_STATUS_H_
#define RINGRPC_CLIENT_STATUS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace ringrpc {

enum class StatusCode : int {
  OK = 0,
  CANCELLED = 1,
  UNKNOWN = 2,
  INVALID_ARGUMENT = 3,
  DEADLINE_EXCEEDED = 4,
  NOT_FOUND = 5,
  ALREADY_EXISTS = 6,
  PERMISSION_DENIED = 7,
  RESOURCE_EXHAUSTED = 8,
  FAILED_PRECONDITION = 9,
  ABORTED = 10,
  OUT_OF_RANGE = 11,
  UNIMPLEMENTED = 12,
  INTERNAL = 13,
  UNAVAILABLE = 14,
  DATA_LOSS = 15,
  UNAUTHENTICATED = 16,
};

// "OK", "CANCELLED", ... "UNAUTHENTICATED".
const char* StatusCodeName(StatusCode code);

// As grpc++'s StatusCode (a plain enum) prints: the number.
inline std::ostream& operator<<(std::ostream& os, StatusCode code) {
  return os << static_cast<int>(code);
}

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::string details = "")
      : code_(code), message_(std::move(message)), details_(std::move(details)) {}

  // absl and gRPC share the numbering of the 17 codes.
  static Status FromAbsl(const absl::Status& s, std::string details = "") {
    return Status(static_cast<StatusCode>(s.code()), std::string(s.message()), std::move(details));
  }
  absl::Status ToAbsl() const {
    return absl::Status(static_cast<absl::StatusCode>(code_), message_);
  }

  bool ok() const { return code_ == StatusCode::OK; }
  StatusCode error_code() const { return code_; }
  const std::string& error_message() const { return message_; }
  const std::string& error_details() const { return details_; }
  // "UNAVAILABLE: connect to 127.0.0.1:1: Connection refused"
  std::string ToString() const;

  bool operator==(const Status& o) const {
    return code_ == o.code_ && message_ == o.message_ && details_ == o.details_;
  }

  // As in grpc++: Status::OK and Status::CANCELLED.
  static const Status& OK;
  static const Status& CANCELLED;

 private:
  StatusCode code_ = StatusCode::OK;
  std::string message_;
  std::string details_;
};

namespace internal {
inline const Status kOkStatus;
inline const Status kCancelledStatus(StatusCode::CANCELLED, "");
}  // namespace internal
inline const Status& Status::OK = internal::kOkStatus;
inline const Status& Status::CANCELLED = internal::kCancelledStatus;

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_STATUS_H_
