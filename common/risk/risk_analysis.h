// Re-identification risk of one table, as ARX reports it (docs/risk.md):
//
//  * equivalence classes over every QID (records with equal QID values) and their sizes f;
//  * prosecutor risk (El Emam, "Guide to the De-Identification of Personal Health Information",
//    2013): a record's probability of re-identification is 1 / |its class|; reported are the
//    share of records whose probability exceeds the threshold, the highest probability
//    (1 / smallest class) and the success rate (records re-identified on average: classes /
//    records). Journalist risk needs the population's class sizes; without a population table it
//    equals the prosecutor risk, as in ARX. Marketer risk is the success rate;
//  * sample uniques (classes of size 1) and, given the population size or the sampling
//    fraction, the population-uniqueness models of population_models.h;
//  * for QID combinations, distinction (classes / records) and separation (the share of record
//    pairs that differ on the combination), Motwani & Xu, "Efficient algorithms for masking and
//    finding quasi-identifiers", VLDB 2007, as ARX's attribute-risk view shows them.
//
// Nothing here reads a file: callers build the QidCodes (risk_table.h) where the table is.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/risk/population_models.h"
#include "common/risk/qid_codes.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::risk {

inline constexpr double kDefaultRiskThreshold = 0.2;
// Combinations analysed when the options leave it open: all of them up to this many QIDs, else
// those of at most kDefaultCombinationSize attributes (and the whole set).
inline constexpr int kAllCombinationsUpTo = 8;
inline constexpr int kDefaultCombinationSize = 2;
inline constexpr size_t kMaxCombinations = 100000;

// Every figure above for `table`. `options` from the spec's `risk:` section (with the command
// line's overrides); InvalidArgument for a table without records, both or neither-valid
// population inputs (population_size < records, sampling_fraction outside (0, 1]) or a
// max_combination_size asking for more than kMaxCombinations combinations.
absl::StatusOr<fedanon::v1::RiskSummary> AnalyzeRisk(const QidCodes& table,
                                                     const fedanon::v1::RiskOptions& options,
                                                     const std::string& table_name);

// The attacker models of one class-size histogram (records, classes, smallest and average
// class, threshold, prosecutor, journalist, marketer, sample uniques) into `summary`.
void FillSampleRisk(const ClassSizeHistogram& histogram, double threshold,
                    fedanon::v1::RiskSummary* summary);

// Motwani & Xu's distinction (classes / records) and separation (differing pairs / all pairs;
// 1 for fewer than two records).
double Distinction(const ClassSizeHistogram& histogram);
double Separation(const ClassSizeHistogram& histogram);

// The smallest class over every combination of exactly `size` of the table's attributes, and one
// combination where it occurs; the privacy model's anonymity requirement measured on a release.
struct SmallestOverCombinations {
  uint64_t smallest = 0;
  std::vector<int> attributes;
  size_t combinations = 0;
};
absl::StatusOr<SmallestOverCombinations> SmallestClassOverCombinations(const QidCodes& table,
                                                                       int size);
// The smallest class over the attributes `subset` (an anonymity template's QIDs).
uint64_t SmallestClass(const QidCodes& table, const std::vector<int>& subset);

}  // namespace fedanon::risk
