// Random anonymization (RA) of quasi-identifiers, yang2010 §3, §4.1 and §6.
//
// RA breaks the link between a record's QID value combination and its other values by replacing,
// in every record, one QID value (Algorithm 1) or k QID values (Algorithm 2, "enhanced RA") with a
// value drawn from that attribute's empirical distribution in the original table. Each attribute's
// distribution is preserved in expectation; no value outside the data is introduced.
//
// Algorithm 1 picks the attribute of a record with probability p_i; Proposition 7 shows that the
// probabilistic anonymity Pa(D') is largest for p_i proportional to e^Entropy(Q_i), which is the
// default here (kEntropyWeighted); kUniform (p_i = 1/m) is the setting of the paper's Fig. 5
// example and of Proposition 10. Algorithm 2 picks k distinct attributes uniformly at random.
//
// Values are categories: every distinct string of a column is one category (numbers included).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/randomization/random_source.h"

namespace fedanon::randomization {

// One dictionary-encoded categorical column.
struct CategoricalColumn {
  std::string name;
  std::vector<std::string> values;  // code -> value
  std::vector<uint32_t> codes;      // per record
};

// Occurrences of each code in `column` (indexed by code).
std::vector<uint64_t> ValueCounts(const CategoricalColumn& column);
// Entropy (natural logarithm) of the column's empirical value distribution; 0 for no records.
double Entropy(const CategoricalColumn& column);

enum class AttributeSelection {
  kEntropyWeighted,  // p_i proportional to e^Entropy(Q_i) (Proposition 7); one attribute only
  kUniform,          // every attribute (or set of k attributes) equally likely
};

// How a table is randomized, with the statistics of the original table it depends on.
struct RandomizationPlan {
  int attributes_per_record = 1;  // k; 1 is Algorithm 1
  AttributeSelection selection = AttributeSelection::kEntropyWeighted;
  std::vector<double> entropies;  // Entropy(Q_i) of the original table
  // For k == 1: p_i, the probability that attribute i is the one randomized in a record. For
  // k > 1: the probability that attribute i is among the k (k / m).
  std::vector<double> probabilities;
};

// Checks the columns (at least one, equal lengths, codes within the dictionaries) and the
// parameters (1 <= k <= m; kEntropyWeighted only with k == 1, Algorithm 2 selects uniformly) and
// computes the plan. InvalidArgument naming the problem otherwise.
absl::StatusOr<RandomizationPlan> PlanRandomization(const std::vector<CategoricalColumn>& qids,
                                                    int attributes_per_record,
                                                    AttributeSelection selection);

// The probabilistic anonymity Pa(D') (Definition 6). For k == 1 Eq. (1) of Proposition 7:
// ln Pa = sum_i p_i (Entropy(Q_i) - ln p_i), which for p_i = 1/m is Eq. (3) and for the entropy
// weights equals sum_i e^Entropy(Q_i). For k > 1 the same derivation over the C(m, k) equally
// likely attribute sets (our extension; the paper gives no formula): ln Pa = ln C(m, k) +
// (k / m) sum_i Entropy(Q_i).
double ProbabilisticAnonymity(const RandomizationPlan& plan);

// Runs Algorithm 1 (k == 1) or Algorithm 2 (k > 1) on `qids` (which must be the columns `plan` was
// made from) and returns the randomized columns (same names and dictionaries). Every replacement
// value is the value of a uniformly drawn record of the original column, i.e. a draw from the
// attribute's empirical distribution. Fails (nothing returned) if `random` failed.
absl::StatusOr<std::vector<CategoricalColumn>> Randomize(const std::vector<CategoricalColumn>& qids,
                                                         const RandomizationPlan& plan,
                                                         RandomSource& random);

}  // namespace fedanon::randomization
