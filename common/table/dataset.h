// The encoded input table of one anonymization job: every QID column dictionary-encoded against
// its hierarchy (taxonomy leaf, suppression value, or rank among the sorted distinct numbers), the
// class column as class indices and the sensitive values the job tracks as a bit set per record.
//
// Built in one pass over the CSV. Bad input is reported precisely: a missing column named in the
// spec, a row with the wrong number of fields (file:line), a non-numeric value in a continuous
// column (file:line:column), and data values missing from a taxonomy (attribute, values, counts).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/huge_pages.h"
#include "common/table/csv.h"
#include "common/table/taxonomy.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::table {

enum class QidKind { kTaxonomy, kSuppression, kContinuous };

struct QidColumn {
  std::string name;
  int csv_column = -1;
  QidKind kind = QidKind::kTaxonomy;
  std::shared_ptr<const Taxonomy> taxonomy;  // kTaxonomy
  std::vector<std::string> values;           // kSuppression: value code -> raw string
  bool values_declared = false;              // kSuppression: domain from the spec (fixed)
  std::vector<double> sorted_values;         // kContinuous: rank -> distinct value (ascending)
  double precision = 0;                      // kContinuous: > 0: ranks are grid indices
  double range_lo = 0, range_hi = 0;         // kContinuous: the full-range interval [lo, hi)
  base::HugePageVector<int32_t> codes;       // per record: leaf NodeId / value code / rank
};

// One sensitive value the privacy model bounds: `value` on the sensitive attribute `attribute`.
struct TrackedSensitive {
  std::string attribute;
  std::string value;
};

struct Dataset {
  std::string source_path;
  // The CSV text as read (once: a FIFO or stdin cannot be read again), for the writers that copy
  // the released rows' other columns verbatim (ReopenSource). Null for a schema and for a regular
  // file, which is read again from disk (memory then does not grow with the text).
  std::shared_ptr<const std::string> source_text;
  // What a user should know but that does not stop the job, e.g. "sensitive value 'x' of
  // attribute 'y' does not occur in the data". The CLI prints these to stderr, a party logs them.
  std::vector<std::string> warnings;
  std::vector<std::string> header;
  size_t num_records = 0;
  uint64_t records_in = 0;       // data rows in the file
  uint64_t records_dropped = 0;  // rows dropped for missing values (`missing: drop`)
  std::vector<bool> kept;        // per data row of the file: kept (true) or dropped
  // A streamed regular file: where data rows start, every kCheckpointRows rows and at the start of
  // each part a load thread read, so that the released rows can be written by several threads.
  struct SourceCheckpoint {
    uint64_t offset = 0;  // byte offset in the file where data row `row` (or a blank line) starts
    uint64_t row = 0;     // index into `kept`
    uint64_t record = 0;  // records (kept rows) before it
  };
  std::vector<SourceCheckpoint> checkpoints;  // ascending; empty for text kept in memory
  static constexpr uint64_t kCheckpointRows = uint64_t{1} << 17;

  std::vector<QidColumn> qids;  // spec order of the QID attributes

  int class_column = -1;                       // csv column of the class attribute, -1 if none
  std::vector<std::string> class_labels;       // class index -> label (order of first appearance)
  bool class_declared = false;                 // class_labels come from the spec (fixed order)
  base::HugePageVector<uint16_t> class_codes;  // per record

  std::vector<TrackedSensitive> tracked;          // bit i of sensitive_bits <-> tracked[i]
  base::HugePageVector<uint64_t> sensitive_bits;  // per record

  // Released non-QID attributes whose domain the spec declares (class, sensitive, other), in spec
  // order; with every such attribute declared, the released table is a multiset over a public
  // domain and a federation can integrate it by secure sum.
  struct ValueColumn {
    std::string name;
    int csv_column = -1;
    std::vector<std::string> values;
    base::HugePageVector<int32_t> codes;  // per record
    // A sensitive attribute with a `taxonomy` (t-closeness's hierarchical distance); null else.
    std::shared_ptr<const Taxonomy> taxonomy;
  };
  std::vector<ValueColumn> value_columns;
  bool all_values_declared = false;  // every released non-QID attribute is in value_columns
  // ldiversity / tcloseness: the index in value_columns of the model's sensitive attribute (whose
  // distribution per group the model bounds); -1 for other models.
  int distribution_column = -1;

  int num_classes() const { return static_cast<int>(class_labels.size()); }
  // Number of value combinations of value_columns (product of their domain sizes), computed with
  // checked arithmetic: UINT64_MAX (kTooManyCombinations) when the product does not fit.
  uint64_t ValueCombinations() const;
  static constexpr uint64_t kTooManyCombinations = UINT64_MAX;
};

// The most declared values the sensitive attribute of an ldiversity or tcloseness job may have
// (one word per value in every histogram; the final check's vector grows with it).
inline constexpr size_t kMaxSensitiveDomain = 4096;

// Collects the sensitive values the spec's privacy model refers to (LKC sensitive_values and every
// confidence template's values), in a fixed order. At most 64.
absl::StatusOr<std::vector<TrackedSensitive>> TrackedSensitiveValues(
    const fedanon::v1::JobSpec& spec);

struct LoadDatasetOptions {
  uint64_t max_input_bytes = base::kDefaultMaxTableBytes;  // the CSV file (CsvOptions::max_bytes)
  size_t max_line_bytes = base::kMaxLineBytes;
  // Threads encoding a regular file: 0 uses two when the machine has them (the two halves of the
  // file at once, then joined: the same Dataset as one pass), 1 reads in one pass.
  int threads = 0;
  uint64_t parallel_min_bytes = uint64_t{16} << 20;  // smaller files are read in one pass
};

// Reads `csv_path` and encodes it for `spec` (which must have passed ValidateJobSpec;
// taxonomy paths resolved). With `schema` (see BuildPublicSchema) the table is encoded against
// that public schema instead, so that every party of a federated job uses identical codes.
absl::StatusOr<Dataset> LoadDataset(const fedanon::v1::JobSpec& spec, const std::string& csv_path,
                                    const Dataset* schema = nullptr,
                                    const LoadDatasetOptions& options = {});

// Builds a Dataset row by row from a source other than a CSV file (a PostgreSQL COPY stream,
// common/table_postgres/postgres_source.h), with LoadDataset's checks and messages: `source_name`
// takes the file's place in them and rows are numbered from 1 ("PostgreSQL source 'x', row 12:
// column 1 (age): 'abc' is not a number"). The caller keeps the rows' CSV text in source_text.
class DatasetEncoder {
 public:
  // As LoadDataset: `schema` null builds one from the spec (taxonomy files read from disk).
  static absl::StatusOr<std::unique_ptr<DatasetEncoder>> Create(const fedanon::v1::JobSpec& spec,
                                                                std::string source_name,
                                                                const Dataset* schema = nullptr);
  ~DatasetEncoder();
  // The column names, once, before the first row: missing or repeated columns are errors.
  absl::Status SetHeader(const std::vector<std::string_view>& header);
  // One data row (`row`: 1-based, for messages).
  absl::Status AddRow(const std::vector<std::string_view>& fields, size_t row);
  // After the last row: the checks that need every row (no records, unknown values); the
  // Dataset, with `source_text` as its kept text (ReopenSource).
  absl::StatusOr<Dataset> Finish(std::shared_ptr<const std::string> source_text);

 private:
  struct State;
  explicit DatasetEncoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A reader over the rows of `data`'s CSV text again (the text kept in memory, else the file at
// source_path).
absl::StatusOr<std::unique_ptr<CsvReader>> ReopenSource(const Dataset& data);

// The public part of a job's encoding, with no records: taxonomies (parsed from `taxonomy_texts`,
// attribute name -> ARX file content), the declared domains of class and suppression attributes,
// and the grid of continuous attributes. Federated jobs require every domain to be declared.
// `taxonomy_options.quote_labels` false keeps the taxonomies' content out of error messages (a
// party, whose errors travel to the leader).
absl::StatusOr<Dataset> BuildPublicSchema(const fedanon::v1::JobSpec& spec,
                                          const std::map<std::string, std::string>& taxonomy_texts,
                                          const TaxonomyParseOptions& taxonomy_options = {});

}  // namespace fedanon::table
