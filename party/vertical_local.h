// A data party's replica of a vertical local-recoding job (`recoding: local`, docs/vertical.md
// "Local recoding"): the public groups (every group's key and the group of every common record,
// in canonical order), this party's per-group proposals on its own attributes, the instruction
// for the groups it won, and the checked application of a wave's instructions. Groups are public
// to the data parties (every applied split reaches every replica); a party knows the values of
// its own attributes only. No gRPC types.
#pragma once

#include <cstdint>
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

  // This wave's proposals: for every live group, the best valid candidate on own attributes.
  // Kept until the wave is applied (the owner instructs only what it proposed).
  fedanon::v1::LocalProposals Propose(uint64_t wave);
  // The owner: the splits of the groups the leader says it won (each must be its own proposal of
  // this wave); kept, and applied with the wave.
  absl::StatusOr<fedanon::v1::LocalInstruction> MakeInstruction(
      uint64_t wave, const fedanon::v1::LocalWinners& won);
  // Applies the wave: this party's own instruction (if it won groups) and every other owner's
  // (sender, instruction). Every split is checked first (live group split once, attribute of its
  // sender, children consistent with the key and the public hierarchy, every non-empty child of
  // at least kmin records); nothing is applied if one fails.
  absl::Status ApplyWave(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others);

  // Independent check before release: the records of every distinct released key (this
  // replica's view of the final groups) number at least kmin.
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
  std::optional<std::pair<uint64_t, fedanon::v1::LocalInstruction>> own_instruction_;
  std::vector<fedanon::v1::SpecializationStep> steps_;  // in the order applied (wave, group)
  // Per step: its wave, the group it split and the id of its first child (the others follow);
  // FillReport puts the steps in the centralized order with them.
  struct StepOrigin {
    uint64_t wave = 0;
    int32_t group = 0;
    int32_t first_child = 0;
  };
  std::vector<StepOrigin> step_origin_;
  uint64_t waves_ = 0;
};

}  // namespace fedanon::party
