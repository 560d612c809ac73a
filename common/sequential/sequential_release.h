// Sequential releases (fung2007 thesis ch. 6): the data model of the join between the current
// release T1 (the job's table, generalized on its QID attributes) and an earlier, already
// published release T2 (read as is, never modified).
//
//  * Join attributes are the columns both releases have (by CSV header name): the attacker joins
//    on every common attribute. A common attribute must be a categorical QID with a taxonomy in
//    this job or a column the job releases unchanged.
//  * Consistency predicate (§6.1.3): a T1 value matches a T2 value when they lie on one
//    generalization path of the attribute's taxonomy (one generalizes the other); an attribute
//    released unchanged matches by equality. (t1, t2) match when every common attribute matches.
//  * Inconsistency predicate (§6.1.3): optional rules (C = c, D = d) over a T1 attribute C and a
//    different T2 attribute D: a T1 value at or below c never matches a T2 value at or below d
//    ("below" through the taxonomy of the job's QID of that name; equality without one).
//  * Privacy templates <X, Y, k> over the join (§6.1.1): anonymity templates count the distinct
//    values on Y co-occurring with each value on X (Def. 4.1.1 with Y not necessarily a key);
//    confidentiality templates bound c_y(x) = a(x, y) / a(x) over join records (Def. 5.1.1).
//    A common attribute C in X stands for both T1.C and T2.C, as §6.1.3 recommends.
//  * Several previous releases T2, ..., Tp (§6.5): the star join, each Ti joined with T1 only
//    (join attributes and rules per pair). The model then presents them to the specializer as one
//    "history table" (see SequentialModel), so that the one-release engine runs unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/spec/sequential_spec.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::sequential {

// A dictionary-encoded column of one release: value code per record, code -> value string.
struct CodedColumn {
  std::string name;
  int csv_column = -1;  // -1 for the "@record" column of a previous release (several releases)
  int release = 0;      // previous_columns: the previous release it comes from (1-based)
  std::vector<std::string> values;
  std::vector<int32_t> codes;
};

// One join attribute: where it is in T1 (a QID with taxonomy, or a raw column) and in T2, and for
// every T2 value code the T1-side value it is compared with.
struct JoinAttribute {
  std::string name;
  int qid = -1;          // index into Dataset::qids (taxonomy QID), or -1
  int current_raw = -1;  // index into SequentialModel::current_columns, or -1
  int previous = -1;     // index into SequentialModel::previous_columns
  int release = 1;       // the previous release it joins T1 with (1-based)
  // Per T2 value code: the taxonomy node (qid >= 0) or the T1 raw code (-1: no T1 value equals it).
  std::vector<int32_t> previous_to_current;
};

// A privacy template over the join, with its attributes resolved to column indices.
struct JoinTemplate {
  bool anonymity = true;
  std::string description;  // as written in the spec, for messages and the report
  std::vector<int> x1;      // QID indices of T1 in X (ascending)
  std::vector<int> x2;      // previous_columns indices in X (ascending)
  // Anonymity: Y = y1 x y2; `*_record` adds the record of T1 / T2 (a key) to Y.
  std::vector<int> y1;  // current_columns indices
  std::vector<int> y2;  // previous_columns indices
  bool y1_record = false;
  bool y2_record = false;
  uint64_t k = 1;
  // Confidentiality: the sensitive attribute on one side and its sensitive value codes.
  bool y_previous = false;
  int y_column = -1;  // current_columns or previous_columns index
  std::vector<int32_t> sensitive_codes;
  double max_conf = 1.0;
};

// One inconsistency rule, resolved.
struct InconsistencyRule {
  std::string current_name, previous_name;
  int spec_index = 0;                // its entry in sequential.inconsistent
  int release = 1;                   // the previous release holding D (1-based)
  int current_qid = -1;              // taxonomy QID of T1 holding C, or -1
  int current_raw = -1;              // current_columns index of C, or -1
  int32_t current_value = -1;        // taxonomy node or raw code of c (-1: c never occurs in T1)
  int previous = -1;                 // previous_columns index of D
  std::vector<bool> previous_below;  // per T2 value code of D: at or below d
};

struct SequentialModel {
  // One previous release: its path. Several: the paths joined with ", " (for messages).
  std::string previous_path;
  std::vector<std::string> previous_paths;  // every previous release, in the order given
  // One previous release: its records. Several (star join, thesis §6.5): the rows of the "history
  // table", every combination (t2, ..., tp) of rows, each release's rows first deduplicated on
  // the columns the model uses (`previous_weights`: how many combinations of records a row
  // stands for), keeping only combinations that the most general T1 can match.
  size_t previous_records = 0;
  std::vector<uint64_t> previous_weights;  // empty: every row weighs 1
  std::vector<size_t> previous_lines;      // per T2 record: its line in the file (one release)
  // Several previous releases: per release, per record, its line in the file.
  std::vector<std::vector<size_t>> release_lines;
  std::vector<size_t> current_lines;  // per T1 record (kept rows): its line in the file
  // T1 columns read as raw values (non-QID join attributes, Y attributes of T1).
  std::vector<CodedColumn> current_columns;
  // T2 columns used by the join or the templates.
  std::vector<CodedColumn> previous_columns;
  std::vector<JoinAttribute> join;
  std::vector<InconsistencyRule> rules;
  std::vector<JoinTemplate> templates;

  bool several() const { return previous_paths.size() > 1; }
  // "previous.NAME" (one previous release) or "previousI.NAME" for previous_columns[c].
  std::string PreviousRef(int c) const;
};

// The largest history table (rows of the combined previous releases) LoadSequentialModel builds
// for several previous releases; beyond it the job is refused.
inline constexpr uint64_t kMaxHistoryRows = 2'000'000;

// Reads the previous release (CSV with header) and the raw T1 columns the join needs, resolves
// the templates and the join attributes. Errors: unknown attributes (naming the template and the
// table), a common attribute that is neither a taxonomy QID nor released unchanged, a T2 value
// outside the taxonomy of its attribute (file:line:column), a malformed CSV (file:line:column).
absl::StatusOr<SequentialModel> LoadSequentialModel(const fedanon::v1::JobSpec& spec,
                                                    const table::Dataset& data,
                                                    const std::string& previous_path);
// Several previous releases T2, ..., Tp (thesis §6.5, star join: each joins T1 on the columns it
// has in common with T1; they are not joined with each other). One path: as above. With several,
// each pair (T1, Ti) must be population-related (checked here, naming the dangling record), and
// the history table above is built; refused (naming the size) beyond kMaxHistoryRows rows.
absl::StatusOr<SequentialModel> LoadSequentialModel(const fedanon::v1::JobSpec& spec,
                                                    const table::Dataset& data,
                                                    const std::vector<std::string>& previous_paths);

// Whether the T1-side join value `current` (taxonomy node of a QID, or raw code) matches T2 value
// code `previous` of join attribute `j` (the consistency predicate).
bool JoinValuesMatch(const SequentialModel& model, const table::Dataset& data, int j,
                     int32_t current, int32_t previous);
// Whether rule `r` forbids matching T1 value `current` (taxonomy node or raw code of C) with T2
// value code `previous` of D (the inconsistency predicate).
bool RuleForbids(const SequentialModel& model, const table::Dataset& data, int r, int32_t current,
                 int32_t previous);

}  // namespace fedanon::sequential
