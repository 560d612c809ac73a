// Top-down specialization for sequential anonymization (TDSSA, fung2007 thesis Alg. 4, §6.3):
// specializes the current release T1 from its most general state while the join with the
// previous release T2 keeps satisfying every privacy template of a SequentialModel.
//
// This is a separate loop from TopDownSpecializer because validity is a property of the lossy
// join, not of T1's groups: specializing a join attribute changes which records match, so a
// candidate's effect reaches x values whose T1 part does not even contain the candidate.
//
// The join is never materialized (§6.3.1). T1 is held as partitions by the attributes that
// reach the join — X ∩ att(T1) of some template and the join attributes (Tree1), further split by
// the raw values of join attributes released unchanged — and T2 as static
// partitions grouped by their join values (Tree2). For every template, each value x on X keeps
// the list of matching partition pairs (P1, P2) that produce it (the XTree / CTree), and a(x),
// a(x, y) or the number of distinct Y values are computed from per-partition statistics:
// |P1| x |P2| join records, distinct Y sets combined pairwise (§6.3.2; the thesis' cases 1-4 are
// the fast paths, other Y are counted exactly with a hash set). A candidate is evaluated by
// splitting only the partitions on Link[v] and recomputing only the x values they touch. A
// candidate on any other QID attribute leaves the join unchanged: it is always valid and only
// TIPS (the released table) is specialized. A candidate's InfoGain depends on T[v] only and is
// computed once, when it is created.
//
// Pruning (Cor. 6.2.1): privacy is anti-monotone in the specialization of T1 only under
// conditions, so a candidate found invalid is dropped for good only when every template meets
// one (see `prunable()`); otherwise invalid candidates are re-checked every round, so that the
// result is maximal either way. The conditions assume population-related releases (every record
// of each matches some record of the other, Lemma 6.2.1), which Create() checks on the raw
// tables. The run is refused up front when the most general T1 violates a template (Cor. 6.2.2;
// TDS cannot start from a violating state). Privacy of the output never depends on the pruning:
// every applied candidate was checked exactly on the join.
//
// Scores (§6.2.1): InfoGain of the class on T1, GainRatio, or InfoGain / (PrivLoss + 1) with
// PrivLoss measured on the join. Scores and ties (higher score, lower attribute index, lower node
// order key, lower candidate index) are those of candidate_score.h, shared with
// TopDownSpecializer. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/sequential/sequential_release.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::sequential {

struct SequentialOptions {
  fedanon::v1::ScoreFunction score = fedanon::v1::SCORE_FUNCTION_INFOGAIN;
  bool beneficial = false;
  std::string suppression_token = "*";
  uint32_t max_rounds = 0;  // 0: unlimited
  std::function<void(const fedanon::v1::SpecializationStep&)> on_step;
};

class SequentialSpecializer {
 public:
  // Nothing is owned; `hierarchies` and `tips` (over `data`, at the most general state) are
  // specialized in place. FailedPrecondition when the releases are not population-related (the
  // first dangling record by file:line) or the most general T1 violates a template.
  static absl::StatusOr<std::unique_ptr<SequentialSpecializer>> Create(
      const table::Dataset* data, const SequentialModel* model,
      std::vector<engine::AttributeHierarchy>* hierarchies, engine::Tips* tips,
      SequentialOptions options);

  // Runs until no candidate is valid (or max_rounds). Returns the reason it stopped.
  absl::StatusOr<std::string> Run();

  const std::vector<fedanon::v1::SpecializationStep>& steps() const { return steps_; }
  // Per template of the model: A_Y(X) (anonymity) or C_Y(X) (confidentiality) of the current join.
  const std::vector<double>& template_values() const { return values_; }
  // Number of records in the current join (sum of |P1| x |P2| over matching pairs).
  uint64_t join_records() const { return join_records_; }
  // Whether invalid candidates are pruned for good: every anonymity template has X within T1
  // (a value on X then never disappears from the join, and its Y values only shrink), and every
  // confidentiality template has every join attribute and every inconsistency rule's attribute,
  // a taxonomy QID of T1, in X on both sides (then c_y(x) depends on one side's partition only
  // and the thesis' Lemma 6.2.2 argument holds).
  // Otherwise a value (x1, x2) can vanish from the join when T1 is specialized and A_Y(X) can
  // rise, or C_Y(X) can fall (e.g. X = {current.A, previous.J} with J a join attribute).
  bool prunable() const { return prunable_; }
  // Fills steps, cut, groups (T1 generalized records), smallest_group (min A over anonymity
  // templates, 0 if none), largest_confidence, constraints_checked and stop_reason.
  void FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const;

 private:
  // Per-partition statistics: record count, class counts and per template either the sorted
  // distinct Y codes of its side (anonymity) or the counts of the sensitive values (confidentiality
  // with Y on that side); empty when the template needs nothing from this side.
  struct Stats {
    uint64_t count = 0;
    std::vector<std::vector<uint64_t>> per_template;
  };
  struct Part1 {
    std::vector<engine::NodeIndex>
        key;                    // per QID attribute (the root for attributes not in joined_)
    std::vector<int32_t> join;  // per slot: taxonomy node or raw code
    std::vector<uint32_t> records;
    Stats stats;
    bool alive = true;
  };
  struct Part2 {
    int32_t group = -1;            // index into groups2_
    std::vector<int32_t> x2;       // per template: id of its value on X ∩ att(T2)
    std::vector<int32_t> example;  // codes of previous_columns (for messages)
    Stats stats;
  };
  struct Group2 {
    std::vector<int32_t> join;  // per slot: T2 value code
    std::vector<int32_t> parts;
    int32_t first_record = -1;  // a T2 record of the group (for messages)
  };
  struct PairRef {
    const Stats* p1;
    int32_t p2;
  };
  struct XEntry {
    std::vector<std::pair<int32_t, int32_t>> pairs;  // (P1, P2)
    double value = 0;
  };
  struct Candidate {
    int attr;
    engine::NodeIndex node;
    int c;
    bool alive = true;
    bool valid = false;
    bool beneficial = false;
    double info_gain = 0, split_info = 0, priv_loss = 0, score = 0;
    uint64_t records = 0;
    uint64_t distortion_units = 0;  // engine::SplitMeasures::distortion_units
    uint64_t join_version = 0;      // join_version_ when last evaluated (0: never)
  };

  SequentialSpecializer(const table::Dataset* data, const SequentialModel* model,
                        std::vector<engine::AttributeHierarchy>* hierarchies, engine::Tips* tips,
                        SequentialOptions options);
  absl::Status Initialize();
  // The matching slots, which QID attributes reach the join and whether pruning is exact.
  void InitializeSlots();
  // y1_codes_ / y2_codes_ of the anonymity templates.
  void EncodeYCodes();
  // T2's partitions by (join values, X2 values of every template), grouped by join values (Tree2).
  void BuildPreviousPartitions();
  // T1's partitions at the most general state (Tree1), with the first splits of continuous roots.
  void BuildMostGeneralCurrent();
  // Cor. 6.2.2: the most general T1 must satisfy every template (checked on the built join).
  absl::Status CheckMostGeneralSatisfies() const;
  absl::Status CheckPopulationRelated() const;
  // The statistics of the given records of T1 (`previous` false) or T2 (true).
  Stats ComputeStats(const std::vector<uint32_t>& records, bool previous) const;
  int32_t AddPart1(std::vector<engine::NodeIndex> key, std::vector<int32_t> join,
                   std::vector<uint32_t> records);
  bool Matches(const std::vector<int32_t>& join, const Group2& g) const;
  std::string XKey(size_t t, const std::vector<engine::NodeIndex>& key, int placeholder_attr,
                   int placeholder_child, const Part2& p2) const;
  double Measure(size_t t, const std::vector<PairRef>& pairs) const;
  bool Satisfies(size_t t, double value) const;
  void RebuildJoin();
  // A T1 partition split by a candidate's children, as it would be after applying it.
  struct Hyp {
    int32_t parent;
    int child;
    std::vector<int32_t> join;
    Stats stats;
  };
  // The live T1 partitions on Link[node] of attribute `attr`.
  std::vector<int32_t> LiveLink(int attr, engine::NodeIndex node) const;
  // The partitions on `link` split by the children of `cand` (the hypothetical specialized T1).
  std::vector<Hyp> SplitLink(const Candidate& cand, const std::vector<int32_t>& link) const;
  // For template `t`: every x value that the partitions on `link` reach, with the new pairs that
  // the split partitions `hyps` give it (the PairRefs point into `hyps`).
  absl::flat_hash_map<std::string, std::vector<PairRef>> ChangedX(
      size_t t, const Candidate& cand, const std::vector<int32_t>& link,
      const std::vector<Hyp>& hyps) const;
  // The pairs of x value `x` of template `t` once the partitions on Link[v] (`in_link`) are
  // replaced: its other pairs, then `fresh` (empty: x leaves the join).
  std::vector<PairRef> PairsAfter(size_t t, const std::string& x, const std::vector<PairRef>& fresh,
                                  const absl::flat_hash_set<int32_t>& in_link) const;
  void Evaluate(Candidate& cand);
  double Score(const Candidate& cand) const;
  // Evaluates every live candidate (dropping those found invalid for good when prunable) and
  // returns the best valid one (candidate_score.h's ranking), or -1.
  int PickBest();
  void AddCandidates(int attr, engine::NodeIndex node);  // with their InfoGain, from TIPS
  void Apply(Candidate& cand);
  std::string DescribeX(size_t t, const XEntry& entry) const;

  const table::Dataset* data_;
  const SequentialModel* model_;
  std::vector<engine::AttributeHierarchy>* hier_;
  engine::Tips* tips_;
  SequentialOptions options_;
  int num_classes_;

  // Per template, per record: the code of its Y value on T1's / T2's side (anonymity).
  std::vector<std::vector<uint32_t>> y1_codes_, y2_codes_;
  // What a T1 partition is matched on: the join attributes, then the inconsistency rules' T1
  // attributes (a taxonomy QID or a raw column), each against a T2 column.
  struct Slot {
    std::string name;
    int qid;
    int current_raw;
    int previous;
  };
  std::vector<Slot> slots_;
  std::vector<std::vector<int>> slots_of_qid_;  // QID index -> slots holding its value
  std::vector<bool> joined_;  // QID index -> in some X or a join attribute (Tree1)

  std::vector<Part1> parts1_;
  std::vector<std::vector<std::vector<int32_t>>> link_;  // [attr][node] -> Part1 ids
  std::vector<Part2> parts2_;
  std::vector<Group2> groups2_;

  std::vector<absl::flat_hash_map<std::string, XEntry>> xmaps_;  // per template
  std::vector<double> values_;
  uint64_t join_records_ = 0;
  uint64_t join_version_ = 0;  // bumped by every RebuildJoin
  bool prunable_ = true;

  std::vector<Candidate> cands_;
  std::vector<fedanon::v1::SpecializationStep> steps_;
};

}  // namespace fedanon::sequential
