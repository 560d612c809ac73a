// Top-down specialization (TDS/TDR; mohammed2010 Alg. 1, fung2007 Alg. 1): starting from the
// most general table, repeatedly apply the valid candidate with the best score until none is
// valid. This class is the "leader" half of the loop: it sees only global count statistics
// (through a CountSource) and the public hierarchies, never records.
//
// Validity is maintained incrementally. A candidate v on attribute a is valid iff, for every
// constraint X_j containing a, every group of X_j that holds v splits into child groups that
// meet k_j and the confidence bound. Applying w on attribute b only changes groups whose
// b-value was w, and every group of a projection onto X_j ∋ b that now holds a child of w is
// new; so after w the engine re-checks each candidate only on the new groups and only for the
// constraints containing both a and b. Since splitting can only shrink groups and raise the
// maximum confidence (thesis Thm. 5.1.1), keeping the running minimum / maximum per constraint
// is exact. The current table's A(X_j) and C(X_j) follow from the applied candidate's values.
//
// Scores and the deterministic tie-break from public information only (higher score, then lower
// attribute index, then lower node order key, then lower candidate index) are those of
// candidate_score.h, shared with the sequential-release loop. Continuous splits take the
// threshold of maximal information gain, ties (within 1e-9) to the smallest threshold; with
// binned numeric split search (numeric_split.h, the default) the thresholds are the boundaries of
// bins of at least K records fixed once at the root, whose class counts are the only ones used.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/engine/candidate_score.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

struct EngineOptions {
  fedanon::v1::ScoreFunction score = fedanon::v1::SCORE_FUNCTION_INFOGAIN;
  bool beneficial = false;  // only candidates whose records span > 1 class
  std::string suppression_token = "*";
  uint32_t max_rounds = 0;  // 0: unlimited (anytime: stop early and still be valid)
  // Federated jobs: the most records the table may hold (the signed max_records_per_party times
  // the parties); a root count above it is refused by name (kRootCountAboveLimit), so that the
  // parties' summed word sizes nothing. 0: unlimited.
  uint64_t max_records = 0;
  NumericSplitConfig numeric;  // threshold search on continuous attributes
  // Called after every applied specialization.
  std::function<void(const fedanon::v1::SpecializationStep&, size_t groups)> on_step;
};

// Chooses the split threshold (a rank in (first present rank, rank_hi)) of a continuous node from
// its class histogram (see Tips::RankClassHistogram); -1 if fewer than two values are present.
// `has_class` false: the most balanced split.
int32_t ChooseSplitRank(const std::vector<uint64_t>& histogram, int num_classes, int32_t rank_lo,
                        bool has_class);

// The named reason a root count above EngineOptions::max_records is refused.
inline constexpr char kRootCountAboveLimit[] = "the parties' summed root count";

// DataLoss "the parties' summed root count N exceeds the job's limit of M records (...)" when
// `max_records` is set and `total` exceeds it; OK otherwise.
absl::Status CheckRootCount(uint64_t total, uint64_t max_records);

// The named reason a replica refuses to apply a specialization its own check of the privacy model
// rejects (vertical jobs: every replica re-checks what it applies, whoever chose it).
inline constexpr char kRefusedSpecialization[] =
    "refused to apply a specialization that fails this party's own check of the privacy model";

// The named reason a replica refuses a winner whose proposer declared a higher score than the
// split gives (a party that signed 1e300 would otherwise win every round it enters).
inline constexpr char kScoreOverstated[] =
    "refused a winner whose declared score exceeds the score its split gives";

// Whether `declared` is above `computed` beyond rounding (or is not a number): what a replica that
// computes a winner's score refuses. A lower declared score is the proposer's own loss
// (mohammed2011 §6's under-declaring party) and is accepted.
bool OverstatesScore(double declared, double computed);

// A candidate as the leader sees it (for reports, progress and tests).
struct CandidateView {
  std::string attribute;
  std::string value;  // the value to specialize ("⊥ -> v" style for disclosures)
  double info_gain = 0;
  double split_info = 0;
  double priv_loss = 0;
  double score = 0;
  uint64_t records = 0;
  bool valid = false;
  bool beneficial = false;
};

class TopDownSpecializer {
 public:
  // `data` supplies only public facts (schema, class labels, tracked values); counts come from
  // `source`. Nothing is owned. Fails with FailedPrecondition when even the most general table
  // violates the model (naming the constraint and the best achievable value).
  static absl::StatusOr<std::unique_ptr<TopDownSpecializer>> Create(
      const table::Dataset* data, const PrivacyModel* model,
      std::vector<AttributeHierarchy>* hierarchies, CountSource* source, EngineOptions options);

  // Runs until no candidate is valid (or max_rounds). Returns the reason it stopped.
  absl::StatusOr<std::string> Run();

  // Driving one replica of the loop per party (vertical federation, mohammed2011 Alg. 1): each
  // party proposes its best owned candidate, the winner is chosen across parties with the same
  // tie-break as PickBest, and every replica applies it.
  struct Choice {
    int attr = -1;
    NodeIndex node = -1;
    int c = -1;
    double score = 0;
    double order_key = 0;  // hierarchy OrderKey of the node (public), for the tie-break
  };
  // The best valid candidate on an attribute the source owns, if any.
  std::optional<Choice> BestOwned() const;
  // True when `a` beats `b` under the engine's tie-break.
  static bool Beats(const Choice& a, const Choice& b);
  // Work done measuring and checking candidates so far: fine-child entries summed (a ⊥ node's
  // candidate counts 1 per group). Near-linear in the hidden values; tests assert it.
  uint64_t evaluation_work() const { return work_; }
  // Refreshes the statistics of the groups holding `node` from the source (whose records have
  // just learnt their child under the candidate) and re-evaluates the candidate on them; returns
  // whether it is valid (e.g. the sensitive-attribute holder's check of mohammed2011 §8).
  absl::StatusOr<bool> Recheck(int attr, NodeIndex node, int c);
  // Whether the candidate is valid as this replica sees it (for an owned attribute: exactly, up to
  // the confidence bounds of sensitive values the source does not hold).
  absl::StatusOr<bool> IsValid(int attr, NodeIndex node, int c) const;
  // Applies the chosen candidate after this replica's own check: the candidate must be valid as it
  // sees it (an owned attribute), or pass Recheck on the refreshed counts (another party's). A
  // candidate that fails is not applied: FailedPrecondition starting with kRefusedSpecialization.
  // `owner_score`: the step's score as the candidate's owner computed it, recorded instead of this
  // replica's when ScoreNeedsOwner(attr) (the replica lacks the sensitive values it depends on).
  // `declared_score`: the score the candidate's proposer signed; unless `owner_score` is given,
  // the candidate is not applied when it OverstatesScore against this replica's score
  // (FailedPrecondition starting with kScoreOverstated).
  absl::Status ApplyChosen(int attr, NodeIndex node, int c,
                           std::optional<double> owner_score = std::nullopt,
                           std::optional<double> declared_score = std::nullopt);
  // The candidate's score as this replica computes it.
  absl::StatusOr<double> ScoreOf(int attr, NodeIndex node, int c) const;
  // Whether this replica cannot compute the score of candidates on `attr` exactly: the score is
  // infogain/(privloss+1) with PrivLoss the rise of a confidence (no anonymity threshold), and a
  // constraint containing `attr` bounds sensitive values whose bits `held_bits` lacks.
  bool ScoreNeedsOwner(int attr, uint64_t held_bits) const;
  // Marks a candidate invalid for the rest of the run (a holder of sensitive values vetoed it).
  absl::Status Reject(int attr, NodeIndex node, int c);

  const std::vector<fedanon::v1::SpecializationStep>& steps() const { return steps_; }
  uint64_t smallest_group() const;    // min over constraints of A(X_j)
  double largest_confidence() const;  // max over confidence constraints of C(X_j)
  uint64_t group_count() const { return alive_groups_; }
  uint64_t total_records() const { return total_records_; }
  double DiscernibilityRatio() const;  // sum |T[qid]|^2 / |T|^2 over the full QID
  // Fills the result part of a report: steps, cut, groups, smallest group, largest confidence,
  // discernibility ratio, constraints checked and the stop reason.
  void FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const;
  // The keys (one node per QID attribute) of the current groups, in creation order.
  std::vector<std::vector<NodeIndex>> GroupKeys() const;
  // The current groups' statistics by key: [size, count of each tracked sensitive value].
  std::map<std::vector<NodeIndex>, std::vector<uint64_t>> GroupTotals() const;
  // The candidates of the current cut (not yet specialized), valid or not.
  std::vector<CandidateView> Candidates() const;
  // Distinct node labels per attribute among the current groups (the final cut).
  std::vector<std::vector<std::string>> CutLabels() const;
  // Binned numeric split search: the rank bounds of the bins of continuous attribute `attr`
  // (empty when it has none, or with exact search or an attribute this source does not own).
  const std::vector<int32_t>& SplitBins(int attr) const { return bins_[attr].bounds; }

 private:
  struct Candidate {
    int id = -1;  // index in cands_
    int attr;
    NodeIndex node;
    int c;
    bool alive = true;
    bool valid = true;
    bool beneficial = false;
    double info_gain = 0;
    double split_info = 0;
    uint64_t records = 0;
    uint64_t distortion_units = 0;    // SplitMeasures::distortion_units
    std::vector<uint64_t> min_child;  // per position in model.by_attr[attr]
    std::vector<double> max_conf;
    // The discernibility cost the candidate removes; -1 until computed, reset whenever a group
    // holding the node changes (see DiscernibilityGain).
    mutable int64_t disc_gain = -1;
  };

  TopDownSpecializer(const table::Dataset* data, const PrivacyModel* model,
                     std::vector<AttributeHierarchy>* hierarchies, CountSource* source,
                     EngineOptions options);
  absl::Status Initialize();
  // Binned search: the public cells' record counts, the bins, and the bins' class counts of
  // every owned continuous attribute (two Collects, at the root only).
  absl::Status ComputeBins();
  // Binned search: the threshold of continuous node `n` (a union of bins) among its inner bin
  // boundaries, from the bins' class counts; -1 when it spans fewer than two bins.
  absl::StatusOr<int32_t> BinnedSplit(int attr, NodeIndex n) const;
  absl::Status DecideSplits(const std::vector<std::pair<int, NodeIndex>>& nodes);
  // One Collect for the class counts of `nodes` and the statistics of the new groups `keys`
  // (whose sizes must equal `expected_sizes` unless it is empty).
  absl::Status CollectNodesAndGroups(const std::vector<std::pair<int, NodeIndex>>& nodes,
                                     const std::vector<std::vector<NodeIndex>>& keys,
                                     const std::vector<uint64_t>& expected_sizes,
                                     std::vector<std::vector<uint64_t>>* node_counts,
                                     std::vector<int32_t>* new_groups);
  absl::Status AddGroups(const std::vector<std::vector<NodeIndex>>& keys,
                         const std::vector<uint64_t>& expected_sizes,
                         const std::vector<uint64_t>& stats, size_t pos, std::vector<int32_t>* ids);
  absl::Status AddCandidates(int attr, NodeIndex node, const std::vector<uint64_t>& fine_counts);
  // 0, 1, ... for every constraint containing `attr` (positions in model.by_attr[attr]).
  std::vector<int> AllPositions(int attr) const;
  static void SetSplitMeasures(const SplitMeasures& m, Candidate& cand);
  void Evaluate(Candidate& cand, const std::vector<int32_t>& groups,
                const std::vector<int>& positions);
  // Sensitive-distribution models: after the size checks of a distribution constraint passed on
  // `groups`, notes which of them need the candidate's children's histograms (a group whose
  // records all go to one child has that child's histogram already: its own).
  void NoteHistogramsNeeded(const Candidate& cand, const std::vector<int32_t>& groups);
  // Asks the source, in one Collect, for the histograms noted since the last call (only of
  // candidates still valid) and marks invalid every candidate with a child that fails the
  // requirement. Called before any candidate is picked.
  absl::Status ResolveHistograms();
  // One Collect of `request` (the histograms of `asked`: (candidate id, group)) and its checks.
  absl::Status CollectHistograms(const StatsRequest& request,
                                 const std::vector<std::pair<int, int32_t>>& asked);
  // The whole table's histogram (one Collect at the root) and the check that it meets the
  // requirement.
  absl::Status InitializeDistribution();
  double Score(const Candidate& cand) const;
  // Σ over the current groups holding the candidate's node of |group|² − Σ |child group|²: the
  // discernibility cost applying the candidate removes (cached in the candidate).
  uint64_t DiscernibilityGain(const Candidate& cand) const;
  // Drops the cached discernibility gains of the candidates on group `g`'s nodes.
  void ForgetDiscernibility(int32_t g);
  double PrivLoss(const Candidate& cand) const;
  CandidateRank Rank(const Candidate& cand) const;
  int PickBest(bool owned_only = false) const;
  absl::StatusOr<int> FindCandidate(int attr, NodeIndex node, int c) const;
  absl::Status Apply(int cand_id, std::optional<double> score_override = std::nullopt);
  // A non-empty part of an old group that applying a candidate creates: the records of group
  // `parent` that go to child `child` of the candidate.
  struct ChildGroup {
    int32_t parent;
    int child;
    uint64_t size;
  };
  std::vector<ChildGroup> ChildGroups(const Candidate& cand,
                                      const std::vector<int32_t>& old_groups) const;
  // Marks the groups dead (and drops the cached discernibility gains that counted them).
  void RetireGroups(const std::vector<int32_t>& groups);
  // Collects the refinable nodes' class counts and adds the groups `pending` creates (`keys`,
  // `sizes`: theirs) when a candidate of attribute `a` is applied. From a source that counts in
  // process, each parent's largest child is not asked for: its count and its blocks of the other
  // attributes are the parent's minus its siblings', and its block of `a` is counted alone.
  absl::Status CollectChildGroups(int a, const std::vector<ChildGroup>& pending,
                                  const std::vector<std::pair<int, NodeIndex>>& refinable,
                                  const std::vector<std::vector<NodeIndex>>& keys,
                                  const std::vector<uint64_t>& sizes,
                                  std::vector<std::vector<uint64_t>>* node_counts,
                                  std::vector<int32_t>* new_groups);
  // Counts `attr`'s block of each of `groups` again (a source that counts in process; otherwise
  // the groups' whole statistics): after their records learnt (or unlearnt) their child of
  // key[attr].
  absl::Status RefreshGroups(int attr, const std::vector<int32_t>& groups);
  // Where attribute `attr`'s block starts in the statistics of a group with `key`; with attr =
  // q_, their length.
  size_t BlockOffset(const NodeIndex* key, int attr) const;
  size_t GroupWords(const NodeIndex* key) const { return BlockOffset(key, q_); }
  // Where group g's statistics end in stats_, and [begin, end) of its block of `attr` there.
  size_t GroupEnd(int32_t g) const {
    return static_cast<size_t>(g) + 1 < stats_off_.size() ? stats_off_[g + 1] : stats_.size();
  }
  std::pair<size_t, size_t> BlockRange(int32_t g, int attr) const {
    const size_t at = static_cast<size_t>(g) * q_ + attr;
    return {stats_off_[g] + attr_off_[at],
            attr + 1 < q_ ? stats_off_[g] + attr_off_[at + 1] : GroupEnd(g)};
  }
  // The source's answer to `request`, refused when its length is not the request's.
  absl::StatusOr<std::vector<uint64_t>> CollectChecked(const StatsRequest& request);
  // Moves the class counts of `nodes` (the front of a reply) into `node_counts`; returns where
  // they end.
  size_t TakeNodeCounts(const std::vector<std::pair<int, NodeIndex>>& nodes,
                        const std::vector<uint64_t>& stats,
                        std::vector<std::vector<uint64_t>>* node_counts) const;
  // After a specialization on attribute `a`: candidates on other attributes that share one of the
  // new groups are re-checked on those groups, for the constraints that contain both attributes.
  void ReevaluateSharing(int a, const std::vector<int32_t>& new_groups);
  // Appends the step of the applied candidate `best` and reports it to on_step.
  void RecordStep(const Candidate& best, const std::string& label,
                  const std::vector<NodeIndex>& kids, double score);

  const uint64_t* FineStats(int32_t g, int attr) const {
    return stats_.data() + stats_off_[g] + attr_off_[static_cast<size_t>(g) * q_ + attr];
  }
  uint64_t GroupSize(int32_t g) const { return stats_[stats_off_[g]]; }
  NodeIndex KeyAt(int32_t g, int attr) const { return keys_[static_cast<size_t>(g) * q_ + attr]; }
  std::vector<NodeIndex> KeyOf(int32_t g) const {
    return std::vector<NodeIndex>(keys_.begin() + static_cast<ptrdiff_t>(g) * q_,
                                  keys_.begin() + static_cast<ptrdiff_t>(g + 1) * q_);
  }
  std::vector<int32_t> AliveGroups(int attr, NodeIndex node) const;
  std::vector<int32_t>& GroupLink(int attr, NodeIndex node);

  // Binned numeric split search, per attribute: bin rank bounds and class counts (bin, class).
  struct Bins {
    std::vector<int32_t> bounds;
    std::vector<uint64_t> class_counts;
  };

  uint64_t work_ = 0;  // see evaluation_work()
  const table::Dataset* data_;
  const PrivacyModel* model_;
  std::vector<AttributeHierarchy>* hier_;
  CountSource* source_;
  EngineOptions options_;
  int q_;
  size_t stride_;
  int num_classes_;
  bool has_class_;          // the job has a class attribute (splits by InfoGain, else balance)
  std::vector<Bins> bins_;  // [attr]

  // Global groups (generalized records over all QID attributes) and their statistics.
  std::vector<NodeIndex> keys_;
  std::vector<uint64_t> stats_;
  std::vector<size_t> stats_off_;
  std::vector<uint32_t> attr_off_;
  std::vector<bool> group_alive_;
  uint64_t alive_groups_ = 0;
  std::vector<std::vector<std::vector<int32_t>>> group_links_;  // [attr][node] -> groups

  std::vector<Candidate> cands_;
  std::vector<std::vector<std::vector<int>>> node_cands_;  // [attr][node] -> candidate ids
  std::vector<int> active_;                                // candidate ids possibly pickable

  // Sensitive-distribution models (ldiversity, tcloseness; sensitive_distribution.h). The
  // requirement is checked here only when the source answers histogram queries (in a vertical job,
  // at the sensitive attribute's holder; the others leave it to its verdicts).
  const SensitiveDistribution* dist_ = nullptr;
  bool dist_checked_ = false;
  std::vector<uint64_t> overall_;  // the whole table's histogram
  // Per group: its histogram (empty while unknown), and per candidate id the histograms of the
  // candidate's children in that group (child-major), fetched when the candidate was evaluated.
  std::vector<std::vector<uint64_t>> group_hist_;
  std::vector<absl::flat_hash_map<int, std::vector<uint64_t>>> child_hist_;
  std::vector<std::pair<int, int32_t>> pending_hist_;  // (candidate id, group) to fetch

  std::vector<uint64_t> a_;  // per constraint: A(X_j) of the current table
  std::vector<double> c_;    // per constraint: C(X_j) of the current table
  uint64_t total_records_ = 0;
  std::vector<fedanon::v1::SpecializationStep> steps_;
};

}  // namespace fedanon::engine
