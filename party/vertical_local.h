// A data party's replica of a vertical local-recoding job (`recoding: local`, docs/vertical.md
// "Local recoding"): the public groups (every group's key and the group of every common record,
// in canonical order), this party's per-group proposals on its own attributes, the instruction
// for the groups it won, and the checked application of a wave's instructions. Groups are public
// to the data parties (every applied split reaches every replica); a party knows the values of
// its own attributes only. No gRPC types.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/local_candidates.h"
#include "common/engine/local_recoding.h"
#include "common/engine/privacy_model.h"
#include "common/table/dataset.h"
#include "fedanon/v1/federation.pb.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::party {

// The named reason a replica refuses a wave (a deviating leader, or an owner's bad instruction).
inline constexpr char kRefusedLocalWave[] = "refused to apply a local-recoding wave";

class VerticalLocalReplica {
 public:
  // `data`: the joined schema with this party's codes (canonical order; not owned);
  // `owner_of`: per QID attribute, the party that holds it. Fails when even the whole table
  // breaks the local rule, or when the job needs a judge (a confidence bound: not supported).
  static absl::StatusOr<std::unique_ptr<VerticalLocalReplica>> Create(
      const common::Dataset* data, const common::PrivacyModel* model,
      const fedanon::v1::JobSpec& spec, std::string self, std::vector<std::string> owner_of);

  // This wave's proposals: for every live group, the best valid candidate on own attributes, and
  // the digest of this replica's public state (StateDigest). Kept until the wave is applied (the
  // owner instructs only what it proposed). The caller signs them.
  fedanon::v1::LocalProposals Propose(uint64_t wave);
  // Every party's proposals of `wave` as (party, proposals), their signatures already verified
  // and one per data party (the caller checks that). Refuses if a state digest differs from this
  // replica's (the replicas diverged), a live-group count differs, a proposal names a group that
  // is not live (or twice) or an attribute its party does not hold, or this party's own entry is
  // not what it proposed. Then computes every group's winner with the public tie-break
  // (common::RanksAbove: score, lower attribute, lower candidate), which MakeInstruction and
  // ApplyWave check the leader's announcement and the instructions against.
  absl::Status CheckProposals(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalProposals>>& proposals);
  // The owner: the splits of the groups the leader says it won. Refuses unless they are exactly
  // the groups whose recomputed winner is this party's proposal (CheckProposals of this wave).
  absl::StatusOr<fedanon::v1::LocalInstruction> MakeInstruction(
      uint64_t wave, const fedanon::v1::LocalWinners& won);
  // Applies the wave: this party's own instruction (if it won groups) and every other owner's
  // (sender, instruction). Every split is checked first (live group split once, attribute of its
  // sender, children consistent with the key and the public hierarchy, every non-empty child of
  // at least kmin records), then the splits must be exactly the recomputed winners (none
  // withheld, none for a group no one or someone else won); nothing is applied if one fails.
  absl::Status ApplyWave(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others);

  // The closing wave: after CheckProposals of `wave`, no party proposed anything. Refuses
  // otherwise (the leader would stop the job early). The replicas' final digests then agreed.
  absl::Status CloseWaves(uint64_t wave);
  // SHA-256 over the public state: waves applied, live group ids with their keys, and the group
  // of every common record. Equal at every honest replica before each wave.
  std::string StateDigest() const;

  // Independent check before release (refused unless the closing wave's digests agreed): the
  // records of every distinct released key (this replica's view of the final groups) number at
  // least kmin.
  absl::Status CheckRelease() const;
  // The label of this party's QID attribute `a` for canonical record `r`.
  std::string Label(int a, uint32_t r) const;
  void FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const;

  size_t live_groups() const { return live_.size(); }
  uint64_t kmin() const { return rule_.kmin; }
  const std::vector<int32_t>& group_of() const { return group_of_; }

 private:
  VerticalLocalReplica() = default;
  std::string ValueLabel(int a, const common::LocalValue& v) const;
  absl::Status CheckSplit(const std::string& sender, const fedanon::v1::LocalSplit& split,
                          const std::vector<bool>& split_this_wave) const;

  const common::Dataset* data_ = nullptr;
  const common::PrivacyModel* model_ = nullptr;
  fedanon::v1::JobSpec spec_;
  std::string self_;
  std::vector<std::string> owner_of_;
  std::vector<int> own_attrs_;
  common::LocalRule rule_;
  std::unique_ptr<common::LocalFineMap> fine_;
  std::vector<std::vector<common::LocalValue>> keys_;  // [group]
  std::vector<std::vector<uint32_t>> records_;         // [group] canonical order (live only)
  std::vector<int32_t> live_;                          // live group ids, ascending
  std::vector<int32_t> group_of_;                      // [record]
  uint64_t proposed_wave_ = 0;
  std::vector<std::optional<common::LocalCandidate>> proposed_;  // [index in live_]
  fedanon::v1::LocalProposals proposed_msg_;                     // what Propose returned (unsigned)
  std::optional<std::pair<uint64_t, fedanon::v1::LocalInstruction>> own_instruction_;
  // The wave CheckProposals accepted (0: none) and its winner per group: (party, proposal).
  uint64_t checked_wave_ = 0;
  std::map<uint32_t, std::pair<std::string, fedanon::v1::LocalGroupProposal>> winners_;
  bool closed_ = false;
  std::vector<fedanon::v1::SpecializationStep> steps_;  // centralized order (wave, score, group)
  std::vector<uint32_t> order_id_;  // [group] the id the centralized LocalRecoder gives it
  uint32_t next_order_id_ = 1;
  uint64_t waves_ = 0;
};

}  // namespace fedanon::party
