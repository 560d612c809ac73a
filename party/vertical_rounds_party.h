// The rounds of a vertical job with global recoding at a party (mohammed2011 §5-6): its proposal
// (its best candidate, signed), the winner's instruction (the owner: which records go to which
// child, sealed for the judges first), the judges' sealed verdicts, the instruction published to
// the other parties once accepted, and the commit, whose evidence — the owner's signed proposal
// and the judges' signed verdicts — every party checks itself, whatever the leader says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/vertical_party.h"

namespace fedanon::party {

class VerticalRoundsParty {
 public:
  VerticalRoundsParty(JobContext& ctx, PayloadTransfer& transfer, VerticalParty& replica)
      : ctx_(ctx), transfer_(transfer), replica_(replica) {}

  absl::Status Propose(uint64_t round, fedanon::v1::VerticalStepResult* out) const;
  absl::Status Winner(const fedanon::v1::VerticalWinner& winner, uint64_t round,
                      fedanon::v1::VerticalStepResult* out);
  absl::Status Deliver(const fedanon::v1::VerticalDeliver& deliver, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  absl::Status Publish(const fedanon::v1::VerticalPublish& publish, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  absl::Status Commit(const fedanon::v1::VerticalCommit& commit, uint64_t round,
                      fedanon::v1::VerticalStepResult* out);

 private:
  // Signed statements relayed by the leader (party/vertical_statement.h): OK only if `signed_`
  // is the proposal of a data party of the job with a valid signature for this round;
  // PermissionDenied naming the party and the reason otherwise.
  absl::Status CheckSignedProposal(const fedanon::v1::SignedProposal& signed_,
                                   uint64_t round) const;
  // The commit's evidence: the owner's signed proposal of the candidate and the judges' signed
  // verdicts that make it accepted (or rejected).
  absl::Status CheckCommitEvidence(const fedanon::v1::VerticalCommit& commit, uint64_t round) const;

  JobContext& ctx_;
  PayloadTransfer& transfer_;
  VerticalParty& replica_;
  // The owner's instruction of the round it won, kept until the judges accepted it (then sealed
  // for the other parties) or the round ends.
  struct PendingInstruction {
    uint64_t round = 0;
    fedanon::v1::VerticalCandidate candidate;
    std::string bytes;  // a serialized VerticalInstruction
  };
  std::optional<PendingInstruction> pending_;
  // The last candidate of its own whose judges' sealed acceptances this party checked (publish):
  // it commits its own candidate only after that, whatever the leader says.
  std::optional<std::pair<uint64_t, fedanon::v1::VerticalCandidate>> published_;
};

}  // namespace fedanon::party
