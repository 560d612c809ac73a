#include "party/job_context.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

size_t JobContext::RingPosition() const {
  return static_cast<size_t>(std::find(ring.begin(), ring.end(), self()) - ring.begin());
}

bool JobContext::InRing(const std::string& name) const {
  return std::find(ring.begin(), ring.end(), name) != ring.end();
}

absl::Status JobContext::CheckReleasedHeader(
    const google::protobuf::RepeatedPtrField<std::string>& header, const std::string& what) const {
  std::vector<std::string> expected;
  for (const auto& a : spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_ID) expected.push_back(a.name());
  }
  if (std::vector<std::string>(header.begin(), header.end()) != expected) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": the header the leader sends is not the released attributes of the signed job (",
        absl::StrJoin(expected, ","), ")"));
  }
  return absl::OkStatus();
}

void JobContext::Observe(const std::string& sender, const std::string& purpose,
                         const std::string& plaintext) const {
  options_->Observer().Opened(sender, purpose, plaintext);
}

absl::StatusOr<fedanon::v1::SealedPayload> JobContext::SealFor(const std::string& receiver,
                                                               uint64_t round,
                                                               const std::string& purpose,
                                                               std::string_view bytes) const {
  auto it = seal_keys.find(receiver);
  if (it == seal_keys.end()) {
    return absl::InvalidArgumentError(absl::StrCat("'", receiver, "' is not a participant"));
  }
  const crypto::SealContext context{job_id, run_id, round, self(), receiver, purpose};
  ASSIGN_OR_RETURN(std::string sealed,
                   crypto::SealFrom(*own_seal->keys, *it->second, context, bytes));
  fedanon::v1::SealedPayload out;
  out.set_sender(self());
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_ciphertext(std::move(sealed));
  return out;
}

absl::StatusOr<std::string> JobContext::OpenSealed(const fedanon::v1::SealedPayload& payload,
                                                   uint64_t round, const std::string& purpose,
                                                   bool observe) const {
  // Only data parties seal payloads for each other; the leader relays them.
  if (std::find(ring.begin(), ring.end(), payload.sender()) == ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat("a sealed payload names '", payload.sender(),
                                                    "', not a data party, as sender"));
  }
  const crypto::SealContext context{job_id, run_id, round, payload.sender(), self(), purpose};
  ASSIGN_OR_RETURN(std::string plain,
                   crypto::OpenFrom(*own_seal->keys, *seal_keys.at(payload.sender()), context,
                                    payload.ciphertext()));
  if (observe) Observe(payload.sender(), purpose, plain);
  return plain;
}

absl::Status JobContext::Audit(uint64_t round, AuditEntry entry) const {
  if (replaying) return absl::OkStatus();  // recorded before the restart
  entry.round = round;
  absl::Status st = audit_->Append(job_id, entry);
  if (!st.ok()) {
    spdlog::error("job={} round={} cannot record a {} message in the audit file: {}", job_id, round,
                  entry.kind, std::string(st.message()));
  }
  return st;
}

}  // namespace fedanon::party
