#include "party/vertical_waves_party.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>
#include <vector>

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
#include "party/paged_delivery.h"
#include "party/protocol_util.h"
#include "party/vertical_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

namespace {

absl::StatusOr<VerticalLocalReplica*> LocalReplicaOf(VerticalParty& vp) {
  if (vp.local() == nullptr) {
    return absl::FailedPreconditionError(
        "a local-recoding step in a job without recoding: local (or before the ID matching)");
  }
  return vp.local();
}

// Page `page` of a judge's cached verdict list, with the description every page repeats.
absl::Status AnswerVerdictsPage(const std::string& list, const std::string& digest,
                                const std::string& signature, uint64_t page_bytes, uint32_t page,
                                uint64_t round, fedanon::v1::VerticalStepResult* out) {
  const std::vector<std::string_view> pages = wire::SplitPayload(list, page_bytes);
  if (page >= pages.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page, " of this judge's ", pages.size(),
                                                   " verdict pages of wave ", round,
                                                   " does not exist"));
  }
  auto* v = out->mutable_local_verdicts();
  v->set_signature(signature);
  v->set_page(page);
  v->set_pages(static_cast<uint32_t>(pages.size()));
  v->set_page_bytes(std::string(pages[page]));
  v->set_list_bytes(list.size());
  v->set_list_digest(digest);
  return absl::OkStatus();
}

}  // namespace

absl::Status VerticalWavesParty::Propose(const fedanon::v1::LocalPropose& propose, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  const bool fresh = !own_ || own_->wave != round;
  if (fresh) {
    // Once per wave: every page request of the wave is answered from the same signed bytes.
    const fedanon::v1::LocalProposals proposals = local->Propose(round);
    LocalOwnList own;
    own.wave = round;
    own.list = LocalProposalsList(proposals);
    own.digest = crypto::Sha256(own.list);
    own.live_groups = proposals.live_groups();
    own.state_digest = proposals.state_digest();
    // Pages of half a chunk: a page and its description fit one message either way.
    const uint64_t limit =
        ctx_.message_limit > 0 ? ctx_.message_limit : wire::kDefaultMessageLimitBytes;
    own.page_bytes = std::max<uint64_t>(1, wire::ChunkBytesForLimit(limit) / 2);
    // Signed, so every party can recompute the winners the leader announces from them.
    ASSIGN_OR_RETURN(
        own.signature,
        crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                              LocalProposalsStatement(ctx_.job_id, ctx_.run_id, round, own.digest,
                                                      own.live_groups, own.state_digest)));
    own_ = std::move(own);
    delivered_.clear();
    delivered_verdicts_.clear();
  }
  const LocalOwnList& own = *own_;
  const std::vector<std::string_view> pages = wire::SplitPayload(own.list, own.page_bytes);
  if (propose.page() >= pages.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", propose.page(), " of this party's ",
                                                   pages.size(), " proposal pages of wave ", round,
                                                   " does not exist"));
  }
  auto* proposals = out->mutable_local_proposals();
  proposals->set_live_groups(own.live_groups);
  proposals->set_state_digest(own.state_digest);
  proposals->set_signature(own.signature);
  proposals->set_page(propose.page());
  proposals->set_pages(static_cast<uint32_t>(pages.size()));
  proposals->set_page_bytes(std::string(pages[propose.page()]));
  proposals->set_list_bytes(own.list.size());
  proposals->set_list_digest(own.digest);
  if (!fresh) return absl::OkStatus();
  return ctx_.Audit(round, {.kind = kAuditProposal,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"live_groups", own.live_groups},
                                        {"proposals", local->proposed_count()},
                                        {"pages", pages.size()}},
                            .texts = {{"recoding", "local"}}});
}

absl::Status VerticalWavesParty::ProposalsPut(const fedanon::v1::LocalProposalsPut& put,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  RETURN_IF_ERROR(LocalReplicaOf(replica_).status());
  const std::string& from = put.party();
  if (from == ctx_.self() ||
      std::find(ctx_.ring.begin(), ctx_.ring.end(), from) == ctx_.ring.end() ||
      ctx_.statement_keys.find(from) == ctx_.statement_keys.end()) {
    return RefuseWave(round, absl::StrCat("a proposal page of '", from,
                                          "', which is not another data party of the job"));
  }
  RETURN_IF_ERROR(CheckPageWave(round, "proposal", from));
  LocalDelivery& d = delivered_[from];
  const auto complete = [&](const std::string& whole) -> absl::Status {
    const absl::Status st = crypto::VerifyStatement(
        *ctx_.statement_keys.at(from),
        LocalProposalsStatement(ctx_.job_id, ctx_.run_id, round, put.list_digest(),
                                put.live_groups(), put.state_digest()),
        put.signature());
    if (!st.ok()) {
      return RefuseWave(
          round,
          absl::StrCat("forged local proposals: the proposals of '", from,
                       "' as delivered by the leader do not carry its signature for wave ", round,
                       " (altered, or replayed from another wave) (", st.message(), ")"));
    }
    if (!d.list.ParseFromString(whole) || d.list.live_groups() != 0 ||
        !d.list.state_digest().empty() || !d.list.signature().empty()) {
      return RefuseWave(round,
                        absl::StrCat("the proposals of '", from, "' do not parse as a list"));
    }
    d.list.set_live_groups(put.live_groups());
    d.list.set_state_digest(put.state_digest());
    d.verified = true;
    return absl::OkStatus();
  };
  return TakePage(
      put, round, from,
      {"proposal", "proposals", "pages, size, digest, live groups, state digest or signature"},
      "local-proposals", d.pages, complete, out);
}

absl::Status VerticalWavesParty::CheckDeliveredProposals(uint64_t round) const {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  if (!own_ || own_->wave != round) {
    return absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": a step of wave ", round,
                                                    " before this party proposed in it"));
  }
  std::vector<std::pair<std::string, fedanon::v1::LocalProposals>> all;
  for (const auto& party : ctx_.ring) {
    if (party == ctx_.self()) {
      fedanon::v1::LocalProposals mine;
      if (!mine.ParseFromString(own_->list)) {
        return absl::InternalError("this party's own proposal list does not parse");
      }
      mine.set_live_groups(own_->live_groups);
      mine.set_state_digest(own_->state_digest);
      all.emplace_back(party, std::move(mine));
      continue;
    }
    const auto it = delivered_.find(party);
    if (it == delivered_.end() || !it->second.verified) {
      return absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave, ": a step of wave ", round, " before the proposals of '", party,
          "' were delivered (", it == delivered_.end() ? 0 : it->second.pages.pages_received(),
          " of ", it == delivered_.end() ? 0 : it->second.pages.pages_declared(), " pages)"));
    }
    all.emplace_back(party, it->second.list);
  }
  return local->CheckProposals(round, all);
}

absl::Status VerticalWavesParty::Winners(const fedanon::v1::LocalWinners& won, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  absl::Status checked = CheckDeliveredProposals(round);
  // The leader names only the count and digest of the groups this party won: it recomputes them
  // from the delivered proposals and refuses a different announcement.
  fedanon::v1::LocalWinners mine;
  if (checked.ok()) {
    mine = local->OwnWinners();
    const std::string digest = crypto::Sha256(mine.SerializeAsString());
    if (static_cast<uint64_t>(mine.won_size()) != won.won_count() || digest != won.won_digest()) {
      checked = absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave,
          ": the leader's winners differ from the best signed proposals: it announces ",
          won.won_count(), " won groups (or another digest of them), the delivered proposals give ",
          mine.won_size()));
    }
  }
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(checked.message()));
    return checked;
  }
  ASSIGN_OR_RETURN(const fedanon::v1::LocalInstruction instruction,
                   local->MakeInstruction(round, mine));
  const std::string bytes = instruction.SerializeAsString();
  // With judges (confidence bounds) the splits go to the other judges only; the parties that are
  // not judges receive the accepted ones after the verdicts (VerticalLocalPublish).
  const std::vector<std::string>& judges = local->judges();
  std::vector<std::string> receivers;
  for (const auto& party : ctx_.ring) {
    if (party == ctx_.self()) continue;
    if (!judges.empty() && !std::binary_search(judges.begin(), judges.end(), party)) continue;
    RETURN_IF_ERROR(transfer_.SealInstruction(party, round, bytes, out->mutable_instructions()));
    receivers.push_back(party);
  }
  return ctx_.Audit(round, {.kind = kAuditInstruction,
                            .form = kAuditSealed,
                            .to = receivers,
                            .numbers = {{"groups", instruction.splits_size()}},
                            .texts = {{"recoding", "local"}}});
}

absl::Status VerticalWavesParty::Commit(const fedanon::v1::LocalCommit& commit, uint64_t round,
                                        fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  // Before opening anything: every party's signed proposals (digests, recomputed winners).
  absl::Status checked = CheckDeliveredProposals(round);
  if (checked.ok() && !commit.closing() && !local->judges().empty()) {
    checked = CheckDeliveredVerdicts(commit.verdicts(), round);
  }
  if (checked.ok() && commit.closing()) {
    if (!commit.instructions().empty() || !commit.instruction_refs().empty()) {
      checked = absl::PermissionDeniedError(
          absl::StrCat(kRefusedLocalWave, ": the closing wave carries instructions"));
    } else {
      checked = local->CloseWaves(round);
    }
  }
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(checked.message()));
    return checked;
  }
  if (commit.closing()) {
    out->set_committed(true);
    return ctx_.Audit(round,
                      {.kind = kAuditCommit,
                       .form = kAuditPlaintext,
                       .to = {ctx_.leader},
                       .numbers = {{"instructions", 0}, {"live_groups", local->live_groups()}},
                       .texts = {{"recoding", "local"}, {"wave", "closing"}}});
  }
  ASSIGN_OR_RETURN(const auto from_others,
                   OpenInstructions(commit.instructions(), commit.instruction_refs(), round));
  if (absl::Status st = local->ApplyWave(round, from_others); !st.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(st.message()));
    return st;
  }
  out->set_committed(true);
  return ctx_.Audit(round, {.kind = kAuditCommit,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"instructions", from_others.size()},
                                        {"live_groups", local->live_groups()}},
                            .texts = {{"recoding", "local"}}});
}

absl::StatusOr<std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>>
VerticalWavesParty::OpenInstructions(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& wholes,
    const google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>& refs, uint64_t round) {
  std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>> out;
  auto open = [&](const fedanon::v1::SealedPayload& whole,
                  const fedanon::v1::ChunkRef& ref) -> absl::Status {
    std::string sender;
    ASSIGN_OR_RETURN(std::string bytes,
                     transfer_.OpenPayload(whole, ref, round, "instruction", &sender));
    fedanon::v1::LocalInstruction instruction;
    if (!instruction.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the local-recoding instruction of '", sender, "' does not parse"));
    }
    out.emplace_back(sender, std::move(instruction));
    return absl::OkStatus();
  };
  for (const auto& whole : wholes) RETURN_IF_ERROR(open(whole, {}));
  for (const auto& ref : refs) RETURN_IF_ERROR(open({}, ref));
  return out;
}

absl::Status VerticalWavesParty::CheckDeliveredVerdicts(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SignedLocalVerdicts>& relayed,
    uint64_t round) const {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  if (!relayed.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(kRefusedLocalWave, ": verdicts relayed inside the step of wave ", round,
                     " (they travel in pages: LocalVerdictsPut)"));
  }
  std::vector<std::pair<std::string, fedanon::v1::LocalVerdicts>> all;
  for (const auto& judge : local->judges()) {
    if (judge == ctx_.self()) {
      fedanon::v1::LocalVerdicts mine;
      if (!own_verdicts_ || own_verdicts_->wave != round ||
          !mine.ParseFromString(own_verdicts_->list)) {
        return absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": a step of wave ",
                                                        round, " before this judge's verdicts"));
      }
      all.emplace_back(judge, std::move(mine));
      continue;
    }
    const auto it = delivered_verdicts_.find(judge);
    if (it == delivered_verdicts_.end() || !it->second.verified) {
      const bool any = it != delivered_verdicts_.end();
      return absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave, ": a step of wave ", round, " before the verdicts of judge '", judge,
          "' were delivered (", any ? it->second.pages.pages_received() : 0, " of ",
          any ? it->second.pages.pages_declared() : 0, " pages)"));
    }
    all.emplace_back(judge, it->second.list);
  }
  return local->CheckVerdicts(round, all);
}

absl::Status VerticalWavesParty::Judge(const fedanon::v1::LocalJudge& judge, uint64_t round,
                                       fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  if (absl::Status st = CheckDeliveredProposals(round); !st.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(st.message()));
    return st;
  }
  const bool fresh = !own_verdicts_ || own_verdicts_->wave != round;
  if (fresh) {
    // Once per wave: every page request of the wave is answered from the same signed bytes.
    ASSIGN_OR_RETURN(const auto from_owners,
                     OpenInstructions(judge.instructions(), judge.instruction_refs(), round));
    absl::StatusOr<fedanon::v1::LocalVerdicts> verdicts = local->Judge(round, from_owners);
    if (!verdicts.ok()) {
      spdlog::error("job={} round={} {}", ctx_.job_id, round,
                    std::string(verdicts.status().message()));
      return verdicts.status();
    }
    LocalOwnVerdicts own;
    own.wave = round;
    own.list = LocalVerdictsList(*verdicts);
    own.digest = crypto::Sha256(own.list);
    own.groups = static_cast<uint64_t>(verdicts->verdicts_size());
    for (const auto& v : verdicts->verdicts()) own.vetoed += v.accept() ? 0 : 1;
    const uint64_t limit =
        ctx_.message_limit > 0 ? ctx_.message_limit : wire::kDefaultMessageLimitBytes;
    own.page_bytes = std::max<uint64_t>(1, wire::ChunkBytesForLimit(limit) / 2);
    ASSIGN_OR_RETURN(
        own.signature,
        crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                              LocalVerdictsStatement(ctx_.job_id, ctx_.run_id, round, own.digest)));
    own_verdicts_ = std::move(own);
  }
  const LocalOwnVerdicts& own = *own_verdicts_;
  RETURN_IF_ERROR(
      AnswerVerdictsPage(own.list, own.digest, own.signature, own.page_bytes, 0, round, out));
  if (!fresh) return absl::OkStatus();
  return ctx_.Audit(round, {.kind = kAuditVerdict,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"groups", own.groups},
                                        {"vetoed", own.vetoed},
                                        {"pages", out->local_verdicts().pages()}},
                            .texts = {{"recoding", "local"}}});
}

absl::Status VerticalWavesParty::VerdictsPage(const fedanon::v1::LocalVerdictsPage& page,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  RETURN_IF_ERROR(LocalReplicaOf(replica_).status());
  if (!own_verdicts_ || own_verdicts_->wave != round) {
    return absl::FailedPreconditionError(absl::StrCat(
        kRefusedLocalWave, ": a verdict page of wave ", round, " before this judge judged it"));
  }
  const LocalOwnVerdicts& own = *own_verdicts_;
  return AnswerVerdictsPage(own.list, own.digest, own.signature, own.page_bytes, page.page(), round,
                            out);
}

absl::Status VerticalWavesParty::VerdictsPut(const fedanon::v1::LocalVerdictsPut& put,
                                             uint64_t round, fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  const std::string& from = put.judge();
  if (from == ctx_.self() ||
      !std::binary_search(local->judges().begin(), local->judges().end(), from) ||
      ctx_.statement_keys.find(from) == ctx_.statement_keys.end()) {
    return RefuseWave(round, absl::StrCat("a verdict page of '", from,
                                          "', which is not another judge of the job"));
  }
  RETURN_IF_ERROR(CheckPageWave(round, "verdict", from));
  VerdictDelivery& d = delivered_verdicts_[from];
  const auto complete = [&](const std::string& whole) -> absl::Status {
    const absl::Status st = crypto::VerifyStatement(
        *ctx_.statement_keys.at(from),
        LocalVerdictsStatement(ctx_.job_id, ctx_.run_id, round, put.list_digest()),
        put.signature());
    if (!st.ok()) {
      return RefuseWave(
          round,
          absl::StrCat("forged local verdicts: the verdicts of judge '", from,
                       "' as delivered by the leader do not carry its signature for wave ", round,
                       " (altered, or replayed from another wave) (", st.message(), ")"));
    }
    if (!d.list.ParseFromString(whole) || !d.list.signature().empty() || d.list.pages() != 0 ||
        !d.list.page_bytes().empty()) {
      return RefuseWave(round, absl::StrCat("the verdicts of '", from, "' do not parse as a list"));
    }
    d.verified = true;
    return absl::OkStatus();
  };
  return TakePage(put, round, from, {"verdict", "verdicts", "pages, size, digest or signature"},
                  "local-verdicts", d.pages, complete, out);
}

absl::Status VerticalWavesParty::CheckPageWave(uint64_t round, const std::string& what,
                                               const std::string& from) const {
  if (own_ && own_->wave == round) return absl::OkStatus();
  return RefuseWave(round, absl::StrCat("a ", what, " page of '", from, "' for wave ", round,
                                        ", but the current wave is ", own_ ? own_->wave : 0));
}

absl::Status VerticalWavesParty::RefuseWave(uint64_t round, const std::string& why) const {
  absl::Status st = absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": ", why));
  spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(st.message()));
  return st;
}

template <typename Put>
absl::Status VerticalWavesParty::TakePage(
    const Put& put, uint64_t round, const std::string& from, const PagedDelivery::Names& names,
    const std::string& stream, PagedDelivery& pages,
    const std::function<absl::Status(const std::string& whole)>& complete,
    fedanon::v1::VerticalStepResult* out) {
  Put head = put;
  head.clear_page();
  head.clear_page_bytes();
  absl::StatusOr<PagedDelivery::Added> added =
      pages.Add(names, from, round, head.SerializeAsString(), put.page(), put.pages(),
                put.list_bytes(), put.page_bytes(), put.list_digest());
  if (!added.ok()) return RefuseWave(round, std::string(added.status().message()));
  if (*added == PagedDelivery::Added::kRepeated) {
    out->set_committed(true);  // the same page again: one request, one answer
    return absl::OkStatus();
  }
  if (*added == PagedDelivery::Added::kComplete) RETURN_IF_ERROR(complete(pages.Whole()));
  out->set_committed(true);
  return ctx_.Audit(round, {.kind = kAuditChunkReceipt,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"page", put.page()}, {"pages", put.pages()}},
                            .texts = {{"stream", stream}, {"from", from}}});
}

absl::Status VerticalWavesParty::Publish(const fedanon::v1::LocalPublish& publish, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(replica_));
  absl::Status checked = CheckDeliveredProposals(round);
  if (checked.ok()) checked = CheckDeliveredVerdicts(publish.verdicts(), round);
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(checked.message()));
    return checked;
  }
  ASSIGN_OR_RETURN(const fedanon::v1::LocalInstruction instruction,
                   local->PublishInstruction(round));
  const std::string bytes = instruction.SerializeAsString();
  const std::vector<std::string>& judges = local->judges();
  std::vector<std::string> receivers;
  for (const auto& party : ctx_.ring) {
    if (party == ctx_.self() || std::binary_search(judges.begin(), judges.end(), party)) {
      continue;
    }
    RETURN_IF_ERROR(transfer_.SealInstruction(party, round, bytes, out->mutable_instructions()));
    receivers.push_back(party);
  }
  return ctx_.Audit(round, {.kind = kAuditInstruction,
                            .form = kAuditSealed,
                            .to = receivers,
                            .numbers = {{"groups", instruction.splits_size()}},
                            .texts = {{"recoding", "local"}, {"after", "verdicts"}}});
}

void VerticalWavesParty::RestoreProposalsSignature(uint64_t wave, const std::string& signature) {
  if (own_ && own_->wave == wave) own_->signature = signature;
}

void VerticalWavesParty::RestoreVerdictsSignature(uint64_t wave, const std::string& signature) {
  if (own_verdicts_ && own_verdicts_->wave == wave) own_verdicts_->signature = signature;
}

}  // namespace fedanon::party
