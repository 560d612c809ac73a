#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

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
  ASSIGN_OR_RETURN(auto proposals, CallAll(ring, round, [](size_t) {
                     fedanon::v1::VerticalStep step;
                     step.mutable_propose();
                     return step;
                   }));
  RETURN_IF_ERROR(LogProposals(round, proposals));
  RoundWinner w;
  w.owner = PickWinner(proposals, &w.candidate);
  if (w.owner < 0) return RoundOutcome::kEveryoneDeclined;
  RETURN_IF_ERROR(CheckUndecided(w));
  // The parties' signed proposals travel with the winner (the owner checks it won) and the
  // owner's with the commit; the judges' signed verdicts too (every party checks them).
  w.proposals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    w.proposals[i].set_party(ring[i]);
    *w.proposals[i].mutable_proposal() = proposals[i].proposal();
  }
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
  *win.mutable_winner()->mutable_candidate() = w->candidate;
  for (const auto& p : w->proposals) *win.mutable_winner()->add_proposals() = p;
  // The owner seals the children for the judges only (the other holders of sensitive values).
  ASSIGN_OR_RETURN(VerticalStepResult to_judges, Call(options_.ring[w->owner], round, win));
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
    auto it = with_commit->find(ring[i]);
    if (it != with_commit->end()) {
      RETURN_IF_ERROR(relay_.Hand(it->second, round, options_.timeout,
                                  commit->mutable_instruction(),
                                  commit->mutable_instruction_ref()));
    }
  }
  return CallAll(ring, round, [&](size_t i) { return std::move(commits[i]); }).status();
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

// The best proposal (best score, public tie-break): its party's index, or -1 when every party
// declined (then stop_reason_ lists their reasons). Counts declines in participation_.
int VerticalSession::PickWinner(const std::vector<VerticalStepResult>& proposals,
                                fedanon::v1::VerticalCandidate* winner) {
  const auto& ring = options_.ring;
  int owner = -1;
  engine::TopDownSpecializer::Choice best;
  std::vector<std::string> reasons;
  for (size_t i = 0; i < ring.size(); ++i) {
    const auto& p = proposals[i].proposal();
    auto& record = participation_[ring[i]];
    if (p.misbehaving()) record.set_misbehaving(true);
    if (!p.participate()) {
      record.set_rounds_declined(record.rounds_declined() + 1);
      ++(*record.mutable_declined_because())[p.reason()];
      reasons.push_back(absl::StrCat(ring[i], ": ", p.reason()));
      continue;
    }
    engine::TopDownSpecializer::Choice c{static_cast<int>(p.candidate().attribute()),
                                         p.candidate().node(), p.candidate().candidate(),
                                         p.candidate().score(), p.candidate().order_key()};
    if (owner < 0 || engine::TopDownSpecializer::Beats(c, best)) {
      owner = static_cast<int>(i);
      best = c;
      *winner = p.candidate();
    }
  }
  if (owner < 0) {
    stop_reason_ =
        absl::StrCat("every party sent Not-participate (", absl::StrJoin(reasons, "; "), ")");
  }
  return owner;
}

}  // namespace fedanon::leader
