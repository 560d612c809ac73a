#include "leader/leader_observer.h"

namespace fedanon::leader {

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kSecureSum:
      return "secure_sum";
    case Phase::kInstruction:
      return "instruction";
    case Phase::kIdMatching:
      return "id_matching";
  }
  return "unknown";
}

std::string_view FailureCategory(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout";
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
      return "party_unavailable";
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kFailedPrecondition:
      return "refused";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return "invalid_job";
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kDataLoss:
      return "data_error";
    case absl::StatusCode::kResourceExhausted:
      return "resource_exhausted";
    default:
      return "internal";
  }
}

LeaderObserver& NoLeaderObserver() {
  static LeaderObserver* const none = new LeaderObserver();
  return *none;
}

}  // namespace fedanon::leader
