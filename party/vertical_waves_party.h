// The waves of a vertical job with local recoding at a party (docs/vertical.md "Local
// recoding"): per group, this party's proposals of the wave, computed, serialized and signed once
// and answered page by page; every other party's signed list as its pages arrive, each checked
// (its sender, wave, page range, the description every page repeats, no different content for a
// page delivered already, the total bounded; once complete, the list's digest and signature); the
// owner's sealed splits of the groups it won; as a judge, its signed verdicts on the other owners'
// splits, in pages too; the owner's accepted splits for the parties that are not judges; and the
// wave's commit, once the delivered proposals and verdicts check.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/paged_delivery.h"
#include "party/payload_transfer.h"
#include "party/vertical_party.h"

namespace fedanon::party {

class VerticalWavesParty {
 public:
  VerticalWavesParty(JobContext& ctx, PayloadTransfer& transfer, VerticalParty& replica)
      : ctx_(ctx), transfer_(transfer), replica_(replica) {}

  absl::Status Propose(const fedanon::v1::LocalPropose& propose, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  absl::Status ProposalsPut(const fedanon::v1::LocalProposalsPut& put, uint64_t round,
                            fedanon::v1::VerticalStepResult* out);
  absl::Status Winners(const fedanon::v1::LocalWinners& won, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  absl::Status Commit(const fedanon::v1::LocalCommit& commit, uint64_t round,
                      fedanon::v1::VerticalStepResult* out);
  // A judge's verdict list of the wave: page 0 here, the others VerdictsPage.
  absl::Status Judge(const fedanon::v1::LocalJudge& judge, uint64_t round,
                     fedanon::v1::VerticalStepResult* out);
  absl::Status VerdictsPage(const fedanon::v1::LocalVerdictsPage& page, uint64_t round,
                            fedanon::v1::VerticalStepResult* out);
  absl::Status VerdictsPut(const fedanon::v1::LocalVerdictsPut& put, uint64_t round,
                           fedanon::v1::VerticalStepResult* out);
  absl::Status Publish(const fedanon::v1::LocalPublish& publish, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);

  // After a restart: the lists are derived again; their signatures are the ones that left (a
  // signature is drawn afresh each time, and every page of a wave must carry the same).
  void RestoreProposalsSignature(uint64_t wave, const std::string& signature);
  void RestoreVerdictsSignature(uint64_t wave, const std::string& signature);

 private:
  // PermissionDenied "<kRefusedLocalWave>: <why>", logged.
  absl::Status RefuseWave(uint64_t round, const std::string& why) const;
  // A page of `from`'s list (`what`: "proposal", "verdict") is for the current wave.
  absl::Status CheckPageWave(uint64_t round, const std::string& what,
                             const std::string& from) const;
  // One page of another party's signed list (proposals or verdicts), sent through the leader:
  // added to `pages`; when it completes the list, `complete(whole)` checks its signature and keeps
  // it. The same page again is answered as the first time (one request, one answer); a receipt is
  // audited under `stream`.
  template <typename Put>
  absl::Status TakePage(const Put& put, uint64_t round, const std::string& from,
                        const PagedDelivery::Names& names, const std::string& stream,
                        PagedDelivery& pages,
                        const std::function<absl::Status(const std::string& whole)>& complete,
                        fedanon::v1::VerticalStepResult* out);
  // The wave's delivered proposals: every other data party's list complete and verified for this
  // wave (else PermissionDenied naming the party and what is missing), with this party's own;
  // then the replica's own checks (VerticalLocalReplica::CheckProposals).
  absl::Status CheckDeliveredProposals(uint64_t round) const;
  // The wave's delivered verdicts: every other judge's list complete and verified for this wave,
  // with this judge's own; none relayed inside the step (`relayed` must be empty); then the
  // replica's checks (VerticalLocalReplica::CheckVerdicts).
  absl::Status CheckDeliveredVerdicts(
      const google::protobuf::RepeatedPtrField<fedanon::v1::SignedLocalVerdicts>& relayed,
      uint64_t round) const;
  // A wave's instructions as a step carries them (whole or as chunk streams), opened and parsed,
  // each with the party that sealed it.
  absl::StatusOr<std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>>
  OpenInstructions(const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& wholes,
                   const google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>& refs,
                   uint64_t round);

  JobContext& ctx_;
  PayloadTransfer& transfer_;
  VerticalParty& replica_;
  // This party's proposal list of the current wave, serialized and signed once (every page
  // request of the wave is answered from it), and every other party's signed list of the wave as
  // its pages arrive.
  struct LocalOwnList {
    uint64_t wave = 0;
    std::string list;  // LocalProposalsList of the wave's proposals
    std::string digest;
    std::string signature;
    uint64_t live_groups = 0;
    std::string state_digest;
    uint64_t page_bytes = 0;
  };
  std::optional<LocalOwnList> own_;
  struct LocalDelivery {
    PagedDelivery pages;
    bool verified = false;
    fedanon::v1::LocalProposals list;  // once verified: the list with live_groups, state_digest
  };
  std::map<std::string, LocalDelivery> delivered_;  // of the wave own_->wave
  // As a judge: its verdict list of the wave, computed, serialized and signed once at Judge; and
  // every other judge's signed verdict list of the wave as its pages arrive.
  struct LocalOwnVerdicts {
    uint64_t wave = 0;
    std::string list;  // LocalVerdictsList of the wave's verdicts
    std::string digest;
    std::string signature;
    uint64_t page_bytes = 0;
    uint64_t groups = 0;
    uint64_t vetoed = 0;
  };
  std::optional<LocalOwnVerdicts> own_verdicts_;
  struct VerdictDelivery {
    PagedDelivery pages;
    bool verified = false;
    fedanon::v1::LocalVerdicts list;  // once verified
  };
  std::map<std::string, VerdictDelivery> delivered_verdicts_;  // of the wave own_->wave
};

}  // namespace fedanon::party
