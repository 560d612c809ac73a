// Per-group candidate search of local recoding (docs/engine.md "Local recoding"): given one
// group's records, its key and the codes of the attributes a caller may search, the best valid
// candidate under the local privacy rule (every non-empty child >= kmin records; every tracked
// sensitive value's confidence <= its bound) and the job's score on the group's records, with the
// centralized tie-break (higher score, lower attribute index, lower value code). A vertical data
// party calls it with its own attributes only (leader/vertical_local, party/vertical_local); the
// centralized LocalRecoder computes the same choice from the same counts.
//
// Continuous attributes (binned search): the fine children are the global bins inside the
// group's interval; with `within_group_min_bin` > 0 they are first merged left to right into
// within-group bins of at least that many of the group's records (a short tail joins the last
// bin), and the threshold is searched only among those bins' boundaries.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "common/engine/candidate_score.h"
#include "common/engine/local_recoding.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

// The rule and the score of a local-recoding job (public: derived from the spec).
struct LocalRule {
  uint64_t kmin = 1;           // every group holds at least this many records
  std::vector<double> bound;   // per tracked sensitive value: the smallest bound (1: none)
  bool has_anonymity = false;  // PrivacyModel::has_anonymity (PrivLoss as loss of anonymity)
  fedanon::v1::ScoreFunction score = fedanon::v1::SCORE_FUNCTION_INFOGAIN;
  bool beneficial = false;
  uint64_t within_group_min_bin = 0;  // 0: the global bins are the threshold candidates
};

// Builds the rule from a model: kmin = the largest k, bound = the smallest bound per value.
LocalRule LocalRuleFromModel(const PrivacyModel& model, size_t tracked);

// True when some tracked sensitive value carries a confidence bound (< 1): then a candidate's
// validity depends on the sensitive values, not only on the children's sizes.
bool LocalRuleHasConfidenceBound(const LocalRule& rule);

// One candidate's children scored under `rule` on a group: `stats` are the group's words and
// `kids` each child's words, both [count, class_1..nc, sensitive_1..m]. Nullopt when a non-empty
// child breaks the rule (fewer than kmin records, or a confidence above its bound). The one
// scoring the centralized LocalRecoder and a vertical party's search share. `disclosure`: the
// candidate discloses kids[0]'s value of a suppressed attribute, whose distortion units (the
// `distortion` score, thesis §5.5) are then kids[0]'s records, not the group's; without it a
// disclosure scores as a generalization of the whole group, an upper bound of its score (what a
// judging party's overstatement check, party/vertical_local, may compare against).
struct LocalChildrenScore {
  CandidateRank rank;  // score and tie-break (attribute, value code)
  double info_gain = 0;
  std::vector<uint64_t> sizes;  // per child (may be 0)
};
std::optional<LocalChildrenScore> ScoreLocalChildren(const LocalRule& rule, size_t nc, size_t m,
                                                     const uint64_t* stats,
                                                     const std::vector<const uint64_t*>& kids,
                                                     int attr, int c, bool disclosure = false);

struct LocalCandidate {
  int attr = -1;
  int c = -1;  // suppression: the disclosed value code; continuous: the threshold's fine child
  double score = 0;
  double info_gain = 0;
  std::vector<uint64_t> child_sizes;  // per child (may be 0)
  std::vector<int> child_of_fine;     // fine child of key[attr] -> child
  // Children's values of key[attr] (as LocalRecoder::ApplyBest makes them).
  std::vector<LocalValue> child_values;
};

// The best valid candidate of a group over `attrs` (ascending attribute indices), or nullopt.
// `records` are indices into `data` (its codes of `attrs`, class codes, sensitive bits).
// `excluded`: (attribute, candidate) pairs never chosen (a vertical group's vetoed candidates).
std::optional<LocalCandidate> BestLocalCandidate(
    const table::Dataset& data, const LocalFineMap& fine, const LocalRule& rule,
    const std::vector<LocalValue>& key, absl::Span<const uint32_t> records,
    absl::Span<const int> attrs, absl::Span<const std::pair<int, int>> excluded = {});

// The child of every record of `records` (in order) under candidate `c` of key[c.attr].
std::vector<int32_t> LocalChildrenOf(const table::Dataset& data, const LocalFineMap& fine,
                                     const std::vector<LocalValue>& key,
                                     absl::Span<const uint32_t> records, const LocalCandidate& c);

}  // namespace fedanon::engine
