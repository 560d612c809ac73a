// Local recoding (`recoding: local`, docs/engine.md "Local recoding"): top-down specialization
// where every group (equivalence class: records with the same generalized value on every QID
// attribute) takes its own specializations. Records of different groups may be generalized to
// different levels of the same taxonomy or to different intervals of the same attribute; values
// are always taxonomy nodes, the suppressed value / a disclosed value, or intervals of the
// dynamic numeric tree whose thresholds follow the engine's numeric split rule on the group's
// records (binned: among the boundaries of the global bins; exact: among the present values).
//
// Privacy is enforced with a sound rule on the groups themselves: every group holds at least
// kmin records (the largest k of the model's constraints) and, for every tracked sensitive value,
// a confidence at most the smallest bound any constraint puts on it. Whatever an adversary knows
// about a victim (any combination of QID values), the records whose released values are
// consistent with it form a union of whole groups containing the victim's group, so it has at
// least kmin records and no larger confidence (docs/engine.md gives the proof).
//
// The loop is greedy and runs in waves: every queued group applies its best valid candidate, then
// the statistics of all new groups are fetched in one batch. Validity and the choice in a group
// depend only on that group's records, so the result equals specializing each group
// independently; the steps are reported in the order (wave, score, group id), and max_rounds caps
// them in that order (anytime: stopping early is still private).
//
// Statistics come through LocalGroupSource: in process (InProcessLocalSource) or, in a horizontal
// federation, by ring secure sums (leader/local_group_source.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/final_check.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

// The generalized value of one QID attribute in one group.
//  * taxonomy: `node` is the taxonomy node;
//  * suppression: `node` is the disclosed value code, or -1 for the suppressed value;
//  * continuous: ranks [lo, hi) (the whole range is [0, number of ranks)).
struct LocalValue {
  int32_t node = 0;
  int32_t lo = 0;
  int32_t hi = 0;
  bool operator==(const LocalValue&) const = default;
};

// How records map to the "fine children" of a value (the units the statistics are broken down
// by): taxonomy children; for a continuous interval its bins (binned search) or ranks (exact);
// for the suppressed value every value code of the domain. Public information: the hierarchies,
// the numeric split mode and the bins.
class LocalFineMap {
 public:
  // `bins[a]`: rank bounds of the bins of continuous attribute a (binned search; may be empty).
  LocalFineMap(const table::Dataset* data, bool binned, std::vector<std::vector<int32_t>> bins);
  // Number of fine children of `v` on attribute `a` (0: `v` cannot be refined).
  int FineCount(int a, const LocalValue& v) const;
  // Fine child of a record with code `code` (valid only when FineCount > 0).
  int FineOf(int a, const LocalValue& v, int32_t code) const;
  // Taxonomy: the fine child, under a node at depth `depth`, of every taxonomy node below it
  // (indexed by node id; -1 elsewhere): FineOf without per-record arithmetic.
  const std::vector<int32_t>& TaxonomyFineTable(int a, int depth) const {
    return fine_at_depth_[a][depth];
  }
  // Continuous, binned: the bin of every rank.
  const std::vector<int32_t>& BinOfRank(int a) const { return bin_of_rank_[a]; }
  bool binned() const { return binned_; }
  // Continuous: the rank at the start of fine child `f` of `v`.
  int32_t FineStartRank(int a, const LocalValue& v, int f) const;
  const std::vector<int32_t>& bins(int a) const { return bins_[a]; }

 private:
  const table::Dataset* data_;
  bool binned_;
  std::vector<std::vector<int32_t>> bins_;         // [attr] rank bounds
  std::vector<std::vector<int32_t>> bin_of_rank_;  // [attr][rank] -> bin index
  // Taxonomy: per attribute, the node's depth and, per leaf, its ancestors by depth.
  // [attr][depth][node]: index among its siblings of the node's ancestor at depth + 1.
  std::vector<std::vector<std::vector<int32_t>>> fine_at_depth_;
};

// The words of one group's statistics, each of width W = 1 + C + m (C = number of classes, at
// least 1; m = number of tracked sensitive values), [count, class_1..C, sensitive_1..m]: first the
// group's own, then for each QID attribute a in order, one per fine child f of key[a]
// (LocalFineMap) — except a continuous attribute under binned search, which gets ONE word per
// fine child (the unlabelled record count per global bin inside the group): the leader then merges
// adjacent bins into within-group bins of at least K records and asks for their labelled words
// separately (LocalRangeQuery), the numeric split rule applied per group (docs/threat-model.md).
size_t LocalGroupStatsLength(const table::Dataset& data, const LocalFineMap& fine,
                             const std::vector<LocalValue>& key);

// A group named in a statistics batch: its id and its key (a federation's parties check the key
// against their own record of the group).
struct LocalGroupRef {
  int32_t group = 0;
  std::vector<LocalValue> key;
};

// The labelled words (W each) of continuous attribute `attr` of a group per range of its fine
// children [bounds[i], bounds[i+1]) (fine-child indices, 0 = b_0 < ... < b_m = FineCount: unions
// of whole global bins).
struct LocalRangeQuery {
  int32_t group = 0;
  std::vector<LocalValue> key;
  int attr = 0;
  std::vector<int32_t> bounds;
};

// Splits `group` on attribute `attr`: a record whose fine child of key[attr] is f goes to child
// child_of_fine[f], which becomes group new_ids[child] (-1: an empty child, no record may go
// there). The group is then retired.
struct LocalSplit {
  int32_t group = 0;
  std::vector<LocalValue> key;
  int attr = 0;
  std::vector<int> child_of_fine;
  std::vector<int32_t> new_ids;
};

// The values of the children of value `v` of attribute `a` under a split by `child_of_fine`, if it
// is a candidate of `v`: taxonomy, the identity (child i = the node's i-th child); continuous, a
// threshold strictly inside the interval (0..0 1..1); suppression of the suppressed value, one
// value disclosed (all 1 but one 0). InvalidArgument otherwise (a party's check of an instruction).
absl::StatusOr<std::vector<LocalValue>> LocalChildValues(const table::Dataset& data,
                                                         const LocalFineMap& fine, int a,
                                                         const LocalValue& v,
                                                         const std::vector<int>& child_of_fine);

// The label written for value `v` of attribute `a`.
std::string LocalLabel(const table::Dataset& data, const std::string& suppression_token, int a,
                       const LocalValue& v);

// The root key (the most general value of every attribute).
std::vector<LocalValue> LocalRootKey(const table::Dataset& data);

// Where a local-recoding run's statistics come from. Groups are numbered by the engine (the
// whole table is group 0). Batched: the loop runs in waves (every queued group applies its best
// candidate, then the statistics of all new groups are fetched at once), so a federation needs a
// few secure sums per wave instead of one per group.
class LocalGroupSource {
 public:
  virtual ~LocalGroupSource() = default;
  // Per range [bounds[i], bounds[i+1]) of ranks of continuous attribute `attr`, the number of
  // records over the whole table (the public cells of binned search).
  virtual absl::StatusOr<std::vector<uint64_t>> RangeCounts(int attr,
                                                            const std::vector<int32_t>& bounds) = 0;
  // The fine map (with the bins, fixed from RangeCounts) every later request uses: called once,
  // before any other request below (a federation announces the bins to the parties).
  virtual absl::Status UseFineMap(const LocalFineMap* fine) = 0;
  // Per group, its words (LocalGroupStatsLength).
  virtual absl::StatusOr<std::vector<std::vector<uint64_t>>> GroupStatsBatch(
      const std::vector<LocalGroupRef>& groups) = 0;
  // Per query, (bounds.size() - 1) * W labelled words.
  virtual absl::StatusOr<std::vector<std::vector<uint64_t>>> RangeStatsBatch(
      const std::vector<LocalRangeQuery>& queries) = 0;
  virtual absl::Status SplitGroups(const std::vector<LocalSplit>& splits) = 0;
};

// The in-process source over one data holder's records (centralized run, and each party of a
// federation over its own records): groups are contiguous ranges of one permutation of the record
// indices, split in place.
class InProcessLocalSource : public LocalGroupSource {
 public:
  explicit InProcessLocalSource(const table::Dataset* data);
  absl::StatusOr<std::vector<uint64_t>> RangeCounts(int attr,
                                                    const std::vector<int32_t>& bounds) override;
  absl::Status UseFineMap(const LocalFineMap* fine) override {
    fine_ = fine;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::vector<uint64_t>>> GroupStatsBatch(
      const std::vector<LocalGroupRef>& groups) override;
  absl::StatusOr<std::vector<std::vector<uint64_t>>> RangeStatsBatch(
      const std::vector<LocalRangeQuery>& queries) override;
  absl::Status SplitGroups(const std::vector<LocalSplit>& splits) override;
  // The group of every record (only the given groups' ranges count; -1 elsewhere).
  std::vector<int32_t> GroupOfRecords(const std::vector<int32_t>& groups) const;
  // The released counts (integration by a secure sum, docs/federation.md "Local recoding"): per
  // group of `groups` in order, data.ValueCombinations() words, the number of its records per
  // combination of the declared non-QID values (the first value column most significant, as
  // Tips::AppendReleasedCounts). Empty when the domain is not declared or the vector would exceed
  // kMaxLocalReleasedWords.
  std::vector<uint64_t> ReleasedCounts(const std::vector<int32_t>& groups) const;

 private:
  // Every word W wide, continuous ones too (the old single-group layout).
  absl::StatusOr<std::vector<uint64_t>> FullStats(int32_t group,
                                                  const std::vector<LocalValue>& key);
  // FullStats of several groups at once, on every core (per group, then per group and attribute).
  absl::StatusOr<std::vector<std::vector<uint64_t>>> FullStatsBatch(
      const std::vector<std::pair<int32_t, const std::vector<LocalValue>*>>& groups);
  // Reorders the group's slice of perm_ by child and leaves the children's offsets in `count`
  // (children + 1 entries); touches only the group's slices of perm_, scratch_ and child_buffer_,
  // so several groups may be partitioned at once.
  absl::Status PartitionGroup(const LocalSplit& split, std::vector<uint32_t>* count);

  const table::Dataset* data_;
  const LocalFineMap* fine_ = nullptr;
  std::vector<uint32_t> perm_;
  std::vector<uint32_t> scratch_;
  std::vector<uint32_t> child_buffer_;                // PartitionGroup: each record's child
  std::vector<uint16_t> cls_buffer_;                  // FullStatsBatch: the groups' classes
  std::vector<uint64_t> sens_buffer_;                 // FullStatsBatch: their sensitive bits
  std::vector<std::pair<uint32_t, uint32_t>> range_;  // [group] -> [begin, end) in perm_
  // The full words of the last batch's groups that have a binned continuous attribute (the
  // range queries that follow read them instead of another pass over the records).
  std::vector<std::pair<int32_t, std::vector<uint64_t>>> full_cache_;
};

// The largest released-counts vector (final groups x value combinations) a local job asks for:
// the same bound as global recoding's released counts (common/engine/tips.cc).
inline constexpr uint64_t kMaxLocalReleasedWords = 50'000'000;

// The final check of a local-recoding job (docs/threat-model.md): `groups` final groups, words
// [count, tracked_1..m] each (stride 1 + m), and the rule LocalRecoder enforces — every non-empty
// group >= the largest k, and per tracked value the smallest confidence bound on it — as
// constraints over those words (one for the size, one per distinct bound).
absl::StatusOr<FinalCheckLayout> LocalFinalCheckLayout(const PrivacyModel& model,
                                                       const table::Dataset& data, uint64_t groups);

// The report lists at most this many steps of a local-recoding run (its stop_reason gives the
// total).
inline constexpr size_t kMaxReportedLocalSteps = 1000;

class LocalRecoder {
 public:
  // Fails with FailedPrecondition when even the most general table violates the rule above.
  // `source`: where the statistics come from (not owned; null: the in-process source over
  // `data`'s records).
  static absl::StatusOr<std::unique_ptr<LocalRecoder>> Create(const table::Dataset* data,
                                                              const PrivacyModel* model,
                                                              EngineOptions options,
                                                              LocalGroupSource* source = nullptr);
  // Runs in waves until no (group, candidate) is valid: in each wave every queued group applies
  // its best candidate, in the order (score descending, group id ascending); max_rounds caps the
  // applied steps taken in the order (wave, score, group id). Returns the stop reason.
  absl::StatusOr<std::string> Run();

  // The final groups, in creation order.
  const std::vector<int32_t>& final_groups() const { return final_; }
  const std::vector<LocalValue>& Key(int32_t g) const { return keys_[g]; }
  uint64_t GroupSize(int32_t g) const { return sizes_[g]; }
  // The label written for value `v` of attribute `a`.
  std::string Label(int a, const LocalValue& v) const {
    return LocalLabel(*data_, options_.suppression_token, a, v);
  }
  // The final group of every record (in-process source only).
  std::vector<int32_t> GroupOfRecords() const { return owned_source_->GroupOfRecords(final_); }
  uint64_t min_group_size() const { return kmin_; }
  const std::string& suppression_token() const { return options_.suppression_token; }
  // Records a within-group bin must hold before its labelled counts are asked for.
  uint64_t within_group_bin() const { return within_bin_; }
  uint64_t total_records() const { return total_records_; }
  const LocalFineMap& fine_map() const { return *fine_; }
  const std::vector<fedanon::v1::SpecializationStep>& steps() const { return steps_; }
  double DiscernibilityRatio() const;
  // Fills the result part of a report (steps, cut, groups, smallest group = smallest final group,
  // largest confidence over bounded values, discernibility ratio, constraints, stop reason).
  void FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const;

 private:
  struct Best {
    int attr = -1;
    int c = -1;  // suppression: the disclosed value code; continuous: the threshold fine
    double score = 0;
    double info_gain = 0;
    std::vector<uint64_t> child_sizes;  // per child
    std::vector<int> child_of_fine;
  };

  LocalRecoder(const table::Dataset* data, const PrivacyModel* model, EngineOptions options);
  absl::Status Initialize();
  // Fetches the statistics of new groups (one batch, then one batch of within-group bins) and
  // computes each one's best valid candidate: queued for the next wave, or the group is final.
  absl::Status ConsiderBatch(const std::vector<int32_t>& groups);
  // `stats`: the group's words; `ranges[a]`: for a binned continuous attribute, the within-group
  // bin bounds (fine units) and their labelled words (empty: not refinable).
  void Consider(int32_t g, const std::vector<uint64_t>& stats,
                const std::vector<std::pair<std::vector<int32_t>, std::vector<uint64_t>>>& ranges);
  // Creates the children of `g` by its best candidate; appends the split to `splits` and the new
  // ids to `created`.
  void ApplyBest(int32_t g, std::vector<LocalSplit>* splits, std::vector<int32_t>* created);
  // Whether child statistics (count + sensitive counts at `w`) meet the rule.
  bool ChildOk(const uint64_t* w) const;

  const table::Dataset* data_;
  const PrivacyModel* model_;
  EngineOptions options_;
  int q_;
  int num_classes_;
  size_t m_;      // tracked sensitive values
  size_t width_;  // words per fine child: 1 + C + m
  bool has_class_;
  uint64_t kmin_ = 1;
  std::vector<double> bound_;  // per tracked value: the smallest confidence bound (1: none)
  uint64_t within_bin_ = 1;
  std::unique_ptr<LocalFineMap> fine_;
  std::unique_ptr<InProcessLocalSource> owned_source_;
  LocalGroupSource* source_ = nullptr;

  std::vector<std::vector<LocalValue>> keys_;  // [group]
  std::vector<uint64_t> sizes_;                // [group]
  std::vector<std::vector<uint64_t>> own_;     // [group] its words [count, classes, sensitive]
  std::vector<Best> best_;                     // [group] (queued groups)
  std::vector<int32_t> queue_;                 // the groups of the next wave
  std::vector<int32_t> final_;
  uint64_t total_records_ = 0;
  std::vector<fedanon::v1::SpecializationStep> steps_;
};

// Calls `emit` once per kept record with its released values for `columns` (indices into
// data.header): QID values replaced by the label of the record's group value, others verbatim.
absl::Status ForEachLocalReleasedRow(
    const fedanon::v1::JobSpec& spec, const table::Dataset& data, const LocalRecoder& recoder,
    const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit);
// The same from the final groups' keys and each record's final group (a federation's party,
// which holds its own records' groups).
absl::Status ForEachLocalReleasedRow(
    const table::Dataset& data, const std::string& suppression_token,
    const std::vector<int32_t>& final_groups,
    const std::function<const std::vector<LocalValue>&(int32_t)>& key_of,
    const std::vector<int32_t>& group_of_record, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit);

}  // namespace fedanon::engine
