// A data party's replica of a vertical local-recoding job (`recoding: local`, docs/vertical.md
// "Local recoding"): the public groups (every group's key and the group of every common record,
// in canonical order), this party's per-group proposals on its own attributes, the instruction
// for the groups it won, and the checked application of a wave's instructions. Groups are public
// to the data parties (every applied split reaches every replica); a party knows the values of
// its own attributes only. With a confidence bound the holders of the bounded sensitive values
// (the judges) check every winning split of a wave on their values and sign per-group verdicts;
// only accepted splits are applied and a vetoed candidate is excluded from its group's later
// proposals. No gRPC types.
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
#include "party/party_deviation.h"

namespace fedanon::party {

// The named reason a replica refuses a wave (a deviating leader, or an owner's bad instruction).
inline constexpr char kRefusedLocalWave[] = "refused to apply a local-recoding wave";

class VerticalLocalReplica {
 public:
  // `data`: the joined schema with this party's codes (canonical order; not owned);
  // `owner_of`: per QID attribute, the party that holds it. Fails when even the whole table
  // breaks the local rule. The judges come from the spec (spec::VerticalLocalJudges).
  static absl::StatusOr<std::unique_ptr<VerticalLocalReplica>> Create(
      const table::Dataset* data, const engine::PrivacyModel* model,
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
  // (engine::RanksAbove: score, lower attribute, lower candidate), which MakeInstruction and
  // ApplyWave check the leader's announcement and the instructions against.
  absl::Status CheckProposals(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalProposals>>& proposals);
  // The groups whose recomputed winner (CheckProposals of the current wave) is this party's
  // proposal, in group order (`won` only): what the leader's count and digest must match.
  fedanon::v1::LocalWinners OwnWinners() const;
  // How many groups this party's proposals of the current wave name.
  size_t proposed_count() const { return static_cast<size_t>(proposed_msg_.proposals_size()); }
  // The owner: the splits of the groups the leader says it won. Refuses unless they are exactly
  // the groups whose recomputed winner is this party's proposal (CheckProposals of this wave).
  absl::StatusOr<fedanon::v1::LocalInstruction> MakeInstruction(
      uint64_t wave, const fedanon::v1::LocalWinners& won);
  // Applies the wave: this party's own instruction (if it won groups) and every other owner's
  // (sender, instruction); a judge also the instructions it judged. With judges (after
  // CheckVerdicts) exactly the accepted winners are applied: a relayed split of a vetoed group,
  // or an accepted winner's split missing, is refused; a vetoed candidate is remembered. Every
  // split is checked first (live group split once, attribute of its sender, children consistent
  // with the key and the public hierarchy, every non-empty child of at least kmin records), then
  // the splits must be exactly the recomputed winners (none withheld, none for a group no one or
  // someone else won); nothing is applied if one fails.
  absl::Status ApplyWave(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others);

  // A judge (after CheckProposals of `wave`): the other owners' instructions of the wave as
  // (sender, instruction). Refuses unless their splits are exactly the recomputed winners of the
  // other parties (each checked as ApplyWave does); kept for ApplyWave. Returns one verdict per
  // such group (group order): reject when a non-empty child's confidence in a sensitive value
  // this party holds exceeds its bound (the centralized rule, kConfidenceEpsilon). Unsigned.
  absl::StatusOr<fedanon::v1::LocalVerdicts> Judge(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_owners);
  // Every judge's verdicts of `wave` (signatures checked by the caller): exactly one list per
  // judge, each naming exactly the winners of the other parties (group, attribute, candidate, in
  // group order). Fixes the wave's vetoed groups (any judge's reject).
  absl::Status CheckVerdicts(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalVerdicts>>& verdicts);
  // The owner, after CheckVerdicts: its instruction of the wave without the vetoed splits (what
  // the parties that are not judges receive).
  absl::StatusOr<fedanon::v1::LocalInstruction> PublishInstruction(uint64_t wave);

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
  const std::vector<std::string>& judges() const { return judges_; }
  bool is_judge() const;
  // Winners vetoed so far (every wave).
  uint64_t vetoes() const { return vetoes_; }
  uint64_t kmin() const { return rule_.kmin; }
  const std::vector<int32_t>& group_of() const { return group_of_; }
  // How this party deviates (party/party_deviation.h: the score it declares for a group); null:
  // it does not.
  void SetDeviation(const PartyDeviation* deviation) { deviation_ = deviation; }

 private:
  VerticalLocalReplica() = default;
  std::string ValueLabel(int a, const engine::LocalValue& v) const;
  absl::Status CheckSplit(const std::string& sender, const fedanon::v1::LocalSplit& split,
                          const std::vector<bool>& split_this_wave) const;
  // Another party's won split of group `g`: its declared score must not exceed what the split
  // gives on the class (engine::OverstatesScore), unless the score needs sensitive values.
  absl::Status CheckDeclaredScore(int32_t g, const fedanon::v1::LocalSplit& split) const;
  // FillReport's steps in the order the centralized recoder takes them (at most
  // kMaxReportedLocalSteps; returns how many are listed) and its final cut.
  size_t AddStepsInCentralizedOrder(fedanon::v1::Report* report) const;
  void AddCut(fedanon::v1::Report* report) const;
  // A wave's splits by group, each with the party that instructs it (ApplyWave's phases).
  using WaveSplits = std::map<int32_t, std::pair<std::string, const fedanon::v1::LocalSplit*>>;
  // Every instruction of `wave` (this party's own, those it judged, `from_others`) checked and its
  // splits gathered; a judge's vetoed splits left out. Points into the instructions.
  absl::StatusOr<WaveSplits> CheckedWaveSplits(
      uint64_t wave,
      const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others) const;
  // The splits are exactly the wave's recomputed winners (with judges: the accepted ones), each
  // other party's with a score its split can give.
  absl::Status CheckSplitsAreTheWinners(uint64_t wave, const WaveSplits& splits) const;
  // Splits group `g`: its children join `next_live`, its records move to them, the step is kept
  // for the report.
  void ApplySplit(int32_t g, const fedanon::v1::LocalSplit& split, std::vector<int32_t>* next_live);

  const table::Dataset* data_ = nullptr;
  const engine::PrivacyModel* model_ = nullptr;
  fedanon::v1::JobSpec spec_;
  std::string self_;
  std::vector<std::string> owner_of_;
  std::vector<int> own_attrs_;
  engine::LocalRule rule_;
  const PartyDeviation* deviation_ = nullptr;
  std::unique_ptr<engine::LocalFineMap> fine_;
  std::vector<std::vector<engine::LocalValue>> keys_;  // [group]
  std::vector<std::vector<uint32_t>> records_;         // [group] canonical order (live only)
  std::vector<int32_t> live_;                          // live group ids, ascending
  std::vector<int32_t> group_of_;                      // [record]
  uint64_t proposed_wave_ = 0;
  std::vector<std::optional<engine::LocalCandidate>> proposed_;  // [index in live_]
  fedanon::v1::LocalProposals proposed_msg_;                     // what Propose returned (unsigned)
  std::optional<std::pair<uint64_t, fedanon::v1::LocalInstruction>> own_instruction_;
  // The wave CheckProposals accepted (0: none) and its winner per group: (party, proposal).
  uint64_t checked_wave_ = 0;
  std::map<uint32_t, std::pair<std::string, fedanon::v1::LocalGroupProposal>> winners_;
  bool closed_ = false;
  // Every applied split: the report orders them as the centralized recoder would (FillReport).
  struct Applied {
    uint32_t depth;  // the parent's depth: the split's logical (centralized) wave - 1
    double score;
    int32_t parent;
    std::vector<int32_t> children;  // public ids of the non-empty children, in child order
    fedanon::v1::SpecializationStep step;
  };
  std::vector<Applied> applied_;
  std::vector<uint32_t> depth_;  // [group] number of splits from the root
  uint64_t waves_ = 0;
  // Confidence bounds (judges_ non-empty): the vetoed candidates (attribute, candidate) of live
  // groups, the instructions this judge judged in `judged_wave_`, and the vetoed groups of the
  // wave whose verdicts CheckVerdicts accepted.
  std::vector<std::string> judges_;
  std::map<int32_t, std::vector<std::pair<int, int>>> vetoed_;
  uint64_t judged_wave_ = 0;
  std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>> judged_;
  uint64_t verdicts_wave_ = 0;
  std::map<uint32_t, bool> vetoed_now_;  // winning group -> vetoed
  uint64_t vetoes_ = 0;
};

}  // namespace fedanon::party
