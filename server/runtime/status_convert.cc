#include "server/runtime/status_convert.h"

#include <string>

namespace fedanon::server {
namespace {

// Canonical codes are 0 (OK) .. 16 (UNAUTHENTICATED) in both libraries.
constexpr int kMaxCanonicalCode = 16;

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  if (code < 0 || code > kMaxCanonicalCode) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  if (code < 0 || code > kMaxCanonicalCode) {
    return absl::Status(absl::StatusCode::kUnknown, status.error_message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), status.error_message());
}

// The numbering is part of both libraries' public contract; fail the build if it ever diverges.
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == kMaxCanonicalCode);
static_assert(static_cast<int>(grpc::StatusCode::UNAUTHENTICATED) == kMaxCanonicalCode);
static_assert(static_cast<int>(absl::StatusCode::kCancelled) ==
              static_cast<int>(grpc::StatusCode::CANCELLED));
static_assert(static_cast<int>(absl::StatusCode::kUnknown) ==
              static_cast<int>(grpc::StatusCode::UNKNOWN));
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
static_assert(static_cast<int>(absl::StatusCode::kDeadlineExceeded) ==
              static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED));
static_assert(static_cast<int>(absl::StatusCode::kNotFound) ==
              static_cast<int>(grpc::StatusCode::NOT_FOUND));
static_assert(static_cast<int>(absl::StatusCode::kAlreadyExists) ==
              static_cast<int>(grpc::StatusCode::ALREADY_EXISTS));
static_assert(static_cast<int>(absl::StatusCode::kPermissionDenied) ==
              static_cast<int>(grpc::StatusCode::PERMISSION_DENIED));
static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) ==
              static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
static_assert(static_cast<int>(absl::StatusCode::kFailedPrecondition) ==
              static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
static_assert(static_cast<int>(absl::StatusCode::kAborted) ==
              static_cast<int>(grpc::StatusCode::ABORTED));
static_assert(static_cast<int>(absl::StatusCode::kOutOfRange) ==
              static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
static_assert(static_cast<int>(absl::StatusCode::kUnimplemented) ==
              static_cast<int>(grpc::StatusCode::UNIMPLEMENTED));
static_assert(static_cast<int>(absl::StatusCode::kInternal) ==
              static_cast<int>(grpc::StatusCode::INTERNAL));
static_assert(static_cast<int>(absl::StatusCode::kUnavailable) ==
              static_cast<int>(grpc::StatusCode::UNAVAILABLE));
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) ==
              static_cast<int>(grpc::StatusCode::DATA_LOSS));

}  // namespace fedanon::server
