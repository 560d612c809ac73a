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

absl::StatusOr<std::string> VerticalSession::RunLocalWaves(VerticalJobResult* result) {
  const auto& ring = options_.ring;
  uint32_t wave = 1;
  while (true) {
    const auto wave_start = std::chrono::steady_clock::now();
    std::vector<ProposalPages> pages(ring.size());
    std::vector<VerticalStepResult> proposals(ring.size());
    RETURN_IF_ERROR(FetchWaveProposals(wave, &pages, &proposals));
    ASSIGN_OR_RETURN(WaveWinners best, PickWaveWinners(wave, proposals));
    RETURN_IF_ERROR(DeliverProposals(wave, pages));
    if (best.empty()) {
      // The closing wave: the parties compare their final state digests (and that no one
      // proposed) before any release.
      RETURN_IF_ERROR(CallAll(ring, wave, [&](size_t) {
                        fedanon::v1::VerticalStep step;
                        step.mutable_local_commit()->set_closing(true);
                        return step;
                      }).status());
      break;
    }
    ASSIGN_OR_RETURN(WaveInbox inbox, SealWaveSplits(wave, &best, result));
    RETURN_IF_ERROR(CommitWave(wave, &inbox));
    committed_steps_ += best.size();
    for (const auto& [group, w] : best) {
      auto& p = participation_[ring[w.first]];
      p.set_rounds_won(p.rounds_won() + 1);
    }
    if (options_.observer != nullptr) {
      options_.observer->PhaseDone(Phase::kInstruction, absl::Seconds(Since(wave_start)));
    }
    spdlog::info("job={} wave={} local recoding: {} groups split, {} vetoes so far",
                 options_.job_id, wave, best.size(), result->vetoes);
    if (options_.on_wave) options_.on_wave(wave, best.size());
    ++wave;
  }
  result->rounds = wave - 1;
  return std::string("no party has a valid candidate in any live group");
}

absl::Status VerticalSession::FetchWaveProposals(uint32_t wave, std::vector<ProposalPages>* pages,
                                                 std::vector<VerticalStepResult>* proposals) {
  // Every party's signed list of the wave, page by page (no message grows with the number of
  // groups), reassembled here to pick the winners.
  const auto& ring = options_.ring;
  RETURN_IF_ERROR(
      PerParty(ring, [&](size_t i) { return FetchProposals(ring[i], wave, &(*pages)[i]); }));
  for (size_t i = 0; i < ring.size(); ++i) {
    auto* list = (*proposals)[i].mutable_local_proposals();
    if (!list->ParseFromString((*pages)[i].Whole())) {
      return absl::InternalError(
          absl::StrCat("the proposals of party '", ring[i], "' do not parse"));
    }
    list->set_live_groups((*pages)[i].head.live_groups());
  }
  return absl::OkStatus();
}

absl::StatusOr<VerticalSession::WaveWinners> VerticalSession::PickWaveWinners(
    uint32_t wave, const std::vector<VerticalStepResult>& proposals) {
  const auto& ring = options_.ring;
  WaveWinners best;
  for (size_t i = 0; i < ring.size(); ++i) {
    const auto& list = proposals[i].local_proposals();
    if (list.proposals().empty()) {
      ViewEntry e;
      e.round = wave;
      e.kind = kViewVerticalDecline;
      e.party = ring[i];
      e.counts = {list.live_groups()};
      e.detail = "no valid candidate in any live group";
      RETURN_IF_ERROR(Log(e));
    }
    for (const auto& p : list.proposals()) {
      ViewEntry e;
      e.round = wave;
      e.kind = kViewVerticalScore;
      e.party = ring[i];
      e.attribute = AttributeName(p.attribute());
      e.node = absl::StrCat("group ", p.group());
      e.counts = {p.group(), static_cast<uint64_t>(p.candidate())};
      e.score = p.score();
      RETURN_IF_ERROR(Log(e));
      auto it = best.find(p.group());
      if (it == best.end()) {
        best.emplace(p.group(), std::pair{i, p});
        continue;
      }
      const auto& q = it->second.second;
      const engine::CandidateRank rp{p.score(), static_cast<int>(p.attribute()), 0, p.candidate()};
      const engine::CandidateRank rq{q.score(), static_cast<int>(q.attribute()), 0, q.candidate()};
      if (engine::RanksAbove(rp, rq)) it->second = {i, p};
    }
  }
  return best;
}

absl::Status VerticalSession::DeliverProposals(uint32_t wave,
                                               const std::vector<ProposalPages>& pages) {
  // Every party's signed list, delivered unchanged to every other party page by page before
  // any later step of the wave: each party recomputes the winners from them.
  const auto& ring = options_.ring;
  return PerParty(ring, [&](size_t r) -> absl::Status {
    for (size_t i = 0; i < ring.size(); ++i) {
      if (i == r) continue;
      for (size_t p = 0; p < pages[i].pages.size(); ++p) {
        fedanon::v1::VerticalStep step;
        auto* put = step.mutable_local_proposals_put();
        put->set_party(ring[i]);
        put->set_page(static_cast<uint32_t>(p));
        put->set_pages(static_cast<uint32_t>(pages[i].pages.size()));
        put->set_page_bytes(pages[i].pages[p]);
        put->set_list_bytes(pages[i].head.list_bytes());
        put->set_list_digest(pages[i].head.list_digest());
        put->set_live_groups(pages[i].head.live_groups());
        put->set_state_digest(pages[i].head.state_digest());
        put->set_signature(pages[i].head.signature());
        RETURN_IF_ERROR(Call(ring[r], wave, std::move(step)).status());
      }
    }
    return absl::OkStatus();
  });
}

bool VerticalSession::IsLocalJudge(const std::string& party) const {
  const auto& judges = options_.local_judges;
  return std::binary_search(judges.begin(), judges.end(), party);
}

absl::StatusOr<VerticalSession::WaveInbox> VerticalSession::SealWaveSplits(
    uint32_t wave, WaveWinners* best, VerticalJobResult* result) {
  const size_t n = options_.ring.size();
  std::vector<std::string> owners;
  std::map<std::string, fedanon::v1::LocalWinners> won;
  for (const auto& [group, w] : *best) {
    auto [it, fresh] = won.try_emplace(options_.ring[w.first]);
    if (fresh) owners.push_back(options_.ring[w.first]);
    *it->second.add_won() = w.second;
  }
  ASSIGN_OR_RETURN(
      auto sealed, CallAll(owners, wave, [&](size_t i) {
        fedanon::v1::VerticalStep step;
        // Only the count and digest: the owner recomputes its groups.
        const fedanon::v1::LocalWinners& list = won[owners[i]];
        step.mutable_local_winners()->set_won_count(static_cast<uint64_t>(list.won_size()));
        step.mutable_local_winners()->set_won_digest(crypto::Sha256(list.SerializeAsString()));
        return step;
      }));
  // Every owner's instruction, for every other party; with judges, first for the other judges
  // only, and after their verdicts the accepted splits for the remaining parties.
  WaveInbox inbox;
  const auto& judges = options_.local_judges;
  if (judges.empty()) {
    RETURN_IF_ERROR(CollectSplits(wave, owners, sealed, n - 1, n - 1, &inbox));
    return inbox;
  }
  RETURN_IF_ERROR(CollectSplits(wave, owners, sealed, judges.size() - 1, judges.size(), &inbox));
  RETURN_IF_ERROR(JudgeWave(wave, &inbox, best, result));
  ASSIGN_OR_RETURN(auto published, CallAll(owners, wave, [&](size_t) {
                     fedanon::v1::VerticalStep step;
                     step.mutable_local_publish();
                     return step;
                   }));
  const size_t others = n - judges.size();
  RETURN_IF_ERROR(CollectSplits(wave, owners, published, others, others - 1, &inbox));
  return inbox;
}

absl::Status VerticalSession::CollectSplits(uint32_t wave, const std::vector<std::string>& owners,
                                            std::vector<VerticalStepResult>& replies,
                                            size_t expected_of_owner_judge,
                                            size_t expected_of_owner_other, WaveInbox* inbox) {
  const auto& ring = options_.ring;
  for (size_t o = 0; o < owners.size(); ++o) {
    const int owner =
        static_cast<int>(std::find(ring.begin(), ring.end(), owners[o]) - ring.begin());
    std::set<std::string> seen;
    ASSIGN_OR_RETURN(auto to, ByReceiver(replies[o].instructions(), owner, wave, &seen));
    const size_t expected =
        IsLocalJudge(owners[o]) ? expected_of_owner_judge : expected_of_owner_other;
    if (seen.size() != expected) {
      return absl::InternalError(
          absl::StrCat("party '", owners[o], "' did not seal its splits for every party"));
    }
    for (size_t r = 0; r < to.first.size(); ++r) {
      (*inbox)[to.first[r]].push_back(std::move(to.second[r]));
    }
  }
  return absl::OkStatus();
}

absl::Status VerticalSession::JudgeWave(uint32_t wave, WaveInbox* inbox, WaveWinners* best,
                                        VerticalJobResult* result) {
  const auto& judges = options_.local_judges;
  std::vector<fedanon::v1::VerticalStep> to_judge(judges.size());
  for (size_t j = 0; j < judges.size(); ++j) {
    auto* step = to_judge[j].mutable_local_judge();
    for (const auto& payload : (*inbox)[judges[j]]) {
      RETURN_IF_ERROR(HandInto(payload, wave, options_.timeout, step->mutable_instructions(),
                               step->mutable_instruction_refs()));
    }
  }
  inbox->clear();
  ASSIGN_OR_RETURN(auto judged,
                   CallAll(judges, wave, [&](size_t j) { return std::move(to_judge[j]); }));
  // Every judge's signed verdict list, page by page (page 0 answered LocalJudge; no message
  // grows with the number of groups), reassembled here for the vetoes and the view log.
  std::vector<VerdictPages> vpages(judges.size());
  RETURN_IF_ERROR(PerParty(judges, [&](size_t j) {
    return FetchVerdicts(judges[j], wave, std::move(*judged[j].mutable_local_verdicts()),
                         &vpages[j]);
  }));
  std::set<uint32_t> vetoed;
  for (size_t j = 0; j < judges.size(); ++j) {
    fedanon::v1::LocalVerdicts list;
    if (!list.ParseFromString(vpages[j].Whole())) {
      return absl::InternalError(
          absl::StrCat("the verdicts of judge '", judges[j], "' do not parse"));
    }
    uint64_t rejected = 0;
    for (const auto& one : list.verdicts()) {
      if (one.accept()) continue;
      ++rejected;
      vetoed.insert(one.group());
    }
    ViewEntry e;
    e.round = wave;
    e.kind = kViewVerticalVerdict;
    e.party = judges[j];
    e.counts = {static_cast<uint64_t>(list.verdicts_size()) - rejected, rejected};
    e.detail = "local: groups accepted, vetoed";
    RETURN_IF_ERROR(Log(e));
  }
  result->vetoes += static_cast<uint32_t>(vetoed.size());
  for (uint32_t g : vetoed) best->erase(g);
  return DeliverVerdicts(wave, vpages);
}

absl::Status VerticalSession::DeliverVerdicts(uint32_t wave,
                                              const std::vector<VerdictPages>& vpages) {
  // Every judge's signed list, delivered unchanged to every other party page by page before
  // LocalPublish and LocalCommit, which carry no verdicts.
  const auto& ring = options_.ring;
  const auto& judges = options_.local_judges;
  return PerParty(ring, [&](size_t r) -> absl::Status {
    for (size_t j = 0; j < judges.size(); ++j) {
      if (judges[j] == ring[r]) continue;
      for (size_t p = 0; p < vpages[j].pages.size(); ++p) {
        fedanon::v1::VerticalStep step;
        auto* put = step.mutable_local_verdicts_put();
        put->set_judge(judges[j]);
        put->set_page(static_cast<uint32_t>(p));
        put->set_pages(static_cast<uint32_t>(vpages[j].pages.size()));
        put->set_page_bytes(vpages[j].pages[p]);
        put->set_list_bytes(vpages[j].head.list_bytes());
        put->set_list_digest(vpages[j].head.list_digest());
        put->set_signature(vpages[j].head.signature());
        RETURN_IF_ERROR(Call(ring[r], wave, std::move(step)).status());
      }
    }
    return absl::OkStatus();
  });
}

absl::Status VerticalSession::CommitWave(uint32_t wave, WaveInbox* inbox) {
  const auto& ring = options_.ring;
  std::vector<fedanon::v1::VerticalStep> commits(ring.size());
  for (size_t i = 0; i < ring.size(); ++i) {
    auto* commit = commits[i].mutable_local_commit();
    for (const auto& payload : (*inbox)[ring[i]]) {
      RETURN_IF_ERROR(HandInto(payload, wave, options_.timeout, commit->mutable_instructions(),
                               commit->mutable_instruction_refs()));
    }
  }
  inbox->clear();
  return CallAll(ring, wave, [&](size_t i) { return std::move(commits[i]); }).status();
}

// Asks `party` for every page of its proposals of `wave`, in order; checks every page repeats
// the first's description and the whole matches its digest (a party that does not is named).
absl::Status VerticalSession::FetchProposals(const std::string& party, uint32_t wave,
                                             ProposalPages* out) {
  uint32_t pages = 1;
  uint64_t bytes = 0;
  for (uint32_t p = 0; p < pages; ++p) {
    fedanon::v1::VerticalStep step;
    step.mutable_local_propose()->set_page(p);
    ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, wave, std::move(step)));
    fedanon::v1::LocalProposals* got = reply.mutable_local_proposals();
    std::string page = std::move(*got->mutable_page_bytes());
    got->clear_page_bytes();
    if (got->page() != p || got->pages() == 0 || got->proposals_size() != 0 ||
        (p > 0 && got->pages() != pages)) {
      return absl::InternalError(absl::StrCat("party '", party, "' answered page ", got->page(),
                                              " of ", got->pages(), " for page ", p, " of ", pages,
                                              " of its proposals of wave ", wave));
    }
    got->clear_page();
    if (p == 0) {
      // No more pages than an honest party cuts (one for an empty list), the whole bounded.
      if (got->list_bytes() > wire::kMaxChunkedPayloadBytes ||
          got->pages() > wire::MostPagesFor(got->list_bytes())) {
        return absl::InternalError(absl::StrCat("party '", party, "' declares ", got->pages(),
                                                " pages of ", got->list_bytes(),
                                                " bytes for its proposals of wave ", wave));
      }
      pages = got->pages();
      out->head = *got;
    } else if (got->SerializeAsString() != out->head.SerializeAsString()) {
      return absl::InternalError(absl::StrCat("party '", party,
                                              "' changed the description of its proposals of wave ",
                                              wave, " between pages"));
    }
    bytes += page.size();
    if (bytes > out->head.list_bytes()) {
      return absl::InternalError(
          absl::StrCat("the proposal pages of party '", party, "' exceed their declared size"));
    }
    out->pages.push_back(std::move(page));
  }
  if (bytes != out->head.list_bytes() || crypto::Sha256(out->Whole()) != out->head.list_digest()) {
    return absl::InternalError(absl::StrCat("the proposal pages of party '", party,
                                            "' do not match their size and digest"));
  }
  return absl::OkStatus();
}

// From page 0 (`first`, the judge's LocalJudge answer), asks `judge` for every further page of
// its verdicts of `wave` (LocalVerdictsPage), in order; checks as FetchProposals does.
absl::Status VerticalSession::FetchVerdicts(const std::string& judge, uint32_t wave,
                                            fedanon::v1::LocalVerdicts first, VerdictPages* out) {
  uint32_t pages = 1;
  uint64_t bytes = 0;
  for (uint32_t p = 0; p < pages; ++p) {
    fedanon::v1::LocalVerdicts got;
    if (p == 0) {
      got.Swap(&first);
    } else {
      fedanon::v1::VerticalStep step;
      step.mutable_local_verdicts_page()->set_page(p);
      ASSIGN_OR_RETURN(VerticalStepResult reply, Call(judge, wave, std::move(step)));
      got = std::move(*reply.mutable_local_verdicts());
    }
    std::string page = std::move(*got.mutable_page_bytes());
    got.clear_page_bytes();
    if (got.page() != p || got.pages() == 0 || got.verdicts_size() != 0 ||
        (p > 0 && got.pages() != pages)) {
      return absl::InternalError(absl::StrCat("judge '", judge, "' answered page ", got.page(),
                                              " of ", got.pages(), " for page ", p, " of ", pages,
                                              " of its verdicts of wave ", wave));
    }
    got.clear_page();
    if (p == 0) {
      // No more pages than an honest judge cuts (one for an empty list), the whole bounded.
      if (got.list_bytes() > wire::kMaxChunkedPayloadBytes ||
          got.pages() > wire::MostPagesFor(got.list_bytes())) {
        return absl::InternalError(absl::StrCat("judge '", judge, "' declares ", got.pages(),
                                                " pages of ", got.list_bytes(),
                                                " bytes for its verdicts of wave ", wave));
      }
      pages = got.pages();
      out->head = got;
    } else if (got.SerializeAsString() != out->head.SerializeAsString()) {
      return absl::InternalError(absl::StrCat("judge '", judge,
                                              "' changed the description of its verdicts of wave ",
                                              wave, " between pages"));
    }
    bytes += page.size();
    if (bytes > out->head.list_bytes()) {
      return absl::InternalError(
          absl::StrCat("the verdict pages of judge '", judge, "' exceed their declared size"));
    }
    out->pages.push_back(std::move(page));
  }
  if (bytes != out->head.list_bytes() || crypto::Sha256(out->Whole()) != out->head.list_digest()) {
    return absl::InternalError(absl::StrCat("the verdict pages of judge '", judge,
                                            "' do not match their size and digest"));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::leader
