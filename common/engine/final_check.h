// The final check of a horizontal job (docs/threat-model.md, "Parties re-check what they
// apply"): before any row is released, every data party checks the signed privacy model itself
// on the global group counts of the final cut, instead of trusting the group sizes the leader
// asserts. This unit is the party-side arithmetic, independent of the engine's bookkeeping:
//
//  * the layout: for every constraint of the model, one slot per combination of the current cut
//    values of its attributes (mixed-radix index over each attribute's cut positions, the cut
//    being common to all parties), each slot holding the group's size and its count of every
//    tracked sensitive value;
//  * a holder's local vector in that layout (from the partitions of its TIPS), which the ring
//    sums;
//  * the check of the model on the summed vector: every non-empty group holds at least k
//    records and no bounded sensitive value exceeds its confidence bound;
//  * ldiversity / tcloseness: the model's constraint's slots also hold the group's count of each
//    declared value of the sensitive attribute, and every non-empty group must meet the model's
//    requirement (t-closeness against the sum of those histograms: the whole table's).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/hierarchy.h"
#include "common/engine/privacy_model.h"
#include "common/engine/sensitive_distribution.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"

namespace fedanon::engine {

// The largest final-check vector (words), documented in docs/threat-model.md: beyond it the job
// fails with a named error before anything is summed.
inline constexpr uint64_t kMaxFinalCheckWords = uint64_t{1} << 24;

struct FinalCheckConstraint {
  std::string description;              // "{age, sex} k=5", for the refusal's reason
  std::vector<int> attrs;               // QID indices, ascending
  std::vector<std::string> attr_names;  // per attrs
  // Per attrs: the labels of the attribute's cut values in cut position order.
  std::vector<std::vector<std::string>> cut_labels;
  uint64_t k = 1;
  uint64_t sensitive_mask = 0;
  double max_conf = 1.0;
  uint64_t offset = 0;        // first word of this constraint's groups in the vector
  uint64_t groups = 1;        // product of the attributes' cut sizes
  bool distribution = false;  // its groups also hold their sensitive histogram (hist_words)
};

struct FinalCheckLayout {
  std::vector<FinalCheckConstraint> constraints;
  std::vector<std::string> tracked;  // the tracked sensitive values (bit order)
  uint64_t stride = 1;               // words per group: 1 + tracked.size()
  uint64_t words = 0;                // the whole vector
  // ldiversity / tcloseness: the requirement, and its histogram's words (the sensitive
  // attribute's declared values) after the stride in a distribution constraint's slots.
  std::optional<SensitiveDistribution> distribution;
  uint64_t hist_words = 0;
  // Words per group of `c`: the stride, and the histogram for a distribution constraint.
  uint64_t Slot(const FinalCheckConstraint& c) const {
    return stride + (c.distribution ? hist_words : 0);
  }
};

// Per attribute: node -> its position in the current cut of `hier` (-1 for a node that is not a
// cut value), the numbering every layout uses.
std::vector<std::vector<int64_t>> FinalCheckCutPositions(
    const std::vector<AttributeHierarchy>& hier);
// Group `group` of constraint `c` by its cut values, e.g. "(g=gb, s=*)".
std::string FinalCheckGroupName(const FinalCheckConstraint& c, uint64_t group);

// The layout for `model` over the current cut of `hier` (nodes without children, in node order).
// ResourceExhausted, naming the size and the cap, above kMaxFinalCheckWords (checked arithmetic).
absl::StatusOr<FinalCheckLayout> BuildFinalCheckLayout(const PrivacyModel& model,
                                                       const table::Dataset& data,
                                                       const std::vector<AttributeHierarchy>& hier,
                                                       const std::string& suppression_token);

// This holder's counts in `layout` (length layout.words), from the live partitions of `tips`,
// whose keys are the cut `hier` describes. InvalidArgument if a key is not a cut value.
absl::StatusOr<std::vector<uint64_t>> LocalFinalCheckCounts(
    const FinalCheckLayout& layout, const table::Dataset& data,
    const std::vector<AttributeHierarchy>& hier, const Tips& tips);

// The same from each non-empty group's counts (key over the cut -> [count, tracked_1..m], then
// its sensitive histogram when the layout has one), when the records are not in memory
// (push-down, common/table_postgres/postgres_stats.h). FailedPrecondition when the layout needs
// histograms the counts lack (a push-down table cannot give them).
absl::StatusOr<std::vector<uint64_t>> FinalCheckCountsOfGroups(
    const FinalCheckLayout& layout, const table::Dataset& data,
    const std::vector<AttributeHierarchy>& hier,
    const std::map<std::vector<NodeIndex>, std::vector<uint64_t>>& groups);

// The bounds every honest summed vector meets whatever the other holders hold (a party could add
// any offset, even a negative one mod 2^64, to the sum): every constraint's
// groups add up to the same number of records, at most `max_records` (the signed limit times the
// parties); no word is below this holder's own (`own`, its counts in the layout). DataLoss
// naming the first word that breaks them.
absl::Status CheckFinalTotalsBounds(const FinalCheckLayout& layout,
                                    const std::vector<uint64_t>& total,
                                    const std::vector<uint64_t>& own, uint64_t max_records);

// Checks the model on the global `counts`. OK, or FailedPrecondition whose message names the
// constraint, the group (its cut values) and its size or confidence: "final check failed:
// {g} k=3: group (g=gb) holds 2 records, fewer than 3".
absl::Status CheckFinalCounts(const FinalCheckLayout& layout, const std::vector<uint64_t>& counts);

}  // namespace fedanon::engine
