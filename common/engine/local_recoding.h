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
// The loop is greedy: repeatedly apply the best valid (group, candidate) until none is valid.
// Validity and the choice in a group depend only on that group's records, so the result equals
// specializing each group independently; a priority queue keeps the global order for the report
// and for max_rounds (anytime: stopping early is still private).
//
// Statistics come through LocalGroupSource (the seam a federation would implement with secure
// sums; only the in-process source exists today).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::common {

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
  LocalFineMap(const Dataset* data, bool binned, std::vector<std::vector<int32_t>> bins);
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
  const Dataset* data_;
  bool binned_;
  std::vector<std::vector<int32_t>> bins_;         // [attr] rank bounds
  std::vector<std::vector<int32_t>> bin_of_rank_;  // [attr][rank] -> bin index
  // Taxonomy: per attribute, the node's depth and, per leaf, its ancestors by depth.
  // [attr][depth][node]: index among its siblings of the node's ancestor at depth + 1.
  std::vector<std::vector<std::vector<int32_t>>> fine_at_depth_;
};

// Where a local-recoding run's statistics come from. Groups are numbered by the engine (the
// whole table is group 0). GroupStats answers with words of width W = 1 + C + m (C = number of
// classes, at least 1; m = number of tracked sensitive values), each [count, class_1..C,
// sensitive_1..m]: first the group's own, then for each QID attribute a in order, one per fine
// child f of key[a] (LocalFineMap).
class LocalGroupSource {
 public:
  virtual ~LocalGroupSource() = default;
  // Per range [bounds[i], bounds[i+1]) of ranks of continuous attribute `attr`, the number of
  // records over the whole table (the public cells of binned search).
  virtual absl::StatusOr<std::vector<uint64_t>> RangeCounts(int attr,
                                                            const std::vector<int32_t>& bounds) = 0;
  virtual absl::StatusOr<std::vector<uint64_t>> GroupStats(int32_t group,
                                                           const std::vector<LocalValue>& key) = 0;
  // Splits `group` on attribute `attr`: a record whose fine child of key[attr] is f goes to
  // child child_of_fine[f], which becomes group new_ids[child] (every child a record goes to
  // has an id). The group is then retired.
  virtual absl::Status SplitGroup(int32_t group, const std::vector<LocalValue>& key, int attr,
                                  const std::vector<int>& child_of_fine,
                                  const std::vector<int32_t>& new_ids) = 0;
};

// The in-process source over one data holder's records (centralized run): groups are contiguous
// ranges of one permutation of the record indices, split in place.
class InProcessLocalSource : public LocalGroupSource {
 public:
  explicit InProcessLocalSource(const Dataset* data);
  void set_fine_map(const LocalFineMap* fine) { fine_ = fine; }  // before GroupStats / SplitGroup
  absl::StatusOr<std::vector<uint64_t>> RangeCounts(int attr,
                                                    const std::vector<int32_t>& bounds) override;
  absl::StatusOr<std::vector<uint64_t>> GroupStats(int32_t group,
                                                   const std::vector<LocalValue>& key) override;
  absl::Status SplitGroup(int32_t group, const std::vector<LocalValue>& key, int attr,
                          const std::vector<int>& child_of_fine,
                          const std::vector<int32_t>& new_ids) override;
  // The group of every record (only the final groups' ranges remain meaningful).
  std::vector<int32_t> GroupOfRecords(const std::vector<int32_t>& groups) const;

 private:
  const Dataset* data_;
  const LocalFineMap* fine_ = nullptr;
  std::vector<uint32_t> perm_;
  std::vector<uint32_t> scratch_;
  std::vector<uint16_t> cls_buffer_;                  // GroupStats: the group's classes
  std::vector<uint64_t> sens_buffer_;                 // GroupStats: the group's sensitive bits
  std::vector<std::pair<uint32_t, uint32_t>> range_;  // [group] -> [begin, end) in perm_
};

// The report lists at most this many steps of a local-recoding run (its stop_reason gives the
// total).
inline constexpr size_t kMaxReportedLocalSteps = 1000;

class LocalRecoder {
 public:
  // Fails with FailedPrecondition when even the most general table violates the rule above.
  static absl::StatusOr<std::unique_ptr<LocalRecoder>> Create(const Dataset* data,
                                                              const PrivacyModel* model,
                                                              EngineOptions options);
  // Runs until no (group, candidate) is valid (or max_rounds); returns the stop reason.
  absl::StatusOr<std::string> Run();

  // The final groups, in creation order.
  const std::vector<int32_t>& final_groups() const { return final_; }
  const std::vector<LocalValue>& Key(int32_t g) const { return keys_[g]; }
  uint64_t GroupSize(int32_t g) const { return sizes_[g]; }
  // The label written for value `v` of attribute `a`.
  std::string Label(int a, const LocalValue& v) const;
  // The final group of every record.
  std::vector<int32_t> GroupOfRecords() const { return source_->GroupOfRecords(final_); }
  uint64_t min_group_size() const { return kmin_; }
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
  struct QueueEntry {
    double score;
    int32_t group;
  };

  LocalRecoder(const Dataset* data, const PrivacyModel* model, EngineOptions options);
  absl::Status Initialize();
  // Computes the best valid candidate of a new group; queues it or marks the group final.
  absl::Status Consider(int32_t g);
  absl::Status ApplyBest(int32_t g);
  // Whether child statistics (count + sensitive counts at `w`) meet the rule.
  bool ChildOk(const uint64_t* w) const;

  const Dataset* data_;
  const PrivacyModel* model_;
  EngineOptions options_;
  int q_;
  int num_classes_;
  size_t m_;      // tracked sensitive values
  size_t width_;  // words per fine child: 1 + C + m
  bool has_class_;
  uint64_t kmin_ = 1;
  std::vector<double> bound_;  // per tracked value: the smallest confidence bound (1: none)
  std::unique_ptr<LocalFineMap> fine_;
  std::unique_ptr<InProcessLocalSource> source_;

  std::vector<std::vector<LocalValue>> keys_;  // [group]
  std::vector<uint64_t> sizes_;                // [group]
  std::vector<std::vector<uint64_t>> own_;     // [group] its words [count, classes, sensitive]
  std::vector<Best> best_;                     // [group] (queued groups)
  std::vector<QueueEntry> heap_;
  std::vector<int32_t> final_;
  uint64_t total_records_ = 0;
  std::vector<fedanon::v1::SpecializationStep> steps_;
};

// Calls `emit` once per kept record with its released values for `columns` (indices into
// data.header): QID values replaced by the label of the record's group value, others verbatim.
absl::Status ForEachLocalReleasedRow(
    const fedanon::v1::JobSpec& spec, const Dataset& data, const LocalRecoder& recoder,
    const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit);

}  // namespace fedanon::common
