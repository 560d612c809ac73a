#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/engine/local_recoding.h"
#include "common/engine/tds_engine.h"
#include "common/spec/proto_json.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/payload_relay.h"
#include "leader/vertical_session.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

// 2. Rounds until every party sends Not-participate; returns why they stopped and leaves in
//    `result` the rounds (specializations applied) and vetoes.
absl::StatusOr<std::string> VerticalSession::RunRounds(VerticalJobResult* result) {
  if (options_.local_recoding) return RunLocalWaves(result);
  uint32_t round = 1;
  while (true) {
    const auto round_start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(const RoundOutcome outcome, RunRound(round));
    if (options_.observer != nullptr) {
      options_.observer->PhaseDone(Phase::kInstruction, absl::Seconds(Since(round_start)));
    }
    if (outcome == RoundOutcome::kEveryoneDeclined) break;
    if (outcome == RoundOutcome::kVetoed) {
      ++result->vetoes;
      continue;
    }
    ++round;
  }
  result->rounds = round - 1;
  return stop_reason_;
}

// A release report in pages: asks `party` for pages 1.. of its report's steps, checks each is the
// page asked for and that all of them are the declared count and digest, and leaves the whole
// report in `released` (as a report that fit one message).
absl::Status VerticalSession::FetchReportPages(const std::string& party, uint32_t round,
                                               fedanon::v1::VerticalReleased* released) {
  const uint32_t pages = released->report_pages();
  // Exactly the steps the rounds committed (a local-recoding report lists at most the first
  // engine::kMaxReportedLocalSteps of them): a party's count never sizes what the leader fetches.
  const uint64_t declared = pages == 0 ? static_cast<uint64_t>(released->report().steps_size())
                                       : released->report_steps();
  const uint64_t expected =
      options_.local_recoding ? std::min<uint64_t>(committed_steps_, engine::kMaxReportedLocalSteps)
                              : committed_steps_;
  if (declared != expected) {
    return absl::InternalError(absl::StrCat(kReportStepsNotCommitted, ": party '", party,
                                            "' reports ", declared, " steps, the job committed ",
                                            committed_steps_, " and its report lists ", expected));
  }
  if (pages == 0) return absl::OkStatus();  // the whole report fit the reply
  const uint64_t total = released->report_steps();
  fedanon::v1::Report* report = released->mutable_report();
  if (pages < 2 || total > kMaxReportSteps || pages > total || report->steps_size() == 0 ||
      static_cast<uint64_t>(report->steps_size()) > total) {
    return absl::InternalError(absl::StrCat(kReportPagesAbsurd, ": party '", party, "' declares ",
                                            pages, " pages of ", total, " steps, page 0 holding ",
                                            report->steps_size()));
  }
  for (uint32_t p = 1; p < pages; ++p) {
    fedanon::v1::VerticalStep step;
    step.mutable_release_report_page()->set_page(p);
    ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, round, std::move(step)));
    fedanon::v1::ReleaseReportSteps* got = reply.mutable_report_page();
    if (!reply.has_report_page() || got->page() != p || got->pages() != pages ||
        got->steps_size() == 0) {
      return absl::InternalError(absl::StrCat(kReportPageWrong, ": party '", party,
                                              "' answered page ", got->page(), " of ", got->pages(),
                                              " for page ", p, " of ", pages));
    }
    if (static_cast<uint64_t>(report->steps_size()) + static_cast<uint64_t>(got->steps_size()) >
        total) {
      return absl::InternalError(absl::StrCat(kReportPagesMismatch, ": party '", party,
                                              "' sent more than its ", total, " steps"));
    }
    for (auto& s : *got->mutable_steps()) *report->add_steps() = std::move(s);
  }
  fedanon::v1::Report steps;
  *steps.mutable_steps() = report->steps();
  if (static_cast<uint64_t>(report->steps_size()) != total ||
      crypto::Sha256(steps.SerializeAsString()) != released->report_digest()) {
    return absl::InternalError(absl::StrCat(kReportPagesMismatch, ": party '", party, "' sent ",
                                            report->steps_size(), " steps of ", total));
  }
  released->clear_report_pages();
  released->clear_report_steps();
  released->clear_report_digest();
  return absl::OkStatus();
}

// One round: proposals, the winner's instruction relayed to the others, their verdicts, and
// the commit (or veto) at every replica.
absl::StatusOr<VerticalSession::RoundOutcome> VerticalSession::RunRound(uint32_t round) {
  const auto& ring = options_.ring;
  const size_t n = ring.size();
  // A party's proposal came with its answer to the last round's commit (protocol 4.1); the
  // others (the first round, a party of protocol 4.0) are asked for theirs.
  std::vector<VerticalStepResult> proposals = std::exchange(next_proposals_, {});
  proposals.resize(n);
  std::vector<std::string> ask;
  std::vector<size_t> asked_at;
  for (size_t i = 0; i < n; ++i) {
    if (proposals[i].has_proposal()) continue;
    ask.push_back(ring[i]);
    asked_at.push_back(i);
  }
  if (!ask.empty()) {
    ASSIGN_OR_RETURN(auto asked, CallAll(ask, round, [](size_t) {
                       fedanon::v1::VerticalStep step;
                       step.mutable_propose();
                       return step;
                     }));
    for (size_t j = 0; j < asked.size(); ++j) proposals[asked_at[j]] = std::move(asked[j]);
  }
  RETURN_IF_ERROR(LogProposals(round, proposals));
  if (!AnyParticipant(proposals)) return RoundOutcome::kEveryoneDeclined;
  // The parties' signed proposals (participation only) travel with the comparison and the
  // winner; the owner's signed candidate with the commit, with both computing parties' signed
  // choices of it and the judges' signed verdicts (every party checks them).
  RoundWinner w;
  w.proposals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    w.proposals[i].set_party(ring[i]);
    *w.proposals[i].mutable_proposal() = proposals[i].proposal();
    w.proposals[i].mutable_proposal()->clear_key_shares();
  }
  ASSIGN_OR_RETURN(w.owner, CompareForWinner(round, proposals, &w));
  std::set<std::string> judges;
  std::vector<VerticalStepResult> verdicts;
  ASSIGN_OR_RETURN(const bool accept, JudgeWinner(round, &w, &judges, &verdicts));
  // Accepted: the owner, shown every judge's sealed acceptance, seals the children for the
  // remaining parties; they receive them with the commit. Rejected: they never do.
  std::map<std::string, CarriedPayload> with_commit;
  if (accept) {
    ASSIGN_OR_RETURN(with_commit, PublishWinner(round, w, verdicts, judges));
  }
  RETURN_IF_ERROR(CommitRound(round, w, accept, &with_commit));
  const std::string& owner = ring[w.owner];
  const auto& c = w.candidate;
  if (accept) {
    specialized_[{c.attribute(), c.node()}] = round;
    ++committed_steps_;
  } else {
    vetoed_[{c.attribute(), c.node(), c.candidate()}] = round;
  }
  if (!accept) {
    spdlog::info("job={} round={} the winner of '{}' was vetoed by a holder of sensitive values",
                 options_.job_id, round, owner);
    return RoundOutcome::kVetoed;
  }
  auto& won = participation_[owner];
  won.set_rounds_won(won.rounds_won() + 1);
  if (options_.on_step) options_.on_step(round, owner, w.candidate.attribute());
  return RoundOutcome::kApplied;
}

absl::StatusOr<bool> VerticalSession::JudgeWinner(uint32_t round, RoundWinner* w,
                                                  std::set<std::string>* judges,
                                                  std::vector<VerticalStepResult>* verdicts) {
  fedanon::v1::VerticalStep win;
  for (const auto& p : w->proposals) *win.mutable_winner()->add_proposals() = p;
  for (const auto& c : w->choices) *win.mutable_winner()->add_choices() = c;
  // The owner reveals its candidate and seals the children for the judges only (the other
  // holders of sensitive values).
  ASSIGN_OR_RETURN(VerticalStepResult to_judges, Call(options_.ring[w->owner], round, win));
  const fedanon::v1::VerticalProposal& won = to_judges.instructions().won();
  if (!to_judges.has_instructions() || !won.participate() || !won.has_candidate()) {
    return absl::InternalError(
        absl::StrCat("party '", options_.ring[w->owner], "' won the round but sent no candidate"));
  }
  w->candidate = won.candidate();
  *w->proposals[static_cast<size_t>(w->owner)].mutable_proposal() = won;
  RETURN_IF_ERROR(LogWinner(round, options_.ring[w->owner], won));
  RETURN_IF_ERROR(CheckUndecided(*w));
  ASSIGN_OR_RETURN(const auto judged,
                   ByReceiver(to_judges.instructions(), w->owner, round, judges));
  std::vector<fedanon::v1::VerticalStep> delivers(judged.first.size());
  for (size_t i = 0; i < delivers.size(); ++i) {
    auto* deliver = delivers[i].mutable_deliver();
    RETURN_IF_ERROR(relay_.Hand(judged.second[i], round, options_.timeout,
                                deliver->mutable_instruction(),
                                deliver->mutable_instruction_ref()));
  }
  ASSIGN_OR_RETURN(*verdicts,
                   CallAll(judged.first, round, [&](size_t i) { return std::move(delivers[i]); }));
  bool accept = true;
  w->verdicts.resize(verdicts->size());
  for (size_t i = 0; i < verdicts->size(); ++i) {
    const auto& verdict = (*verdicts)[i].verdict();
    w->verdicts[i].set_judge(judged.first[i]);
    *w->verdicts[i].mutable_candidate() = w->candidate;
    w->verdicts[i].set_accept(verdict.accept());
    w->verdicts[i].set_signature(verdict.signature());
    ViewEntry e;
    e.round = round;
    e.kind = kViewVerticalVerdict;
    e.party = judged.first[i];
    e.counts = {verdict.accept() ? 1u : 0u};
    RETURN_IF_ERROR(Log(e));
    accept = accept && verdict.accept();
  }
  return accept;
}

absl::StatusOr<std::map<std::string, CarriedPayload>> VerticalSession::PublishWinner(
    uint32_t round, const RoundWinner& w, const std::vector<VerticalStepResult>& verdicts,
    const std::set<std::string>& judges) {
  fedanon::v1::VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = w.candidate;
  for (const auto& v : verdicts) {
    *publish.mutable_publish()->add_verdicts() = v.verdict().for_owner();
  }
  const std::string& owner = options_.ring[w.owner];
  ASSIGN_OR_RETURN(VerticalStepResult to_others, Call(owner, round, publish));
  std::set<std::string> seen = judges;
  ASSIGN_OR_RETURN(auto others, ByReceiver(to_others.instructions(), w.owner, round, &seen));
  if (seen.size() + 1 != options_.ring.size()) {
    return absl::InternalError(
        absl::StrCat("party '", owner, "' sent instructions for the wrong parties"));
  }
  std::map<std::string, CarriedPayload> with_commit;
  for (size_t i = 0; i < others.first.size(); ++i) {
    with_commit[others.first[i]] = std::move(others.second[i]);
  }
  return with_commit;
}

absl::Status VerticalSession::CommitRound(uint32_t round, const RoundWinner& w, bool accept,
                                          std::map<std::string, CarriedPayload>* with_commit) {
  const auto& ring = options_.ring;
  std::vector<fedanon::v1::VerticalStep> commits(ring.size());
  for (size_t i = 0; i < ring.size(); ++i) {
    auto* commit = commits[i].mutable_commit();
    *commit->mutable_candidate() = w.candidate;
    commit->set_accept(accept);
    *commit->mutable_winner() = w.proposals[w.owner];
    for (const auto& v : w.verdicts) *commit->add_verdicts() = v;
    for (const auto& c : w.choices) *commit->add_choices() = c;
    commit->set_propose_next(true);
    auto it = with_commit->find(ring[i]);
    if (it != with_commit->end()) {
      RETURN_IF_ERROR(relay_.Hand(it->second, round, options_.timeout,
                                  commit->mutable_instruction(),
                                  commit->mutable_instruction_ref()));
    }
  }
  ASSIGN_OR_RETURN(std::vector<VerticalStepResult> replies,
                   CallAll(ring, round, [&](size_t i) { return std::move(commits[i]); }));
  // The next round's proposals that came with the commit (a party of protocol 4.0 replies
  // `committed`, and the next round asks it).
  next_proposals_ = std::move(replies);
  return absl::OkStatus();
}

absl::Status VerticalSession::CheckUndecided(const RoundWinner& w) const {
  const auto& c = w.candidate;
  const std::string& owner = options_.ring[w.owner];
  if (auto it = specialized_.find({c.attribute(), c.node()}); it != specialized_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kProposalDecidedAlready, ": party '", owner, "' proposed attribute ",
                     c.attribute(), " node ", c.node(), ", specialized in round ", it->second));
  }
  if (auto it = vetoed_.find({c.attribute(), c.node(), c.candidate()}); it != vetoed_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        kProposalDecidedAlready, ": party '", owner, "' proposed attribute ", c.attribute(),
        " node ", c.node(), " candidate ", c.candidate(), ", vetoed in round ", it->second));
  }
  return absl::OkStatus();
}

bool VerticalSession::AnyParticipant(const std::vector<VerticalStepResult>& proposals) {
  const auto& ring = options_.ring;
  bool any = false;
  std::vector<std::string> reasons;
  for (size_t i = 0; i < ring.size(); ++i) {
    const auto& p = proposals[i].proposal();
    auto& record = participation_[ring[i]];
    if (p.misbehaving()) record.set_misbehaving(true);
    if (p.participate()) {
      any = true;
      continue;
    }
    record.set_rounds_declined(record.rounds_declined() + 1);
    ++(*record.mutable_declined_because())[p.reason()];
    reasons.push_back(absl::StrCat(ring[i], ": ", p.reason()));
  }
  if (!any) {
    stop_reason_ =
        absl::StrCat("every party sent Not-participate (", absl::StrJoin(reasons, "; "), ")");
  }
  return any;
}

absl::StatusOr<int> VerticalSession::CompareForWinner(
    uint32_t round, const std::vector<VerticalStepResult>& proposals, RoundWinner* w) {
  const auto& ring = options_.ring;
  const std::string& garbler = ring[0];
  const std::string& evaluator = ring[1];
  CarriedPayload carried;
  // From the run's second comparison on, when both computing parties keep the base OTs of the
  // first (protocol 4.1), the comparison starts at step 3: three relayed messages, not five.
  const uint32_t first = winner_base_kept_ ? 3 : 1;
  winner_base_kept_ = false;
  bool kept_by_both = true;
  for (uint32_t s = first; s <= 6; ++s) {
    const bool evaluator_step = s % 2 == 1;
    const std::string& party = evaluator_step ? evaluator : garbler;
    fedanon::v1::VerticalStep step;
    auto* compare = step.mutable_compare();
    compare->set_step(s);
    if (s <= first + 1) {  // each computing party's first step
      for (const auto& p : w->proposals) *compare->add_proposals() = p;
      for (const auto& p : proposals) {
        for (const auto& share : p.proposal().key_shares()) {
          if (share.receiver() == party) *compare->add_key_shares() = share;
        }
      }
    }
    if (s > first) {
      RETURN_IF_ERROR(relay_.Hand(carried, round, options_.timeout, compare->mutable_input(),
                                  compare->mutable_input_ref()));
    }
    ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, round, std::move(step)));
    if (!reply.has_compared()) {
      return absl::InternalError(absl::StrCat("party '", party, "' answered step ", s,
                                              " of the winner's comparison with something else"));
    }
    if (reply.compared().has_choice()) {
      w->choices.push_back(reply.compared().choice());
      kept_by_both = kept_by_both && reply.compared().base_kept();
    }
    if (s < 6) {
      ASSIGN_OR_RETURN(carried,
                       relay_.Fetch(party, round, options_.timeout, reply.compared().sealed(),
                                    reply.compared().sealed_ref()));
    }
  }
  if (w->choices.size() != 2 || w->choices[0].winner() != w->choices[1].winner()) {
    return absl::InternalError("the computing parties name different winners of the round");
  }
  winner_base_kept_ = kept_by_both;
  const auto it = std::find(ring.begin(), ring.end(), w->choices[0].winner());
  if (it == ring.end() ||
      !proposals[static_cast<size_t>(it - ring.begin())].proposal().participate()) {
    return absl::InternalError(absl::StrCat("the computing parties name '", w->choices[0].winner(),
                                            "', not a participating party, the round's winner"));
  }
  return static_cast<int>(it - ring.begin());
}

}  // namespace fedanon::leader
