// The one mapping between absl::Status and grpc::Status. Both libraries use the canonical status
// codes with the same numbers, so every code maps to itself; messages pass through unchanged
// (callers never put key or record material into a status message in the first place).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace fedanon::server {

// Every absl::StatusCode to the same-numbered grpc::StatusCode; an out-of-range code (which
// absl::Status cannot hold in practice) becomes UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status);
// The inverse; a grpc::StatusCode outside the canonical range becomes kUnknown.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace fedanon::server
