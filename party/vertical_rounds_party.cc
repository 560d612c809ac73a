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

std::string KeySharePurpose(uint64_t decisions) { return absl::StrCat("winner-key/", decisions); }

std::string ComparePurpose(uint64_t decisions, int step) {
  return absl::StrCat("winner-compare/", decisions, "/", step);
}

}  // namespace

VerticalProposalView VerticalRoundsParty::OwnView() const {
  VerticalProposalView view = replica_.Propose();
  ctx_.options().Deviation().VerticalProposal(replica_, &view);
  return view;
}

absl::Status VerticalRoundsParty::Propose(uint64_t round,
                                          fedanon::v1::VerticalStepResult* out) const {
  const VerticalProposalView view = OwnView();
  const auto& choice = view.choice;
  auto* proposal = out->mutable_proposal();
  // Participation only: the candidate and its score stay here; the key goes into the secure
  // comparison, whole at a computing party, in shares from the others.
  proposal->set_participate(choice.has_value());
  proposal->set_reason(view.reason);
  proposal->set_misbehaving(ctx_.options().deviation != nullptr);
  ASSIGN_OR_RETURN(*proposal->mutable_signature(),
                   crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                                         ProposalStatement(ctx_.job_id, ctx_.run_id, round,
                                                           replica_.decisions(), *proposal)));
  ASSIGN_OR_RETURN(std::vector<uint64_t> own_key, WinnerKey(choice));
  proposed_ = OwnProposal{round, replica_.decisions(), std::move(own_key)};
  if (choice && ctx_.RingPosition() >= 2) {
    std::vector<uint64_t> key = proposed_->key;
    ctx_.options().Deviation().WinnerKey(&key);
    ASSIGN_OR_RETURN(auto shares, SplitWinnerKey(key));
    const std::string purpose = KeySharePurpose(replica_.decisions());
    ASSIGN_OR_RETURN(*proposal->add_key_shares(),
                     ctx_.SealFor(ctx_.ring[0], round, purpose, EncodeWinnerShare(shares.first)));
    ASSIGN_OR_RETURN(*proposal->add_key_shares(),
                     ctx_.SealFor(ctx_.ring[1], round, purpose, EncodeWinnerShare(shares.second)));
  }
  return absl::OkStatus();
}

absl::Status VerticalRoundsParty::CheckRoundProposals(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SignedProposal>& proposals,
    uint64_t round, const char* what) const {
  if (static_cast<size_t>(proposals.size()) != ctx_.ring.size()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "forged vertical ", what, ": the leader did not relay every party's signed proposal"));
  }
  for (size_t i = 0; i < ctx_.ring.size(); ++i) {
    const auto& p = proposals[static_cast<int>(i)];
    if (p.party() != ctx_.ring[i]) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical ", what, ": proposal ", i,
                                                      " is not from '", ctx_.ring[i], "'"));
    }
    if (p.proposal().has_candidate()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "forged vertical ", what, ": the proposal of '", p.party(), "' names a candidate"));
    }
    RETURN_IF_ERROR(CheckSignedProposal(p, round));
  }
  return absl::OkStatus();
}

absl::Status VerticalRoundsParty::CheckWinnerChoices(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SignedWinnerChoice>& choices,
    const std::string& winner, uint64_t round, const char* what) const {
  std::set<std::string> heard;
  for (const auto& c : choices) {
    if (c.judge() != ctx_.ring[0] && c.judge() != ctx_.ring[1]) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical ", what, ": '", c.judge(),
                                                      "' does not compute the winner"));
    }
    if (!heard.insert(c.judge()).second) {
      return absl::PermissionDeniedError(
          absl::StrCat("forged vertical ", what, ": two choices of '", c.judge(), "'"));
    }
    if (c.winner() != winner) {
      return absl::PermissionDeniedError(
          absl::StrCat("forged vertical ", what, ": '", c.judge(), "' chose '", c.winner(),
                       "' as the round's winner, not '", winner, "'"));
    }
    auto key = ctx_.statement_keys.find(c.judge());
    const absl::Status st =
        key == ctx_.statement_keys.end()
            ? absl::NotFoundError("no statement key")
            : crypto::VerifyStatement(*key->second,
                                      WinnerChoiceStatement(ctx_.job_id, ctx_.run_id, round,
                                                            replica_.decisions(), c.winner()),
                                      c.signature());
    if (!st.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "forged vertical ", what, ": the choice of '", c.judge(),
          "' as relayed by the leader does not carry its signature (", st.message(), ")"));
    }
  }
  if (heard.size() != 2) {
    return absl::PermissionDeniedError(absl::StrCat(
        "forged vertical ", what, ": the secure comparison's choice of both computing parties ('",
        ctx_.ring[0], "', '", ctx_.ring[1], "') is needed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> VerticalRoundsParty::CollectShares(
    const fedanon::v1::VerticalCompare& compare, uint64_t round) const {
  const size_t n = ctx_.ring.size();
  const size_t self = ctx_.RingPosition();
  RETURN_IF_ERROR(CheckRoundProposals(compare.proposals(), round, "comparison"));
  std::vector<uint64_t> shares(n * kWinnerKeyWords, 0);
  // Its own key whole (the other computing party holds the zero share of it, and this one the
  // zero share of the other's).
  const VerticalProposalView view = OwnView();
  if (view.choice.has_value() !=
      compare.proposals()[static_cast<int>(self)].proposal().participate()) {
    return absl::FailedPreconditionError(
        "the winner's secure comparison: this party's proposal of the round is not the one "
        "relayed");
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> own, WinnerKey(view.choice));
  ctx_.options().Deviation().WinnerKey(&own);
  std::copy(own.begin(), own.end(),
            shares.begin() + static_cast<ptrdiff_t>(self * kWinnerKeyWords));
  // One share from every other participating party, sealed by it for this party.
  std::set<std::string> expected;
  for (size_t i = 2; i < n; ++i) {
    if (compare.proposals()[static_cast<int>(i)].proposal().participate()) {
      expected.insert(ctx_.ring[i]);
    }
  }
  const std::string purpose = KeySharePurpose(replica_.decisions());
  for (const auto& sealed : compare.key_shares()) {
    if (!expected.count(sealed.sender()) || sealed.receiver() != ctx_.self()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "the winner's secure comparison: a key share from '", sealed.sender(), "' for '",
          sealed.receiver(), "', which is not a participating party's share for this party"));
    }
    absl::StatusOr<std::string> bytes = ctx_.OpenSealed(sealed, round, purpose);
    if (!bytes.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("the winner's secure comparison: the key share of '", sealed.sender(),
                       "' does not open for this round: ", bytes.status().message()));
    }
    ASSIGN_OR_RETURN(const std::vector<uint64_t> share, DecodeWinnerShare(*bytes));
    const size_t i = static_cast<size_t>(
        std::find(ctx_.ring.begin(), ctx_.ring.end(), sealed.sender()) - ctx_.ring.begin());
    std::copy(share.begin(), share.end(),
              shares.begin() + static_cast<ptrdiff_t>(i * kWinnerKeyWords));
    expected.erase(sealed.sender());
  }
  if (!expected.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("the winner's secure comparison: no key share from '", *expected.begin(),
                     "', which participates"));
  }
  return shares;
}

absl::Status VerticalRoundsParty::Compare(const fedanon::v1::VerticalCompare& compare,
                                          uint64_t round, fedanon::v1::VerticalStepResult* out) {
  const size_t self = ctx_.RingPosition();
  if (self > 1) {
    return absl::PermissionDeniedError(
        "only the ring's first two parties compute the round's winner");
  }
  const bool garbler = self == 0;
  const std::string& other = ctx_.ring[garbler ? 1 : 0];
  const int step = static_cast<int>(compare.step());
  const uint64_t decisions = replica_.decisions();
  if (step < 1 || step > crypto::kComparisonSteps || (step % 2 == 0) != garbler) {
    return absl::InvalidArgumentError(
        absl::StrCat("the winner's secure comparison: step ", step, " is not one of this party's"));
  }
  // A comparison starts at the role's first step: 1 or 2, or 3 or 4 from the base OTs this
  // party kept from the run's first comparison (the leader relays steps 1 and 2 only while a
  // computing party has not said it keeps them; either way is safe for this party).
  const crypto::ComparisonRole role =
      garbler ? crypto::ComparisonRole::kGarbler : crypto::ComparisonRole::kEvaluator;
  const bool running =
      comparison_ && comparison_->round == round && comparison_->decisions == decisions;
  const bool from_kept_base =
      !running && winner_base_ && step == crypto::FirstComparisonStep(role, true);
  const bool starts = step == crypto::FirstComparisonStep(role, false) || from_kept_base;
  // The other computing party's message, opened before any state changes.
  std::string message;
  const bool chunked_input = !compare.input_ref().stream().empty();
  if (step > 1 && !(from_kept_base && !garbler)) {
    ASSIGN_OR_RETURN(message, transfer_.OpenPayloadFrom(
                                  other, compare.input(), compare.input_ref(), round,
                                  ComparePurpose(decisions, step - 1),
                                  absl::StrCat("the winner's secure comparison: step ", step),
                                  "this step, decision and round"));
  } else if (compare.has_input() || chunked_input) {
    return absl::InvalidArgumentError(
        "the winner's secure comparison: its first step takes no input");
  }
  if (starts) {
    if (running) {
      return absl::FailedPreconditionError(
          absl::StrCat("the winner's secure comparison of round ", round, " has started already"));
    }
    ASSIGN_OR_RETURN(std::vector<uint64_t> shares, CollectShares(compare, round));
    ASSIGN_OR_RETURN(const std::string seed,
                     crypto::KeptOrNewComparisonSeed(std::exchange(restored_seed_, "")));
    ASSIGN_OR_RETURN(auto c,
                     VerticalWinnerComparison::Create(
                         garbler, WinnerComparisonInstance(round, decisions), ctx_.ring.size(),
                         std::move(shares), seed, from_kept_base ? &*winner_base_ : nullptr));
    // Durable with this answer: a restart runs the answered steps again from it.
    ctx_.journal_extra = seed;
    comparison_ = RunningComparison{round, decisions, std::move(c)};
  } else if (!compare.proposals().empty() || !compare.key_shares().empty()) {
    return absl::InvalidArgumentError(
        "the winner's secure comparison: proposals and shares come with the first step only");
  } else if (!comparison_ || comparison_->round != round || comparison_->decisions != decisions) {
    return absl::FailedPreconditionError(
        absl::StrCat("the winner's secure comparison: step ", step, " of round ", round,
                     " comes before this party's first step of it"));
  }
  ASSIGN_OR_RETURN(const std::string next, comparison_->comparison->Step(step, message));
  // The base OTs of a comparison that ran them (the first of the run, or one a leader of 4.0
  // asked for) start the later ones.
  if (comparison_->comparison->base()) winner_base_ = comparison_->comparison->base();
  auto* compared = out->mutable_compared();
  if (step < crypto::kComparisonSteps) {
    RETURN_IF_ERROR(transfer_.SealMessage(other, round, ComparePurpose(decisions, step), next,
                                          compared->mutable_sealed(),
                                          compared->mutable_sealed_ref()));
  }
  std::vector<std::string> to;
  if (step < crypto::kComparisonSteps) to.push_back(other);
  if (const std::optional<uint64_t> w = comparison_->comparison->winner()) {
    // The largest key is a participant's (its top bit is set): a winner that did not participate
    // means a key was wrong somewhere.
    if (*w >= ctx_.ring.size()) {
      return absl::InternalError(absl::StrCat("the winner's secure comparison named party ", *w));
    }
    auto* choice = compared->mutable_choice();
    choice->set_judge(ctx_.self());
    choice->set_winner(ctx_.ring[*w]);
    ASSIGN_OR_RETURN(*choice->mutable_signature(),
                     crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                                           WinnerChoiceStatement(ctx_.job_id, ctx_.run_id, round,
                                                                 decisions, choice->winner())));
    comparison_.reset();
    to.push_back(ctx_.leader);
    // The next comparison can start at step 3 or 4 (the leader relays steps 1 and 2 again only
    // when the other computing party does not say so too).
    compared->set_base_kept(winner_base_.has_value());
  }
  return ctx_.Audit(round, {.kind = kAuditWinnerComparison,
                            .form = compared->has_choice() ? "sealed+plaintext" : kAuditSealed,
                            .to = to,
                            .numbers = {{"step", static_cast<uint64_t>(step)}},
                            .texts = {{"winner", compared->choice().winner()}}});
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
  RETURN_IF_ERROR(CheckWinnerChoices(commit.choices(), winner.party(), round, "commit"));
  if (!winner.proposal().participate() || !winner.proposal().has_candidate() ||
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
  // This party is the winner only on both computing parties' signed choice of it, over every
  // party's signed proposal of the round: the leader can neither pick another winner nor turn a
  // party's participation into a Not-participate.
  RETURN_IF_ERROR(CheckRoundProposals(winner.proposals(), round, "winner"));
  RETURN_IF_ERROR(CheckWinnerChoices(winner.choices(), ctx_.self(), round, "winner"));
  const VerticalProposalView view = OwnView();
  if (!view.choice ||
      !winner.proposals()[static_cast<int>(ctx_.RingPosition())].proposal().participate()) {
    return absl::FailedPreconditionError(
        "forged vertical winner: this party did not participate in the round");
  }
  // Its candidate and score, signed: what the leader and, with the commit, every party learn of
  // the round's proposals.
  fedanon::v1::VerticalProposal won;
  won.set_participate(true);
  won.set_reason(view.reason);
  won.set_misbehaving(ctx_.options().deviation != nullptr);
  auto* c = won.mutable_candidate();
  c->set_attribute(static_cast<uint32_t>(view.choice->attr));
  c->set_node(view.choice->node);
  c->set_candidate(view.choice->c);
  c->set_score(view.choice->score);
  c->set_order_key(view.choice->order_key);
  ASSIGN_OR_RETURN(*won.mutable_signature(),
                   crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                                         ProposalStatement(ctx_.job_id, ctx_.run_id, round,
                                                           replica_.decisions(), won)));
  const fedanon::v1::VerticalCandidate candidate = won.candidate();
  *out->mutable_instructions()->mutable_won() = std::move(won);
  ASSIGN_OR_RETURN(std::string instruction, replica_.MakeInstruction(candidate));
  // Before the verdict the children go to the judges only (the other holders of sensitive
  // values); everyone else gets them from VerticalPublish once every judge accepted.
  std::vector<std::string> receivers;
  for (const auto& party : replica_.judges()) {
    if (party == ctx_.self()) continue;
    RETURN_IF_ERROR(
        transfer_.SealInstruction(party, round, instruction, out->mutable_instructions()));
    receivers.push_back(party);
  }
  pending_ = PendingInstruction{round, candidate, std::move(instruction)};
  // Its candidate and score in plaintext to the leader, the children sealed for the judges.
  receivers.push_back(ctx_.leader);
  return ctx_.Audit(
      round,
      {.kind = kAuditInstruction,
       .form = "sealed+plaintext",
       .to = receivers,
       .numbers = CandidateNumbers(candidate, {{"records", InstructionRecords(pending_->bytes)}}),
       .texts = {{"stage", "to the judges; the winner's candidate to the leader"},
                 {"score", absl::StrCat(candidate.score())}}});
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
  // The winner must rank above this party's own proposal of the round: the secure comparison
  // shows nobody the losers' keys, so each participant checks that it did not lose to a worse
  // candidate (a party that fed the comparison another key than its candidate's, or a computing
  // party that garbled another function).
  if (proposed_ && proposed_->round == round && proposed_->decisions == replica_.decisions() &&
      !replica_.owns(static_cast<int>(commit.candidate().attribute()))) {
    const auto& c = commit.candidate();
    ASSIGN_OR_RETURN(
        const std::vector<uint64_t> winner_key,
        WinnerKey(engine::TopDownSpecializer::Choice{static_cast<int>(c.attribute()), c.node(),
                                                     c.candidate(), c.score(), c.order_key()}));
    if (std::lexicographical_compare(winner_key.rbegin(), winner_key.rend(),
                                     proposed_->key.rbegin(), proposed_->key.rend())) {
      return absl::PermissionDeniedError(absl::StrCat(
          "refused the round's winner: this party's own proposal of round ", round,
          " ranks above the committed candidate (the secure comparison's inputs or garbling "
          "deviated)"));
    }
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
