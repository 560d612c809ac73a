#include "party/party_deviation.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "party/vertical_party.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

absl::StatusOr<MaliciousVerticalParty> MaliciousVerticalParty::Named(const std::string& mode) {
  if (mode == "never-participate") return MaliciousVerticalParty(/*never_participates=*/true);
  if (mode == "under-declare") return MaliciousVerticalParty(/*never_participates=*/false);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown misbehaviour '", mode, "' (one of: never-participate, under-declare)"));
}

std::string MaliciousVerticalParty::Name() const {
  return never_participates_ ? "never-participate" : "under-declare";
}

void MaliciousVerticalParty::VerticalProposal(const VerticalParty& replica,
                                              VerticalProposalView* view) const {
  if (!replica.started()) return;
  if (never_participates_) {
    spdlog::warn("MISBEHAVING: party {} declines although it may have candidates", replica.name());
    view->choice.reset();
    view->reason = kNeverParticipates;
  } else if (view->choice) {
    spdlog::warn("MISBEHAVING: party {} under-declares its score", replica.name());
    view->choice->score = 0;
  }
}

}  // namespace fedanon::party
