#include "party/party_deviation.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fedanon::party {

absl::StatusOr<MaliciousVerticalParty> MaliciousVerticalParty::Named(const std::string& mode) {
  if (mode == "never-participate") return MaliciousVerticalParty(Misbehaviour::kNeverParticipate);
  if (mode == "under-declare") return MaliciousVerticalParty(Misbehaviour::kUnderDeclare);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown misbehaviour '", mode, "' (one of: never-participate, under-declare)"));
}

std::string MaliciousVerticalParty::Name() const {
  return mode_ == Misbehaviour::kNeverParticipate ? "never-participate" : "under-declare";
}

}  // namespace fedanon::party
