#include "leader/job_request_check.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/privacy_model.h"
#include "common/spec/job_spec_loader.h"
#include "crypto/certificates.h"

namespace fedanon::leader {
namespace {

using PartyNames = std::set<std::string>;

// A vertical job: two parties or more, no data-holding leader, an id column, every other
// non-class attribute owned by a party of the job, a score the parties can compute.
absl::Status CheckVertical(const fedanon::v1::SubmitJobRequest& request, const PartyNames& unique) {
  if (request.parties().size() < 2) {
    return absl::InvalidArgumentError("a vertical job needs at least 2 data parties");
  }
  if (!request.leader_party().empty()) {
    return absl::InvalidArgumentError(
        "a vertical job runs with a data-less leader (leader_party is for horizontal jobs)");
  }
  bool has_id = false;
  for (const auto& a : request.spec().attributes()) {
    has_id = has_id || a.role() == fedanon::v1::ROLE_ID;
    const bool shared = a.role() == fedanon::v1::ROLE_ID || a.role() == fedanon::v1::ROLE_CLASS;
    if (shared) continue;
    if (a.party().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", a.name(), "' needs `party:` (the party that holds it) in a vertical job"));
    }
    if (!unique.count(a.party())) {
      return absl::InvalidArgumentError(absl::StrCat("attribute '", a.name(), "' belongs to '",
                                                     a.party(), "', which is not in the job"));
    }
  }
  if (!has_id) {
    return absl::InvalidArgumentError(
        "a vertical job needs an attribute with role id (the column the parties match on)");
  }
  return engine::CheckVerticalScoreComputable(request.spec());
}

// A horizontal job: two parties or more, three when the leader holds data (mohammed2010 §5.5).
absl::Status CheckHorizontal(const fedanon::v1::SubmitJobRequest& request,
                             const PartyNames& unique) {
  if (request.leader_party().empty()) {
    if (request.parties().size() < 2) {
      return absl::InvalidArgumentError("a horizontal job needs at least 2 data parties");
    }
    return absl::OkStatus();
  }
  if (!unique.count(request.leader_party())) {
    return absl::InvalidArgumentError(absl::StrCat("leader_party '", request.leader_party(),
                                                   "' is not one of the job's parties"));
  }
  if (request.parties().size() < 3) {
    return absl::InvalidArgumentError(
        "with a data-holding leader a horizontal job needs at least 3 data parties: with two, "
        "the leader could subtract its own counts from the secure sum and learn the other "
        "party's (mohammed2010 §5.5); use a data-less leader for two parties");
  }
  return absl::OkStatus();
}

// The recipient: the leader (empty) or a party of the job; a data party of a vertical job only
// when the spec opts in.
absl::Status CheckRecipient(const fedanon::v1::SubmitJobRequest& request, const PartyNames& unique,
                            bool vertical) {
  if (request.recipient().empty()) return absl::OkStatus();
  if (!unique.count(request.recipient())) {
    return absl::InvalidArgumentError(
        absl::StrCat("recipient '", request.recipient(), "' is not one of the job's parties"));
  }
  if (vertical && !request.spec().release().allow_data_holding_recipient()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recipient '", request.recipient(),
        "' holds data of this vertical job and could link the released rows to its own "
        "identified records; name the leader as recipient, or opt in with release: "
        "{allow_data_holding_recipient: true} in the spec"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckJobRequest(const fedanon::v1::SubmitJobRequest& request) {
  RETURN_IF_ERROR(spec::ValidateJobSpec(request.spec()));
  RETURN_IF_ERROR(spec::CheckFederatedRecoding(request.spec()));
  const fedanon::v1::Partitioning partitioning = request.spec().partitioning();
  if (partitioning != fedanon::v1::PARTITIONING_HORIZONTAL &&
      partitioning != fedanon::v1::PARTITIONING_VERTICAL) {
    return absl::InvalidArgumentError(
        "the job spec does not say `partitioning: horizontal` or `partitioning: vertical`: a "
        "spec without it is for one table (fedanon anonymize), not for a federation");
  }
  if (request.round_timeout_seconds() > kMaxRoundTimeoutSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("round_timeout_seconds ", request.round_timeout_seconds(),
                     " is over the limit of ", kMaxRoundTimeoutSeconds, " (one day)"));
  }
  if (request.authorization().body().empty()) {
    return absl::InvalidArgumentError(
        "the job carries no admin authorization (fedanonctl submit signs the job with the "
        "admin's key; parties run only jobs an admin signed)");
  }
  const auto& parties = request.parties();
  if (parties.empty()) return absl::InvalidArgumentError("the job names no data parties");
  const PartyNames unique(parties.begin(), parties.end());
  if (unique.size() != static_cast<size_t>(parties.size())) {
    return absl::InvalidArgumentError("a party is listed twice");
  }
  for (const auto& p : parties) RETURN_IF_ERROR(crypto::ValidateParticipantName(p));
  const bool vertical = partitioning == fedanon::v1::PARTITIONING_VERTICAL;
  RETURN_IF_ERROR(vertical ? CheckVertical(request, unique) : CheckHorizontal(request, unique));
  return CheckRecipient(request, unique, vertical);
}

}  // namespace fedanon::leader
