#include "party/vertical_job_party.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/wire/federation_wire.h"
#include "party/protocol_util.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

absl::StatusOr<PartyMessage> VerticalJobParty::Handle(const LeaderMessage& request) {
  const auto& step = request.vertical();
  const uint64_t round = request.round();
  // One request, one answer across a lost connection or a restart of the leader or of this party:
  // the leader repeats only the last request it sent here, which gets the reply that left.
  const std::string request_digest = wire::RequestDigest(round, step);
  if (const PartyMessage* same = last_.Same(request_digest)) return *same;
  // Chunked payloads of earlier rounds were relayed: drop them (bounded memory).
  transfer_.DropBefore(round);
  // One request, one answer for the steps that produce payloads (ID lists, instructions, columns),
  // whether they travel whole or in chunks: another request under the same step is refused. The
  // same request again gets the stored reply (the same chunks); with whole payloads the reply,
  // which holds the payload, is not kept, and the same request is answered again.
  const std::string key = ProducingStepKey(step, round);
  std::string digest;
  if (!key.empty()) {
    digest = wire::RequestDigest(round, step);
    if (const auto* answered = transfer_.step_answers().Find(key)) {
      if (answered->fingerprint != digest) {
        return absl::FailedPreconditionError(
            absl::StrCat("one request, one answer: vertical step '", key,
                         "' was already answered for another request"));
      }
      if (ctx_.chunk_bytes > 0) return answered->reply;
    }
  }
  transfer_.StartProducing(key, digest);
  absl::StatusOr<PartyMessage> reply = Route(step, round);
  transfer_.StopProducing();
  if (reply.ok() && !key.empty()) transfer_.RecordStepAnswer(key, digest, *reply);
  if (reply.ok()) {
    last_.Put(request_digest, *reply);
    // Durable (with its journal_extra) before the reply leaves (HandleLocked).
    if (!ctx_.replaying) ctx_.fresh_answer = true;
  }
  return reply;
}

// The proposal this party sends the leader, in its audit file: its participation in plaintext,
// its key's shares sealed for the computing parties (the candidate and score stay here unless it
// wins: VerticalRoundsParty::Winner).
absl::Status VerticalJobParty::AuditProposal(const fedanon::v1::VerticalProposal& proposal,
                                             uint64_t round) const {
  std::vector<std::string> to = {ctx_.leader};
  for (const auto& share : proposal.key_shares()) to.push_back(share.receiver());
  return ctx_.Audit(
      round, {.kind = kAuditProposal,
              .form = proposal.key_shares().empty() ? kAuditPlaintext : "plaintext+sealed",
              .to = to,
              .numbers = {{"participate", proposal.participate() ? 1u : 0u},
                          {"key_shares", static_cast<uint64_t>(proposal.key_shares().size())}},
              .texts = {{"reason", proposal.reason()}}});
}

absl::StatusOr<PartyMessage> VerticalJobParty::Route(const fedanon::v1::VerticalStep& step,
                                                     uint64_t round) {
  PartyMessage reply;
  auto* out = reply.mutable_vertical();
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kIdEncrypt:
      RETURN_IF_ERROR(ids_.EncryptBatch(step.id_encrypt(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdReencrypt:
      RETURN_IF_ERROR(ids_.ReencryptBatch(step.id_reencrypt(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdDigests:
      RETURN_IF_ERROR(ids_.Digests(step.id_digests(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdCommon:
      RETURN_IF_ERROR(ids_.Common(step.id_common(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdAlign:
      RETURN_IF_ERROR(ids_.Align(step.id_align(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kPropose:
      RETURN_IF_ERROR(rounds_.Propose(round, out));
      RETURN_IF_ERROR(AuditProposal(out->proposal(), round));
      return reply;
    case fedanon::v1::VerticalStep::kCompare:
      RETURN_IF_ERROR(rounds_.Compare(step.compare(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kWinner:
      RETURN_IF_ERROR(rounds_.Winner(step.winner(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kDeliver:
      RETURN_IF_ERROR(rounds_.Deliver(step.deliver(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kPublish:
      RETURN_IF_ERROR(rounds_.Publish(step.publish(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kCommit:
      RETURN_IF_ERROR(rounds_.Commit(step.commit(), round, out));
      if (step.commit().propose_next()) {
        // Protocol 4.1: the next round's proposal rides with the commit (it replaces
        // `committed`), saving the leader's VerticalPropose call of that round.
        const uint64_t next = step.commit().accept() ? round + 1 : round;
        RETURN_IF_ERROR(rounds_.Propose(next, out));
        RETURN_IF_ERROR(AuditProposal(out->proposal(), next));
      }
      return reply;
    case fedanon::v1::VerticalStep::kRelease:
      RETURN_IF_ERROR(release_.Release(step.release(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kAssemble:
      RETURN_IF_ERROR(release_.Assemble(step.assemble(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kReleaseReportPage:
      RETURN_IF_ERROR(release_.ReportPage(step.release_report_page(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalPropose:
      RETURN_IF_ERROR(waves_.Propose(step.local_propose(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalProposalsPut:
      RETURN_IF_ERROR(waves_.ProposalsPut(step.local_proposals_put(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalVerdictsPage:
      RETURN_IF_ERROR(waves_.VerdictsPage(step.local_verdicts_page(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalVerdictsPut:
      RETURN_IF_ERROR(waves_.VerdictsPut(step.local_verdicts_put(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalWinners:
      RETURN_IF_ERROR(waves_.Winners(step.local_winners(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalCommit:
      RETURN_IF_ERROR(waves_.Commit(step.local_commit(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalJudge:
      RETURN_IF_ERROR(waves_.Judge(step.local_judge(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalPublish:
      RETURN_IF_ERROR(waves_.Publish(step.local_publish(), round, out));
      return reply;
    default:
      return absl::InvalidArgumentError("unknown vertical step");
  }
}

}  // namespace fedanon::party
