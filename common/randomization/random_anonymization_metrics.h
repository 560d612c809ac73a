// What a random anonymization (common/random_anonymization.h) protects and what it costs, measured
// on the original table D and the released table D' (yang2010 §4.2.2 and §5.2):
//
//  * Proposition 10: an upper bound on the probability that a user who knows the supports of the
//    QID value combinations in D guesses a record's original combination from its released one.
//  * §5.2: the relative bias of the support of value combinations of a given length, measured on
//    D' and predicted (its exact expectation, of which Proposition 12 is the k = 1, p_i = 1/m
//    case).
//
// Both run in time proportional to the records times the number of attribute sets involved; they
// are reports a user asks for, not part of the randomization.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/randomization/random_anonymization.h"

namespace fedanon::randomization {

// The bound of Proposition 10 for every released record q' (full QID combination):
//   max( supp_D(q') / min_i supp_D(q' - q'_i),  max_i p_i P(Q_i = q'_i) / sum_j p_j P(Q_j = q'_j) )
// where q' - q'_i drops attribute i (support 1 if nothing is left) and P is the distribution in
// D. With p_i = 1/m this is exactly the paper's bound; with the entropy weights of Proposition 7
// the same derivation keeps the p_i (our extension).
struct PriorKnowledgeBound {
  double max = 0;   // over the released records
  double mean = 0;  // over the released records
};

// `released` must be `original` randomized under `plan`. Proposition 10 is stated for Algorithm 1:
// InvalidArgument if plan.attributes_per_record > 1 or the tables do not match.
absl::StatusOr<PriorKnowledgeBound> Proposition10Bound(
    const std::vector<CategoricalColumn>& original, const std::vector<CategoricalColumn>& released,
    const RandomizationPlan& plan);

// The relative difference R(q) = (supp_D'(q) - supp_D(q)) / supp_D(q) over all value combinations
// q of `length` QID attributes that occur in D (every set of `length` attributes, every
// combination of their values), as support-weighted means: measured = mean of |R(q)| on this D';
// predicted = mean of B(q) = |E R(q)|, the expectation over the randomization, computed exactly
// from D: E supp_D'(q) = sum over T, the part of q's attributes that gets randomized, of
// P(T) supp_D(q - T) prod_{i in T} P(Q_i = q_i). Averaged over the attribute sets, each of whose
// combinations' supports sum to 1.
struct RelativeBias {
  int length = 0;
  uint64_t attribute_sets = 0;  // C(m, length)
  uint64_t combinations = 0;    // value combinations of that length occurring in D
  double measured = 0;          // fraction (0.01 = 1%)
  double predicted = 0;         // fraction
};

// InvalidArgument if length is not in [1, m], the tables do not match, or the computation would
// need more than 100000 attribute-set passes over the table (too many attributes for this length).
absl::StatusOr<RelativeBias> MeasureRelativeBias(const std::vector<CategoricalColumn>& original,
                                                 const std::vector<CategoricalColumn>& released,
                                                 const RandomizationPlan& plan, int length);

}  // namespace fedanon::randomization

namespace fedanon::randomization {

// Definition 8 (c-amplification, after Evfimievski et al. 2003) for Algorithm 1, as §4.2.1
// derives it: a released combination q' arises from an original that differs from it in
// attribute i (the randomized one) with probability p_i P(Q_i = q'_i), so the anonymization is at
// most c(q')-amplifying for q' with
//   c(q') = max_i p_i P(Q_i = q'_i) / min_i p_i P(Q_i = q'_i)   (P: the distribution in D).
// c = 1 means every candidate original is equally likely; the release as a whole is at most
// max c(q')-amplifying.
struct Amplification {
  double max = 0;   // over the released records
  double mean = 0;  // over the released records
};

// `released` must be `original` randomized under `plan`; InvalidArgument for k > 1 (the
// derivation is Algorithm 1's) or tables that do not match.
absl::StatusOr<Amplification> CAmplification(const std::vector<CategoricalColumn>& original,
                                             const std::vector<CategoricalColumn>& released,
                                             const RandomizationPlan& plan);

// The variance of the relative difference R(q) over the randomization (Algorithm 1), for the
// value combinations of `length` attributes occurring in D, as support-weighted means:
//  * eq11: Eq. (11) as printed, sum_{i in q} p_i^2 (supp_D(q - q_i) / supp_D(q))^2 (P_i - P_i^2)
//    with P_i = P(Q_i = q_i) (the paper writes 1/m^2 for p_i = 1/m);
//  * independent: the exact variance when every record is randomized independently, as
//    Algorithm 1 does: Var count'(q) = sum over records of pi (1 - pi), pi the probability that
//    the record holds q after randomization (1 - sum_{i in q} p_i (1 - P_i) for a record holding
//    q, p_j P_j for one differing from q in attribute j only, 0 otherwise), over count(q)^2;
//  * measured: the sample variance of R(q) over `runs` randomizations of D with seeds seed,
//    seed + 1, ... (RandomSource::Seeded).
// Eq. (11) treats the records of q - q_i as moving together, so it does not shrink with the
// number of records as the independent variance does; the page of the papers' experiments shows
// both beside the measured one.
struct RelativeVariance {
  int length = 0;
  uint64_t combinations = 0;
  int runs = 0;
  double eq11 = 0;
  double independent = 0;
  double measured = 0;
};

// InvalidArgument for k > 1, a length outside [1, m], runs < 2, or too many attribute sets (as
// MeasureRelativeBias).
absl::StatusOr<RelativeVariance> MeasureRelativeVariance(
    const std::vector<CategoricalColumn>& original, const RandomizationPlan& plan, int length,
    int runs, uint64_t seed);

}  // namespace fedanon::randomization
