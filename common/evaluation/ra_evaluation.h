// How much knowledge a randomized release keeps, measured as yang2010 §7 measures it, against the
// permutation (Anatomy, Xiao & Tao 2006) baseline the paper compares with:
//
//  * aggregate-query relative error (§7.2, Fig. 6): random COUNT queries
//      WHERE Q_1 IN R_1 AND ... AND Q_j IN R_j AND S IN R_s
//    over j random QID attributes; |Ans(D) - Ans(D')| / Ans(D), averaged over the queries with
//    Ans(D) > 0. A randomized table is queried directly; Anatomy is answered with Eq. (13);
//  * association preservation (§7.3, Fig. 7-8): Apriori on D and D' over the QID attributes and
//    the sensitive attribute; quasi-sensitive rules X -> s (X a non-empty set of QID items, s a
//    sensitive value); |Asso_D ∩ Asso_D'| / |Asso_D| per antecedent length and overall;
//  * the Anatomy baseline itself: l-diverse QI groups (one record from each of the l largest
//    sensitive-value buckets at a time, then the residue), sensitive values permuted in a group.
//
// Every value is a category (every distinct string of a column, numbers included), as in
// `fedanon randomize`. All randomness is a seeded std::mt19937_64 with integer draws (the same
// on every platform); nothing here is a release mechanism.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::evaluation {

// A dictionary-encoded table: QID columns then (last) the sensitive column. Tables compared
// with each other share the dictionaries, so equal codes mean equal values.
struct CodedTable {
  std::vector<std::string> names;                // per column
  std::vector<std::vector<std::string>> values;  // per column: code -> value
  std::vector<std::vector<uint32_t>> codes;      // per column, per record
  size_t records() const { return codes.empty() ? 0 : codes[0].size(); }
  size_t qids() const { return codes.empty() ? 0 : codes.size() - 1; }
  size_t sensitive() const { return codes.size() - 1; }
};

// One COUNT query: for each listed column (QIDs in increasing order, then the sensitive column),
// the set of accepted codes as a membership mask over the column's dictionary.
struct CountQuery {
  std::vector<size_t> columns;
  std::vector<std::vector<bool>> accepted;  // per listed column, per code
};

// `count` queries over `qid_attributes` distinct QID columns chosen uniformly, plus the sensitive
// column. For each column a size s uniform in [1, |values in D|] and then s distinct values
// uniformly (values are those occurring in `d`). InvalidArgument if qid_attributes is 0 or more
// than the QID columns.
absl::StatusOr<std::vector<CountQuery>> RandomCountQueries(const CodedTable& d,
                                                           size_t qid_attributes, size_t count,
                                                           uint64_t seed);

// The number of records of `t` that satisfy `q`.
uint64_t AnswerCount(const CodedTable& t, const CountQuery& q);

// Anatomy's QI groups of a table (records of `t`, its sensitive column).
struct AnatomyGroups {
  int l = 0;
  std::vector<uint32_t> group_of;  // per record
  uint32_t groups = 0;
};

// Anatomy's grouping (Xiao & Tao 2006, Fig. 3): records in buckets by sensitive value; while at
// least l buckets are non-empty, a new group takes one random record from each of the l largest
// buckets (ties: smaller code first); each residual record (at most one per bucket) joins a
// random group that does not hold its sensitive value. Every group then holds l or l+1 records
// with pairwise distinct sensitive values. InvalidArgument if l < 2 or the table is not eligible
// (a sensitive value in more than n/l records); the message gives the largest eligible l.
absl::StatusOr<AnatomyGroups> AnatomyGrouping(const CodedTable& t, int l, uint64_t seed);

// The largest l for which `t` is eligible for Anatomy: floor(n / max count of a sensitive value).
int LargestAnatomyL(const CodedTable& t);

// The permuted table: QID values in place, the sensitive values of each group randomly permuted
// among the group's records.
CodedTable PermuteWithinGroups(const CodedTable& t, const AnatomyGroups& groups, uint64_t seed);

// Eq. (13) of yang2010 (Xiao & Tao's estimate on the two views of Anatomy):
// sum over groups p of #p(R_s) * #p(records matching the QID conditions) / |p|, where #p(R_s)
// counts the group's sensitive values in R_s (QID values and the group of each record are
// those of `t`, whose sensitive column is the group's multiset in any order).
double AnatomyEstimate(const CodedTable& t, const AnatomyGroups& groups, const CountQuery& q);

// The entropy l-diversity generalization baseline of yang2010 §7.2 (Machanavajjhala et al. 2006
// on top of Mondrian, LeFevre et al. 2006): a partition is split at the median record of one QID
// attribute (values in dictionary order; the attribute with the most distinct values in the
// partition first, then the next) when both halves stay entropy l-diverse (the entropy of the
// sensitive values at least ln l); a partition no attribute can split is a QI group. Each group
// publishes, per QID attribute, the set of values it holds, and its sensitive values exactly.
struct LDiverseGroups {
  int l = 0;
  std::vector<uint32_t> group_of;  // per record
  uint32_t groups = 0;
};

// InvalidArgument if l < 2 or the whole table is not entropy l-diverse (the message gives the
// largest l it is).
absl::StatusOr<LDiverseGroups> EntropyLDiverseGrouping(const CodedTable& t, int l);

// The largest l for which the whole table is entropy l-diverse: floor(e^Entropy(S)).
int LargestEntropyL(const CodedTable& t);

// Eq. (12) of yang2010 (Xiao & Tao's estimate on a generalized table): sum over groups p of
// #p(R_s) * prod_i |R_i ∩ Values_p(Q_i)| / |Values_p(Q_i)|, where Values_p(Q_i) is the set of
// values group p publishes for Q_i (the generalized value) and #p(R_s) the group's records with a
// sensitive value in R_s: each QID value of a generalized set is taken as equally likely (the
// uniform assumption the paper names). Attributes the query does not name contribute 1.
double LDiversityEstimate(const CodedTable& t, const LDiverseGroups& groups, const CountQuery& q);

// Apriori thresholds (fractions of the records).
struct AprioriOptions {
  double min_support = 0.08;
  double min_confidence = 0.15;
};

// A quasi-sensitive association X -> s: `antecedent` is (column, code) items of QID columns in
// increasing column order, `consequent` a code of the sensitive column.
struct QuasiSensitiveRule {
  std::vector<std::pair<uint32_t, uint32_t>> antecedent;
  uint32_t consequent = 0;
  uint64_t support = 0;  // records holding X and s
  double confidence = 0;
  auto operator<=>(const QuasiSensitiveRule& o) const {
    if (auto c = antecedent <=> o.antecedent; c != 0) return c;
    return consequent <=> o.consequent;
  }
  bool operator==(const QuasiSensitiveRule& o) const {
    return antecedent == o.antecedent && consequent == o.consequent;
  }
};

// Apriori (Agrawal & Srikant 1994) over the items (column, value) of all columns of `t`: every
// itemset with support >= min_support * n (at most one item per column), then the rules X -> s
// with X non-empty and QID-only, s a sensitive value, support(X ∪ {s}) >= min_support * n and
// support(X ∪ {s}) / support(X) >= min_confidence. Sorted by antecedent, then consequent.
std::vector<QuasiSensitiveRule> QuasiSensitiveRules(const CodedTable& t,
                                                    const AprioriOptions& options);

// |Asso_D ∩ Asso_D'| and |Asso_D|, per antecedent length (index = |X|; index 0 is all lengths).
struct AssociationRecovery {
  std::vector<uint64_t> original;   // |Asso_D|
  std::vector<uint64_t> recovered;  // |Asso_D ∩ Asso_D'|
  uint64_t released = 0;            // |Asso_D'| (all lengths)
};
AssociationRecovery CompareAssociations(const std::vector<QuasiSensitiveRule>& original,
                                        const std::vector<QuasiSensitiveRule>& released,
                                        size_t max_length);

inline constexpr int kAutoAnatomyL = -1;

// What `fedanon evaluate --randomized` computes.
struct RaEvaluationOptions {
  size_t queries = 1000;  // per number of query attributes
  uint64_t query_seed = 1;
  size_t max_query_attributes = 8;  // j = 1..min(this, QIDs)
  AprioriOptions apriori;
  // 0: no Anatomy baseline; kAutoAnatomyL: the paper's l = 10, or the largest l the table is
  // eligible for when that is smaller (none if below 2).
  int anatomy_l = kAutoAnatomyL;
  uint64_t anatomy_seed = 1;
  // The entropy l-diverse generalization baseline (Eq. 12): 0 none; kAutoAnatomyL the paper's
  // l = 10, or the largest l the table is entropy l-diverse for when smaller (none below 2).
  int ldiversity_l = 0;
};

struct QueryErrorRow {
  size_t qid_attributes = 0;    // j
  uint64_t queries = 0;         // drawn
  uint64_t zero_answers = 0;    // with Ans(D) = 0: left out of the averages
  double randomized_error = 0;  // mean relative error on the randomized table
  double anatomy_error = 0;     // mean relative error of Eq. (13) on the Anatomy baseline
  // Medians of the same: the mean is dominated by the few queries with a small Ans(D).
  double randomized_median = 0;
  double anatomy_median = 0;
  double ldiverse_error = 0;  // mean relative error of Eq. (12) on the l-diverse baseline
  double ldiverse_median = 0;
};

struct RaEvaluation {
  uint64_t records = 0;
  std::vector<std::string> qid_names;
  std::string sensitive_name;
  int anatomy_l = 0;  // 0: not computed
  uint32_t anatomy_groups = 0;
  int ldiversity_l = 0;  // 0: not computed
  uint32_t ldiverse_groups = 0;
  std::vector<QueryErrorRow> query_errors;
  AssociationRecovery randomized_associations;
  AssociationRecovery anatomy_associations;
};

// The whole §7 evaluation of `randomized` (a release of `original`, same records in the same
// order, same columns) against `original`, with the Anatomy baseline built from `original`.
// InvalidArgument for tables that do not match or an impossible option.
absl::StatusOr<RaEvaluation> EvaluateRandomization(const CodedTable& original,
                                                   const CodedTable& randomized,
                                                   const RaEvaluationOptions& options);

// Reads the raw table (records with the spec's missing token in any spec attribute dropped, as
// `fedanon randomize` drops them) and its randomized release (the kept records in the same
// order) into tables over the spec's QID attributes (spec order) and its single sensitive
// attribute, with shared dictionaries. InvalidArgument when the spec has no or several
// sensitive attributes or no QID, a column is missing, a row has the wrong width (file:line) or
// the record counts differ; NotFound for a missing file.
struct RaTables {
  CodedTable original;
  CodedTable randomized;
};
absl::StatusOr<RaTables> ReadRaTables(const fedanon::v1::JobSpec& spec, const std::string& raw_path,
                                      const std::string& randomized_path);

// JSON and text renderings of the evaluation.
std::string RaEvaluationToJson(const RaEvaluation& e, const RaEvaluationOptions& options);
std::string RaEvaluationToText(const RaEvaluation& e, const RaEvaluationOptions& options);

}  // namespace fedanon::evaluation
