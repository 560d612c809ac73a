// The requirement of the ldiversity and tcloseness privacy models on one group's distribution of
// one sensitive attribute (its counts per declared value), and the measures the report shows.
//
//  * distinct l-diversity: at least l values occur in the group;
//  * entropy l-diversity: -sum_s p_s ln p_s >= ln l;
//  * recursive (c, l)-diversity: r_1 < c (r_l + ... + r_m), r_i the i-th largest count
//    (Machanavajjhala et al. 2007, Def. 4.1-4.3; fung2007 thesis Def. 2.1.1-2.1.2);
//  * t-closeness: the Earth Mover's Distance between the group's distribution P and the whole
//    table's Q is at most t (Li, Li, Venkatasubramanian 2007, section 4.2), with the closed forms
//    of that section: equal ground distance, D = 1/2 sum |p_i - q_i|; ordered, D = 1/(m-1)
//    sum_i |sum_{j<=i} (p_j - q_j)|; hierarchical, D = sum over the taxonomy's inner nodes N of
//    height(N)/H * min(positive, negative extra mass of N's children).
//
// Every requirement is closed under union: two disjoint groups that each meet it make a group that
// meets it (distinct values only add up; entropy is concave; recursive: the union's top l-1
// counts are at most the sum of the parts', so its tail is at least the sum of their tails; the
// EMD to a fixed Q is convex in P, and the union's P is the size-weighted mixture). The
// specialization loop relies on that (docs/engine.md, "Sensitive-distribution models"). Every
// computation is on the integer counts (exact numerators, one division), so the leader, each
// party and the centralized run decide alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

// Tolerance for comparing an entropy or a distance against its bound.
inline constexpr double kDistributionEpsilon = 1e-12;

struct SensitiveDistribution {
  enum class Kind { kDistinct, kEntropy, kRecursive, kCloseness };
  Kind kind = Kind::kDistinct;
  double l = 0;  // the l of the l-diversity variants
  double c = 0;  // recursive (c, l)
  double t = 0;  // t-closeness
  fedanon::v1::GroundDistance distance = fedanon::v1::GROUND_DISTANCE_EQUAL;
  std::string attribute;  // the sensitive attribute
  int column = -1;        // its index in Dataset::value_columns
  size_t domain = 0;      // its number of declared values
  // Hierarchical distance: the sensitive attribute's taxonomy as parent links (the root first),
  // the height of every node (the longest path down to a leaf), the tree's height H, and the node
  // of each declared value.
  std::vector<int32_t> parent;
  std::vector<int32_t> height;
  int32_t tree_height = 0;
  std::vector<int32_t> leaf_of_value;

  // Whether a group with these counts (domain words) meets the requirement. `overall` is the
  // whole table's counts (used by t-closeness only). An empty group meets every requirement.
  bool Holds(absl::Span<const uint64_t> counts, absl::Span<const uint64_t> overall) const;
  // The least group size the requirement implies (ceil(l) for the l-diversity variants, 1 for
  // t-closeness).
  uint64_t ImpliedGroupSize() const;
  // "entropy 3-diversity of 'occupation'", "0.2-closeness (ordered distance) of 'salary'".
  std::string Describe() const;
};

// The requirement of a job whose privacy model is ldiversity or tcloseness, over the schema of
// `data` (the attribute's value column and, for the hierarchical distance, its taxonomy).
// InvalidArgument naming the attribute when the schema lacks them.
absl::StatusOr<SensitiveDistribution> BuildSensitiveDistribution(const fedanon::v1::JobSpec& spec,
                                                                 const table::Dataset& data);

// The measures, each on a group's counts (`overall`: the whole table's).
uint64_t DistinctValues(absl::Span<const uint64_t> counts);
// The entropy in nats (natural logarithm), unlike scores.h's Entropy (bits, for the class).
double NaturalEntropy(absl::Span<const uint64_t> counts);
// r_1 / (r_l + ... + r_m) for the recursive variant (+infinity when the tail is empty, 0 for an
// empty group).
double RecursiveRatio(absl::Span<const uint64_t> counts, double l);
double EqualDistanceEmd(absl::Span<const uint64_t> counts, absl::Span<const uint64_t> overall);
double OrderedDistanceEmd(absl::Span<const uint64_t> counts, absl::Span<const uint64_t> overall);
double HierarchicalDistanceEmd(const SensitiveDistribution& model,
                               absl::Span<const uint64_t> counts,
                               absl::Span<const uint64_t> overall);
// The model's distance (its ground distance).
double Closeness(const SensitiveDistribution& model, absl::Span<const uint64_t> counts,
                 absl::Span<const uint64_t> overall);

// The report's figures over a set of groups (each `domain` words in `groups`, laid end to end).
struct DistributionSummary {
  double smallest_diversity = 0;
  double largest_recursive_ratio = 0;
  double largest_closeness = 0;
};
DistributionSummary SummarizeGroups(const SensitiveDistribution& model,
                                    absl::Span<const uint64_t> groups,
                                    absl::Span<const uint64_t> overall);
void FillDistributionReport(const SensitiveDistribution& model, const DistributionSummary& summary,
                            fedanon::v1::Report* report);

}  // namespace fedanon::engine
