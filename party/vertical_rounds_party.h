// The rounds of a vertical job with global recoding at a party (mohammed2011 §5-6): its proposal
// (participation, signed; its best candidate's tie-break key in shares for the computing
// parties), the secure choice of the winner (the ring's first two parties,
// party/vertical_winner_comparison.h), the winner's instruction (the owner: which records go to
// which child, sealed for the judges first), the judges' sealed verdicts, the instruction published
// to the other parties once accepted, and the commit, whose evidence — the owner's signed proposal
// and the judges' signed verdicts — every party checks itself, whatever the leader says.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/vertical_party.h"
#include "party/vertical_winner_comparison.h"

namespace fedanon::party {

class VerticalRoundsParty {
 public:
  VerticalRoundsParty(JobContext& ctx, PayloadTransfer& transfer, VerticalParty& replica)
      : ctx_(ctx), transfer_(transfer), replica_(replica) {}

  absl::Status Propose(uint64_t round, fedanon::v1::VerticalStepResult* out) const;
  // A computing party's step of the round's argmax (the ring's first two parties only).
  absl::Status Compare(const fedanon::v1::VerticalCompare& compare, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  // A restart's replay: the seed the comparison's first step drew (from the journal), used
  // instead of a fresh one when that step runs again.
  void RestoreCompareSeed(std::string seed) { restored_seed_ = std::move(seed); }
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
  // Every party's signed proposal of the round, once each in ring order; `what` names the step.
  absl::Status CheckRoundProposals(
      const google::protobuf::RepeatedPtrField<fedanon::v1::SignedProposal>& proposals,
      uint64_t round, const char* what) const;
  // Both computing parties' signed choices of `winner` for this round.
  absl::Status CheckWinnerChoices(
      const google::protobuf::RepeatedPtrField<fedanon::v1::SignedWinnerChoice>& choices,
      const std::string& winner, uint64_t round, const char* what) const;
  // The computing party's first step: its share of every party's key.
  absl::StatusOr<std::vector<uint64_t>> CollectShares(const fedanon::v1::VerticalCompare& compare,
                                                      uint64_t round) const;
  // This party's proposal view (the replica's best candidate, after a deviation of tests).
  VerticalProposalView OwnView() const;

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
  // A computing party's side of the current round's argmax, and which round and decision it is.
  struct RunningComparison {
    uint64_t round = 0;
    uint64_t decisions = 0;
    std::unique_ptr<VerticalWinnerComparison> comparison;
  };
  std::optional<RunningComparison> comparison_;
  std::string restored_seed_;
  // The base OTs of this run's first comparison, which start every later one at step 3 or 4
  // (protocol 4.1): in memory only; a restart's replay of that comparison derives them again.
  std::optional<crypto::ComparisonBase> winner_base_;
  // This party's tie-break key of its last proposal and when it made it: a committed winner must
  // rank above it (else the comparison's inputs or garbling deviated somewhere).
  struct OwnProposal {
    uint64_t round = 0;
    uint64_t decisions = 0;
    std::vector<uint64_t> key;  // all zero for Not-participate
  };
  mutable std::optional<OwnProposal> proposed_;
};

}  // namespace fedanon::party
