#include "party/vertical_rounds_party.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"
#include "crypto/shuffle.h"
#include "crypto/signature.h"
#include "party/protocol_util.h"
#include "party/vertical_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

namespace {

bool SameCandidate(const fedanon::v1::VerticalCandidate& a,
                   const fedanon::v1::VerticalCandidate& b) {
  return a.attribute() == b.attribute() && a.node() == b.node() && a.candidate() == b.candidate();
}

// What the leader relays of a signed proposal is that proposal's candidate, every field of it:
// the score and the order key (bit for bit) too, since the owner's instruction, which the other
// parties open, carries the candidate it was given.
bool TheSignedCandidate(const fedanon::v1::VerticalCandidate& relayed,
                        const fedanon::v1::VerticalCandidate& signed_candidate) {
  return SameCandidate(relayed, signed_candidate) &&
         absl::bit_cast<uint64_t>(relayed.score()) ==
             absl::bit_cast<uint64_t>(signed_candidate.score()) &&
         absl::bit_cast<uint64_t>(relayed.order_key()) ==
             absl::bit_cast<uint64_t>(signed_candidate.order_key());
}

engine::TopDownSpecializer::Choice AsChoice(const fedanon::v1::VerticalCandidate& c) {
  return {static_cast<int>(c.attribute()), c.node(), c.candidate(), c.score(), c.order_key()};
}

}  // namespace

absl::Status VerticalRoundsParty::Propose(uint64_t round,
                                          fedanon::v1::VerticalStepResult* out) const {
  VerticalProposalView view = replica_.Propose();
  ctx_.options().Deviation().VerticalProposal(replica_, &view);
  const auto& choice = view.choice;
  auto* proposal = out->mutable_proposal();
  proposal->set_participate(choice.has_value());
  proposal->set_reason(view.reason);
  proposal->set_misbehaving(ctx_.options().deviation != nullptr);
  if (choice) {
    auto* c = proposal->mutable_candidate();
    c->set_attribute(static_cast<uint32_t>(choice->attr));
    c->set_node(choice->node);
    c->set_candidate(choice->c);
    c->set_score(choice->score);
    c->set_order_key(choice->order_key);
  }
  ASSIGN_OR_RETURN(*proposal->mutable_signature(),
                   crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                                         ProposalStatement(ctx_.job_id, ctx_.run_id, round,
                                                           replica_.decisions(), *proposal)));
  return absl::OkStatus();
}

absl::Status VerticalRoundsParty::CheckSignedProposal(const fedanon::v1::SignedProposal& signed_,
                                                      uint64_t round) const {
  auto key = ctx_.statement_keys.find(signed_.party());
  if (key == ctx_.statement_keys.end() ||
      std::find(ctx_.ring.begin(), ctx_.ring.end(), signed_.party()) == ctx_.ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat("forged vertical proposal: '", signed_.party(),
                                                    "' is not a data party of the job"));
  }
  const absl::Status st = crypto::VerifyStatement(
      *key->second,
      ProposalStatement(ctx_.job_id, ctx_.run_id, round, replica_.decisions(), signed_.proposal()),
      signed_.proposal().signature());
  if (!st.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "forged vertical proposal: the proposal of '", signed_.party(),
        "' as relayed by the leader does not carry its signature (", st.message(), ")"));
  }
  return absl::OkStatus();
}

absl::Status VerticalRoundsParty::CheckCommitEvidence(const fedanon::v1::VerticalCommit& commit,
                                                      uint64_t round) const {
  const fedanon::v1::SignedProposal& winner = commit.winner();
  RETURN_IF_ERROR(CheckSignedProposal(winner, round));
  if (!winner.proposal().participate() ||
      !TheSignedCandidate(commit.candidate(), winner.proposal().candidate())) {
    return absl::PermissionDeniedError(
        absl::StrCat("forged vertical commit: '", winner.party(),
                     "' did not propose the candidate the leader commits"));
  }
  // The judges other than the owner: each must have signed its verdict on this candidate.
  std::set<std::string> judges;
  for (const auto& j : replica_.judges()) {
    if (j != winner.party()) judges.insert(j);
  }
  std::set<std::string> accepted;
  bool vetoed = false;
  for (const auto& v : commit.verdicts()) {
    if (!judges.count(v.judge())) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical verdict: '", v.judge(),
                                                      "' is not a judge of this candidate"));
    }
    if (!SameCandidate(v.candidate(), commit.candidate())) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical verdict: the verdict of '",
                                                      v.judge(), "' is about another candidate"));
    }
    const absl::Status st =
        crypto::VerifyStatement(*ctx_.statement_keys.at(v.judge()),
                                VerdictStatement(ctx_.job_id, ctx_.run_id, round,
                                                 replica_.decisions(), v.candidate(), v.accept()),
                                v.signature());
    if (!st.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "forged vertical verdict: the verdict of '", v.judge(),
          "' as relayed by the leader does not carry its signature (", st.message(), ")"));
    }
    if (v.accept()) {
      accepted.insert(v.judge());
    } else {
      vetoed = true;
    }
  }
  if (commit.accept()) {
    if (vetoed) {
      return absl::PermissionDeniedError(
          "forged vertical commit: the leader commits a candidate a judge vetoed");
    }
    for (const auto& j : judges) {
      if (!accepted.count(j)) {
        return absl::PermissionDeniedError(
            absl::StrCat("forged vertical commit: no signed acceptance from judge '", j, "'"));
      }
    }
  } else if (!vetoed) {
    return absl::PermissionDeniedError(
        "forged vertical commit: the leader drops a candidate no judge vetoed");
  }
  return absl::OkStatus();
}

absl::Status VerticalRoundsParty::Winner(const fedanon::v1::VerticalWinner& winner, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) {
  // The winner must be this party's own signed proposal and the best of every party's signed
  // proposal of the round: the leader can neither invent a proposal, alter a score, nor turn a
  // party's participation into a Not-participate.
  std::set<std::string> heard;
  std::optional<engine::TopDownSpecializer::Choice> best;
  std::string best_party;
  fedanon::v1::VerticalCandidate best_candidate;
  for (const auto& p : winner.proposals()) {
    RETURN_IF_ERROR(CheckSignedProposal(p, round));
    if (!heard.insert(p.party()).second) {
      return absl::PermissionDeniedError(
          absl::StrCat("forged vertical winner: two proposals of '", p.party(), "'"));
    }
    if (!p.proposal().participate()) continue;
    const auto c = AsChoice(p.proposal().candidate());
    if (!best || engine::TopDownSpecializer::Beats(c, *best)) {
      best = c;
      best_party = p.party();
      best_candidate = p.proposal().candidate();
    }
  }
  if (heard.size() != ctx_.ring.size()) {
    return absl::PermissionDeniedError(
        "forged vertical winner: the leader did not relay every party's signed proposal");
  }
  if (best_party != ctx_.self() || !TheSignedCandidate(winner.candidate(), best_candidate)) {
    return absl::PermissionDeniedError(
        "forged vertical winner: the candidate is not the best signed proposal of the round");
  }
  ASSIGN_OR_RETURN(std::string instruction, replica_.MakeInstruction(winner.candidate()));
  // Before the verdict the children go to the judges only (the other holders of sensitive
  // values); everyone else gets them from VerticalPublish once every judge accepted.
  std::vector<std::string> receivers;
  for (const auto& party : replica_.judges()) {
    if (party == ctx_.self()) continue;
    RETURN_IF_ERROR(
        transfer_.SealInstruction(party, round, instruction, out->mutable_instructions()));
    receivers.push_back(party);
  }
  pending_ = PendingInstruction{round, winner.candidate(), std::move(instruction)};
  return ctx_.Audit(
      round, {.kind = kAuditInstruction,
              .form = kAuditSealed,
              .to = receivers,
              .numbers = CandidateNumbers(winner.candidate(),
                                          {{"records", InstructionRecords(pending_->bytes)}}),
              .texts = {{"stage", "to the judges"}}});
}

absl::Status VerticalRoundsParty::Deliver(const fedanon::v1::VerticalDeliver& deliver,
                                          uint64_t round, fedanon::v1::VerticalStepResult* out) {
  const auto& judges = replica_.judges();
  if (std::find(judges.begin(), judges.end(), ctx_.self()) == judges.end()) {
    return absl::PermissionDeniedError(
        "this party holds no sensitive values: it judges no candidate and receives a winner's "
        "instruction only with the commit");
  }
  std::string owner;
  ASSIGN_OR_RETURN(std::string bytes,
                   transfer_.OpenPayload(deliver.instruction(), deliver.instruction_ref(), round,
                                         "instruction", &owner));
  ASSIGN_OR_RETURN(bool accept, replica_.Deliver(bytes));
  if (!accept) {
    spdlog::info("job={} round={} vetoed the winner: it would break a confidence bound",
                 ctx_.job_id, round);
  }
  fedanon::v1::VerticalInstruction instruction;
  if (!instruction.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the instruction does not parse");
  }
  // The verdict, sealed for the owner too: the owner releases the children to the other parties
  // only on every judge's own acceptance, not on the leader's word.
  fedanon::v1::VerticalVerdictBody body;
  *body.mutable_candidate() = instruction.candidate();
  body.set_accept(accept);
  out->mutable_verdict()->set_accept(accept);
  // Signed, so every party can check the leader's commit (or veto) against it.
  ASSIGN_OR_RETURN(
      *out->mutable_verdict()->mutable_signature(),
      crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                            VerdictStatement(ctx_.job_id, ctx_.run_id, round, replica_.decisions(),
                                             instruction.candidate(), accept)));
  ASSIGN_OR_RETURN(*out->mutable_verdict()->mutable_for_owner(),
                   ctx_.SealFor(owner, round, "verdict", body.SerializeAsString()));
  // In plaintext for the leader and sealed for the owner.
  return ctx_.Audit(round,
                    {.kind = kAuditVerdict,
                     .form = "plaintext+sealed",
                     .to = {ctx_.leader, owner},
                     .numbers = CandidateNumbers(instruction.candidate(), {{"accept", accept}})});
}

absl::Status VerticalRoundsParty::Publish(const fedanon::v1::VerticalPublish& publish,
                                          uint64_t round, fedanon::v1::VerticalStepResult* out) {
  if (!pending_ || pending_->round != round ||
      !SameCandidate(pending_->candidate, publish.candidate())) {
    return absl::FailedPreconditionError("publish of a candidate this party did not just instruct");
  }
  // Every other judge's acceptance of this candidate, sealed by that judge for this party.
  std::set<std::string> waiting;
  for (const auto& judge : replica_.judges()) {
    if (judge != ctx_.self()) waiting.insert(judge);
  }
  for (const auto& sealed : publish.verdicts()) {
    if (!waiting.count(sealed.sender())) {
      return absl::PermissionDeniedError(absl::StrCat("a verdict from '", sealed.sender(),
                                                      "', which is not a judge still to be heard"));
    }
    ASSIGN_OR_RETURN(std::string bytes, ctx_.OpenSealed(sealed, round, "verdict"));
    fedanon::v1::VerticalVerdictBody body;
    if (!body.ParseFromString(bytes) || !SameCandidate(body.candidate(), publish.candidate())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the verdict of '", sealed.sender(), "' is not about this candidate"));
    }
    if (!body.accept()) {
      return absl::PermissionDeniedError(
          absl::StrCat("'", sealed.sender(), "' rejected the candidate: nothing to publish"));
    }
    waiting.erase(sealed.sender());
  }
  if (!waiting.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("no acceptance from judge '", *waiting.begin(), "'"));
  }
  const auto& judges = replica_.judges();
  std::string for_others = pending_->bytes;
  ASSIGN_OR_RETURN(
      for_others, ctx_.options().Deviation().InstructionForOthers(replica_, std::move(for_others)));
  std::vector<std::string> receivers;
  for (const auto& party : ctx_.ring) {
    if (party == ctx_.self() || std::find(judges.begin(), judges.end(), party) != judges.end()) {
      continue;
    }
    RETURN_IF_ERROR(
        transfer_.SealInstruction(party, round, for_others, out->mutable_instructions()));
    receivers.push_back(party);
  }
  const uint64_t records = InstructionRecords(pending_->bytes);
  published_ = std::make_pair(round, pending_->candidate);
  pending_.reset();
  return ctx_.Audit(round,
                    {.kind = kAuditInstruction,
                     .form = kAuditSealed,
                     .to = receivers,
                     .numbers = CandidateNumbers(publish.candidate(), {{"records", records}}),
                     .texts = {{"stage", "after every judge accepted"}}});
}

absl::Status VerticalRoundsParty::Commit(const fedanon::v1::VerticalCommit& commit, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) {
  pending_.reset();
  RETURN_IF_ERROR(CheckCommitEvidence(commit, round));
  if (commit.has_instruction() || !commit.instruction_ref().stream().empty()) {
    // A party that did not judge the candidate: its children arrive with the acceptance.
    if (!commit.accept()) {
      return absl::InvalidArgumentError("a rejected candidate comes with no instruction");
    }
    const auto& judges = replica_.judges();
    if (std::find(judges.begin(), judges.end(), ctx_.self()) != judges.end()) {
      return absl::InvalidArgumentError("a judge receives the instruction before its verdict");
    }
    ASSIGN_OR_RETURN(std::string bytes,
                     transfer_.OpenPayload(commit.instruction(), commit.instruction_ref(), round,
                                           "instruction", nullptr));
    fedanon::v1::VerticalInstruction instruction;
    if (!instruction.ParseFromString(bytes) ||
        !SameCandidate(instruction.candidate(), commit.candidate())) {
      return absl::InvalidArgumentError("the commit's instruction is about another candidate");
    }
    ASSIGN_OR_RETURN(const bool accept, replica_.Deliver(bytes));
    if (!accept) return absl::InternalError("a non-judging party vetoed a candidate");
  }
  if (commit.accept() && replica_.owns(static_cast<int>(commit.candidate().attribute()))) {
    // Our own candidate: applied only once every other judge's sealed acceptance was checked.
    const auto& judges = replica_.judges();
    const bool judged = std::any_of(judges.begin(), judges.end(),
                                    [&](const std::string& j) { return j != ctx_.self(); });
    if (judged && (!published_ || published_->first != round ||
                   !SameCandidate(published_->second, commit.candidate()))) {
      return absl::FailedPreconditionError(absl::StrCat(
          engine::kRefusedSpecialization,
          ": the commit of our own candidate comes without every judge's sealed acceptance"));
    }
  }
  published_.reset();
  RETURN_IF_ERROR(replica_.Commit(commit.candidate(), commit.accept()));
  out->set_committed(true);
  return ctx_.Audit(
      round, {.kind = kAuditCommit,
              .form = kAuditPlaintext,
              .to = {ctx_.leader},
              .numbers = CandidateNumbers(commit.candidate(), {{"accept", commit.accept()}})});
}

}  // namespace fedanon::party
