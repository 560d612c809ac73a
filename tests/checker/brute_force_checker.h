// An independent brute-force checker for anonymized tables, used by the test suite to verify the
// engine's outputs. It shares no code with the engine (only the JobSpec proto message and plain
// strings) and favours obviousness over speed: every privacy constraint is checked by grouping
// the rows literally, every refinement is applied to a copy of the table and re-checked.
//
// Conventions (read this before relying on a result):
//  * Rows are numbered from 1 in messages; both tables hold the same records in the same order.
//  * Attribute kinds. A column is a QID column iff the spec lists it with role qid. A QID column
//    with an entry in `taxonomy_paths` is a taxonomy attribute (whatever its declared type, so a
//    continuous attribute with a fixed taxonomy, like Age in mohammed2010 Fig. 2, can be given as
//    one); otherwise a continuous QID column is discretized into `[lo-hi)` intervals; otherwise it
//    is a suppression attribute (thesis §3.1). Every other column must be released unchanged.
//    Spec attributes with role id may be absent from the header (they are never released); every
//    other spec attribute must be a column.
//  * Taxonomy paths are normalized like ARX hierarchies: consecutive equal labels on one path
//    collapse into one node. A label with two different parents, a leaf label that is also an
//    inner node, or paths ending in different roots are input errors.
//  * Sensitive and class values are always read from the raw table.
//  * LKC (mohammed2010 Def. 3.1): every subset of the QID attributes of size exactly
//    m = min(L, |QID|) is checked first; when |QID| <= 8 the sizes 1..m-1 are checked as well (a
//    redundant cross-check, by monotonicity). With no QID attribute the empty subset (the whole
//    table) is checked. `subsets_checked` counts every subset checked, cross-checks included.
//  * Templates: each anonymity template and each confidence template counts as one checked
//    subset; the groups of confidence templates also count towards `smallest_group`.
//  * `smallest_group` is the minimum over every group of every checked subset/template (0 when the
//    table has no rows); `largest_confidence` the maximum P(s|qid) over every group and listed
//    sensitive value of every constraint that has sensitive values (0 if none).
//  * ldiversity / tcloseness: one constraint over every QID column (the equivalence classes),
//    k = max(K, ceil(l)) for ldiversity (K for tcloseness), and every group's distribution of
//    the sensitive attribute, read from the raw table, must meet the model (Machanavajjhala et
//    al. 2007 for distinct, entropy, recursive (c, l); Li et al. 2007 for t-closeness). The Earth
//    Mover's Distance is computed by solving the transportation problem between the group's and
//    the whole raw table's distributions (a min-cost flow over the ground distances: equal,
//    ordered by the spec's `values` order, or the height of the lowest common ancestor in
//    `sensitive_taxonomy` over its height) — not by the papers' closed forms the engine uses.
//  * Status codes: malformed inputs give InvalidArgument; a table that is checked and found
//    wanting (untruthful, not maximal, or - for CheckMaximal - not even private) gives
//    FailedPrecondition. CheckPrivacy reports both through `satisfied = false` + `violation`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::testing {

struct CheckerInput {
  fedanon::v1::JobSpec spec;
  std::vector<std::string> header;                   // column names, same for both tables
  std::vector<std::vector<std::string>> raw;         // raw records
  std::vector<std::vector<std::string>> anonymized;  // same rows, same order, generalized
  // Categorical QID attribute name -> (leaf value -> labels from the leaf up to the root,
  // inclusive). QID attributes absent from this map and of categorical type are suppression
  // attributes.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> taxonomy_paths;
  // tcloseness with distance: hierarchical: the sensitive attribute's taxonomy (leaf value ->
  // labels from the leaf up to the root), normalized like taxonomy_paths.
  std::map<std::string, std::vector<std::string>> sensitive_taxonomy;
};

struct PrivacyCheck {
  bool satisfied = false;
  std::string violation;  // first violation found, human readable (constraint, qid values, counts)
  uint64_t smallest_group = 0;    // min |T[qid]| over all checked attribute subsets / templates
  double largest_confidence = 0;  // max P(s|qid) over all checked confidence constraints
  uint64_t subsets_checked = 0;
  // ldiversity: the smallest number of distinct sensitive values (entropy variant: e^entropy)
  // over the groups; recursive: the largest r_1 / (r_l + ... + r_m); tcloseness: the largest EMD.
  double smallest_diversity = 0;
  double largest_recursive_ratio = 0;
  double largest_closeness = 0;
};

// The Earth Mover's Distance between two distributions given as counts over the same m values,
// under the ground distance `distance[i][j]`: the transportation problem solved as a min-cost
// flow (exposed for tests).
double TransportationEmd(const std::vector<uint64_t>& counts, const std::vector<uint64_t>& overall,
                         const std::vector<std::vector<double>>& distance);

// Checks the privacy model of `in.spec` on `in.anonymized` (sensitive values from `in.raw`).
PrivacyCheck CheckPrivacy(const CheckerInput& in);

// Local recoding (docs/engine.md, "Local recoding"): records of different groups may carry
// different generalizations of the same raw value, so released values overlap. A released value
// *covers* a raw value when it equals it, lies on its taxonomy path, is an interval `[lo-hi)`
// containing it, or is the suppression token (a suppressed value may hide any value). The check
// is the conjunction of
//  * released classes: CheckPrivacy's literal grouping (every class on each checked subset or
//    template has >= k records and confidence <= the bound), and
//  * covering: for every subset of 1..min(L, |QID|) QID attributes (LKC; all sizes, no
//    shortcut) or each template's qid (templates), and every combination of raw values on it
//    that occurs in the raw table, the records whose released values all cover it number >= k
//    (K, the template's k) and hold each listed sensitive value with confidence <= the bound.
// `smallest_group` / `largest_confidence` are over both parts; `subsets_checked` counts both.
PrivacyCheck CheckLocalPrivacy(const CheckerInput& in);

// Every output QID value generalizes its raw value; every other column is byte-identical.
absl::Status CheckTruthful(const CheckerInput& in);

// The anonymized table is truthful and private, and no single further refinement (specialization
// of a taxonomy value, disclosure of a suppressed value, or the engine's split of an interval)
// keeps the privacy model satisfied. The split of an interval follows the spec's numeric_split:
// `exact`, the threshold among the distinct values in it of maximal information gain (the
// smallest of ties); otherwise (binned, the default) the same choice among the boundaries of the
// bins that lie inside it, the bins rebuilt from docs/engine.md's rule over the whole raw table
// (equal-width public cells of the declared or data range, merged left to right into bins of at
// least K records, a short tail joining the last bin). With `spec.beneficial`, refinements whose
// records (all rows showing the refined value; for a disclosure, all rows showing the suppression
// token) have a single class are not considered.
absl::Status CheckMaximal(const CheckerInput& in);

// A discretized value `[lo-hi)`, e.g. "[30-60)", "[-3.5-10)", "[-10--2.5)", "[1e-05-2)". The
// separator is the `-` that follows the first number. Exposed for tests.
struct Interval {
  double lo = 0;
  double hi = 0;
  std::string lo_text;  // the two numbers as written
  std::string hi_text;
};
absl::StatusOr<Interval> ParseInterval(std::string_view text);

}  // namespace fedanon::testing
