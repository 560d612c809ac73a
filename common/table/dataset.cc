#include "common/table/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/huge_pages.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/table/label_index.h"
#include "common/table/unknown_values.h"

namespace fedanon::table {
namespace {

using fedanon::v1::Attribute;
using fedanon::v1::JobSpec;

std::string SensitiveAttributeFor(const JobSpec& spec, const std::string& named) {
  if (!named.empty()) return named;
  for (const Attribute& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) return a.name();
  }
  return "";
}

// The public grid of a continuous attribute with `precision` (and its `range`).
absl::Status SetGrid(const Attribute& a, QidColumn* col) {
  if (a.range_size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", a.name(), "': `precision` needs a `range`"));
  }
  col->precision = a.precision();
  col->range_lo = a.range(0);
  col->range_hi = a.range(1);
  const double cells = std::ceil((col->range_hi - col->range_lo) / col->precision);
  if (!(cells >= 1) || cells > 50'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", a.name(), "': range / precision gives ", cells,
                     " grid points; between 1 and 50,000,000 are supported"));
  }
  col->sorted_values.resize(static_cast<size_t>(cells));
  for (size_t i = 0; i < col->sorted_values.size(); ++i) {
    col->sorted_values[i] = col->range_lo + static_cast<double>(i) * col->precision;
  }
  return absl::OkStatus();
}

// The schema of QID attribute `a`, with no records. `load_taxonomy` as for BuildSchema.
template <typename LoadTaxonomy>
absl::StatusOr<QidColumn> BuildQidColumn(const JobSpec& spec, const Attribute& a,
                                         LoadTaxonomy& load_taxonomy, bool require_public) {
  QidColumn col;
  col.name = a.name();
  if (!a.taxonomy().empty()) {
    col.kind = QidKind::kTaxonomy;
    ASSIGN_OR_RETURN(Taxonomy tax, load_taxonomy(a));
    if (spec.missing() == fedanon::v1::MISSING_KEEP &&
        !tax.FindLeaf(spec.missing_token()).has_value()) {
      RETURN_IF_ERROR(tax.AddLeafUnderRoot(spec.missing_token()).status());
    }
    col.taxonomy = std::make_shared<const Taxonomy>(std::move(tax));
  } else if (a.type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
    col.kind = QidKind::kContinuous;
    if (a.precision() > 0) {
      RETURN_IF_ERROR(SetGrid(a, &col));
    } else if (require_public) {
      return absl::InvalidArgumentError(absl::StrCat(
          "continuous attribute '", a.name(),
          "' needs `range` and `precision` in a federated job (a public grid of values)"));
    }
  } else {
    col.kind = QidKind::kSuppression;
    if (a.values_size() > 0) {
      col.values.assign(a.values().begin(), a.values().end());
      col.values_declared = true;
    } else if (require_public) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(),
                       "' has no taxonomy, so a federated job needs its `values` listed"));
    }
  }
  return col;
}

// Builds the encoding shared by every holder of the job. `load_taxonomy(attr)` supplies the
// taxonomy of a QID attribute that names one.
template <typename LoadTaxonomy>
absl::StatusOr<Dataset> BuildSchema(const JobSpec& spec, LoadTaxonomy load_taxonomy,
                                    bool require_public) {
  Dataset ds;
  ASSIGN_OR_RETURN(ds.tracked, TrackedSensitiveValues(spec));
  ds.all_values_declared = true;
  for (const Attribute& a : spec.attributes()) {
    const bool released_value = a.role() == fedanon::v1::ROLE_CLASS ||
                                a.role() == fedanon::v1::ROLE_SENSITIVE ||
                                a.role() == fedanon::v1::ROLE_OTHER;
    if (released_value) {
      if (a.values_size() > 0) {
        Dataset::ValueColumn vc;
        vc.name = a.name();
        vc.values.assign(a.values().begin(), a.values().end());
        // A sensitive attribute's taxonomy: the hierarchical ground distance of t-closeness.
        if (a.role() == fedanon::v1::ROLE_SENSITIVE && !a.taxonomy().empty()) {
          ASSIGN_OR_RETURN(Taxonomy tax, load_taxonomy(a));
          vc.taxonomy = std::make_shared<const Taxonomy>(std::move(tax));
        }
        ds.value_columns.push_back(std::move(vc));
      } else {
        ds.all_values_declared = false;
      }
    }
    if (a.role() == fedanon::v1::ROLE_CLASS) {
      if (a.values_size() > 0) {
        ds.class_labels.assign(a.values().begin(), a.values().end());
        ds.class_declared = true;
      } else if (require_public) {
        return absl::InvalidArgumentError(absl::StrCat(
            "class attribute '", a.name(), "' needs its `values` listed in a federated job"));
      }
      continue;
    }
    if (a.role() != fedanon::v1::ROLE_QID) continue;
    ASSIGN_OR_RETURN(QidColumn col, BuildQidColumn(spec, a, load_taxonomy, require_public));
    ds.qids.push_back(std::move(col));
  }
  const auto& privacy = spec.privacy();
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
      privacy.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    const std::string attribute = SensitiveAttributeFor(spec, privacy.sensitive_attribute());
    for (size_t i = 0; i < ds.value_columns.size(); ++i) {
      if (ds.value_columns[i].name == attribute) ds.distribution_column = static_cast<int>(i);
    }
    if (ds.distribution_column < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "privacy model ",
          privacy.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ? "ldiversity" : "tcloseness",
          " needs the values of sensitive attribute '", attribute, "' listed (values: [...])"));
    }
  }
  return ds;
}

// Encodes the data rows of a CSV file into a Dataset that holds the job's schema: resolves the
// spec's attributes against the header, encodes one row at a time, and reports the values outside
// a declared domain or taxonomy once every row has been read.
//
// The per-record columns are written at [base, base + written()) of the Dataset's vectors
// (SetOutput), and the dictionaries the data grows (undeclared values, class labels, the distinct
// numbers of a continuous column without a grid) are the encoder's own: two encoders can fill two
// parts of one Dataset at once, from two byte ranges of one file, and Merge() then joins the
// second into the first exactly as if one encoder had read both parts in order.
class RowEncoder {
 public:
  // `numbered_rows`: `line` is a data row number (a database source), not a file line, and
  // errors say "<source>, row N" instead of "<file>:N".
  RowEncoder(const JobSpec& spec, const std::string& csv_path, Dataset* ds,
             bool numbered_rows = false)
      : spec_(spec), csv_path_(csv_path), ds_(ds), numbered_rows_(numbered_rows) {}

  // Reads the header (`fields`) into ds->header and resolves every column the job uses.
  absl::Status ResolveColumns(const std::vector<std::string_view>& fields);
  // For a second encoder of the same Dataset: the columns `first` resolved.
  void CopyColumnsFrom(const RowEncoder& first);
  // Records go to index `base` on, below `limit` (the vectors sized beforehand; a record beyond
  // is an error: the input changed since its lines were counted). By default the vectors grow.
  void SetOutput(size_t base, size_t limit) {
    base_ = base;
    limit_ = limit;
    grow_ = false;
  }
  // Sizes the growing vectors for `records` at once (they still grow beyond it if need be).
  void SizeFor(size_t records);
  // Encodes the data row `fields` (file line `line`); rows with a missing value may be dropped.
  absl::Status EncodeRow(const std::vector<std::string_view>& fields, size_t line);
  // Joins `second` (which wrote after this encoder's records) into this one: its records move
  // right after this one's, its dictionary codes are mapped onto this one's.
  void Merge(RowEncoder& second);
  // After the last row (and Merge): trims the vectors to the records; no records, values outside
  // declared domains, the ranks of continuous columns without a grid.
  absl::Status Finish();

  uint64_t rows() const { return records_in_; }
  // Notes that the next data row starts at byte `offset` of the file (Dataset::checkpoints).
  void AddCheckpoint(uint64_t offset) { checkpoints_.push_back({offset, records_in_, written_}); }

 private:
  struct SensitiveColumn {
    int column;
    std::vector<std::pair<std::string, int>> values;  // tracked value -> bit
  };
  // Per QID column scratch state.
  struct Scan {
    LabelIndex leaves;                                    // kTaxonomy: leaf label -> NodeId
    absl::flat_hash_map<std::string, int32_t> value_ids;  // kSuppression
    std::vector<std::string> values;                      // kSuppression: id -> value
    std::map<std::string, uint64_t> unknown;              // values outside taxonomy / domain
    absl::flat_hash_map<double, int32_t> number_ids;      // kContinuous without grid
    std::vector<double> numbers;                          // its distinct values: id -> value
    // The ids of small whole numbers, the common case, without hashing: value -> id + 1 (0: not
    // seen). The table covers [0, DirectReach()), twice the distinct values seen (at least
    // 4,096): 8 bytes per distinct value at most, less than a hash map entry, so that it is sized
    // by the data and never by the largest value. Dense domains (ages, hours) are all in it;
    // sparse ones such as fnlwgt (26,741 values up to ~1.5M in Adult) are mostly hashed: there a
    // reach of 16 times the distinct values made a table of 1.7 MiB per loading thread, zeroed
    // page by page, and loading it twice as slow as hashing (measured on Adult's and a generated
    // 1M-row fnlwgt column: 2 times reaches as fast as 16 times on the latter).
    std::vector<int32_t> direct_ids;
    static constexpr size_t kDirectNumbers = size_t{1} << 21;
    size_t DirectReach() const {
      return std::min(kDirectNumbers, std::max<size_t>(4096, 2 * numbers.size()));
    }
    // `integral`: x is known to be a whole number (no need to check).
    int32_t NumberId(double x, bool integral = false) {
      if (x >= 0 && x < static_cast<double>(kDirectNumbers) && (integral || x == std::floor(x))) {
        const auto i = static_cast<size_t>(x);
        if (i >= direct_ids.size() && i < DirectReach()) {
          direct_ids.resize(std::clamp(2 * direct_ids.size(), i + 1, DirectReach()), 0);
        }
        if (i < direct_ids.size()) {
          if (direct_ids[i] == 0) {
            // Seen before the table reached it: it has its id in the hash map.
            const auto hashed = number_ids.find(x);
            if (hashed != number_ids.end()) {
              direct_ids[i] = hashed->second + 1;
            } else {
              numbers.push_back(x);
              direct_ids[i] = static_cast<int32_t>(numbers.size());
            }
          }
          return direct_ids[i] - 1;
        }
      }
      auto [it, inserted] = number_ids.try_emplace(x, static_cast<int32_t>(numbers.size()));
      if (inserted) numbers.push_back(x);
      return it->second;
    }
  };

  absl::Status ResolveSensitiveColumns(const absl::flat_hash_map<std::string, int>& column_of);
  void PrepareScans();
  bool Reserve();                // room for one more record at base_ + written_
  void ResizeColumns(size_t n);  // every per-record column to n records
  absl::Status EncodeQid(size_t q, std::string_view v, size_t line, size_t at);
  absl::Status EncodeContinuous(size_t q, std::string_view v, size_t line, size_t at);
  absl::Status EncodeClass(std::string_view v, size_t at);
  void EncodeValueColumns(const std::vector<std::string_view>& fields, size_t at);
  uint64_t SensitiveBits(const std::vector<std::string_view>& fields) const;
  absl::Status FinishQid(size_t q);
  absl::Status RankContinuous(size_t q);
  // Where record `line` is, for messages: "t.csv:12" or "PostgreSQL source 'x', row 12".
  std::string At(size_t line) const {
    return numbered_rows_ ? absl::StrCat(csv_path_, ", row ", line)
                          : absl::StrCat(csv_path_, ":", line);
  }

  const JobSpec& spec_;
  const std::string& csv_path_;
  Dataset* ds_;
  bool numbered_rows_;
  size_t base_ = 0;
  size_t limit_ = SIZE_MAX;
  bool grow_ = true;
  size_t written_ = 0;
  uint64_t records_in_ = 0;
  uint64_t records_dropped_ = 0;
  std::vector<bool> kept_;
  std::vector<Dataset::SourceCheckpoint> checkpoints_;
  size_t width_ = 0;
  std::vector<int> listed_columns_;
  std::string class_name_;
  std::vector<absl::flat_hash_map<std::string, int32_t>> value_ids_;  // per value column
  std::vector<std::map<std::string, uint64_t>> unknown_values_;       // per value column
  std::vector<SensitiveColumn> sensitive_columns_;
  std::vector<Scan> scans_;  // per QID column
  absl::flat_hash_map<std::string, uint16_t> class_ids_;
  std::vector<std::string> class_labels_;
  std::map<std::string, uint64_t> unknown_classes_;
};

absl::Status RowEncoder::ResolveColumns(const std::vector<std::string_view>& fields) {
  absl::flat_hash_map<std::string, int> column_of;
  for (size_t i = 0; i < fields.size(); ++i) {
    ds_->header.emplace_back(fields[i]);
    if (!column_of.emplace(std::string(fields[i]), static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          csv_path_, ":1: column '", std::string(fields[i]), "' appears twice in the header"));
    }
  }
  width_ = ds_->header.size();

  for (const Attribute& a : spec_.attributes()) {
    auto it = column_of.find(a.name());
    if (it == column_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(), "' named in the spec is not a column of ",
                       csv_path_, " (columns: ", absl::StrJoin(ds_->header, ", "), ")"));
    }
    listed_columns_.push_back(it->second);
    if (a.role() == fedanon::v1::ROLE_CLASS) {
      ds_->class_column = it->second;
      class_name_ = a.name();
    }
  }
  for (QidColumn& col : ds_->qids) col.csv_column = column_of.at(col.name);
  for (auto& vc : ds_->value_columns) {
    vc.csv_column = column_of.at(vc.name);
    vc.codes.clear();
  }
  for (QidColumn& col : ds_->qids) col.codes.clear();
  ds_->class_codes.clear();
  ds_->sensitive_bits.clear();
  RETURN_IF_ERROR(ResolveSensitiveColumns(column_of));
  PrepareScans();
  return absl::OkStatus();
}

void RowEncoder::CopyColumnsFrom(const RowEncoder& first) {
  width_ = first.width_;
  listed_columns_ = first.listed_columns_;
  class_name_ = first.class_name_;
  sensitive_columns_ = first.sensitive_columns_;
  PrepareScans();
}

absl::Status RowEncoder::ResolveSensitiveColumns(
    const absl::flat_hash_map<std::string, int>& column_of) {
  for (size_t bit = 0; bit < ds_->tracked.size(); ++bit) {
    const auto& t = ds_->tracked[bit];
    auto it = column_of.find(t.attribute);
    if (it == column_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensitive attribute '", t.attribute, "' is not a column of ", csv_path_));
    }
    auto sc = std::find_if(sensitive_columns_.begin(), sensitive_columns_.end(),
                           [&](const SensitiveColumn& s) { return s.column == it->second; });
    if (sc == sensitive_columns_.end()) {
      sensitive_columns_.push_back({it->second, {}});
      sc = sensitive_columns_.end() - 1;
    }
    sc->values.emplace_back(t.value, static_cast<int>(bit));
  }
  return absl::OkStatus();
}

void RowEncoder::PrepareScans() {
  scans_.assign(ds_->qids.size(), Scan{});
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    if (const Taxonomy* tax = ds_->qids[q].taxonomy.get(); tax != nullptr) {
      for (size_t n = 0; n < tax->size(); ++n) {
        const auto node = static_cast<Taxonomy::NodeId>(n);
        if (tax->is_leaf(node)) scans_[q].leaves.Add(tax->label(node), node);
      }
    }
    scans_[q].values = ds_->qids[q].values;
    for (size_t v = 0; v < ds_->qids[q].values.size(); ++v) {
      scans_[q].value_ids.emplace(ds_->qids[q].values[v], static_cast<int32_t>(v));
    }
  }
  class_labels_ = ds_->class_labels;
  class_ids_.clear();
  for (size_t c = 0; c < class_labels_.size(); ++c) {
    class_ids_.emplace(class_labels_[c], static_cast<uint16_t>(c));
  }
  value_ids_.assign(ds_->value_columns.size(), {});
  unknown_values_.assign(ds_->value_columns.size(), {});
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    const auto& vc = ds_->value_columns[v];
    for (size_t i = 0; i < vc.values.size(); ++i) {
      value_ids_[v].emplace(vc.values[i], static_cast<int32_t>(i));
    }
  }
}

bool RowEncoder::Reserve() {
  const size_t at = base_ + written_;
  if (!grow_) return at < limit_ && at < ds_->sensitive_bits.size();
  if (at < ds_->sensitive_bits.size()) return true;
  const size_t n = std::max<size_t>(1024, 2 * ds_->sensitive_bits.size());
  ResizeColumns(n);
  return true;
}

void RowEncoder::ResizeColumns(size_t n) {
  for (QidColumn& col : ds_->qids) col.codes.resize(n);
  if (ds_->class_column >= 0) ds_->class_codes.resize(n);
  for (auto& vc : ds_->value_columns) vc.codes.resize(n);
  ds_->sensitive_bits.resize(n);
}

void RowEncoder::SizeFor(size_t records) {
  const size_t n = base_ + records;
  if (!grow_ || n <= ds_->sensitive_bits.size()) return;
  ResizeColumns(n);
}

absl::Status RowEncoder::EncodeRow(const std::vector<std::string_view>& fields, size_t line) {
  ++records_in_;
  if (fields.size() != width_) {
    return absl::InvalidArgumentError(absl::StrCat(
        At(line), ": expected ", width_, " fields as in the header, found ", fields.size()));
  }
  const bool has_missing = std::any_of(listed_columns_.begin(), listed_columns_.end(),
                                       [&](int c) { return fields[c] == spec_.missing_token(); });
  if (has_missing && spec_.missing() != fedanon::v1::MISSING_KEEP) {
    kept_.push_back(false);
    ++records_dropped_;
    return absl::OkStatus();
  }
  if (!Reserve()) {
    return absl::InternalError(absl::StrCat(csv_path_, " changed while it was read"));
  }
  const size_t at = base_ + written_;
  kept_.push_back(true);
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    RETURN_IF_ERROR(EncodeQid(q, fields[ds_->qids[q].csv_column], line, at));
  }
  if (ds_->class_column >= 0) RETURN_IF_ERROR(EncodeClass(fields[ds_->class_column], at));
  EncodeValueColumns(fields, at);
  ds_->sensitive_bits[at] = SensitiveBits(fields);
  ++written_;
  return absl::OkStatus();
}

absl::Status RowEncoder::EncodeQid(size_t q, std::string_view v, size_t line, size_t at) {
  QidColumn& col = ds_->qids[q];
  Scan& scan = scans_[q];
  switch (col.kind) {
    case QidKind::kTaxonomy: {
      const int32_t* leaf = scan.leaves.Find(v);  // Taxonomy::FindLeaf, faster
      if (leaf == nullptr) ++scan.unknown[std::string(v)];
      col.codes[at] = leaf != nullptr ? *leaf : 0;
      break;
    }
    case QidKind::kContinuous:
      return EncodeContinuous(q, v, line, at);
    case QidKind::kSuppression: {
      auto it = scan.value_ids.find(absl::string_view(v.data(), v.size()));
      if (it != scan.value_ids.end()) {
        col.codes[at] = it->second;
      } else if (col.values_declared) {
        ++scan.unknown[std::string(v)];
        col.codes[at] = 0;
      } else {
        const auto id = static_cast<int32_t>(scan.values.size());
        scan.value_ids.emplace(std::string(v), id);
        scan.values.emplace_back(v);
        col.codes[at] = id;
      }
      break;
    }
  }
  return absl::OkStatus();
}

// Parses a number as absl::SimpleAtod does; plain integers of up to 15 digits (exact in a
// double, the common case) without it, and then sets `*integral`.
bool ParseNumber(std::string_view v, double* x, bool* integral) {
  *integral = false;
  const bool negative = !v.empty() && v[0] == '-';
  const size_t digits = v.size() - (negative ? 1 : 0);
  if (digits > 0 && digits <= 15) {
    int64_t n = 0;
    bool all_digits = true;
    for (size_t i = negative ? 1 : 0; i < v.size(); ++i) {
      const unsigned d = static_cast<unsigned char>(v[i]) - '0';
      if (d > 9) {
        all_digits = false;
        break;
      }
      n = n * 10 + d;
    }
    if (all_digits) {
      *x = negative ? -static_cast<double>(n) : static_cast<double>(n);
      *integral = true;
      return true;
    }
  }
  return absl::SimpleAtod(absl::string_view(v.data(), v.size()), x);
}

absl::Status RowEncoder::EncodeContinuous(size_t q, std::string_view v, size_t line, size_t at) {
  QidColumn& col = ds_->qids[q];
  double x;
  bool integral;
  if (!ParseNumber(v, &x, &integral) || !std::isfinite(x)) {
    return absl::InvalidArgumentError(
        absl::StrCat(At(line), ": column ", col.csv_column + 1, " (", col.name, "): '",
                     std::string(v), "' is not a number",
                     v == spec_.missing_token()
                         ? " (missing values in continuous attributes need `missing: drop`)"
                         : ""));
  }
  if (col.precision > 0) {
    const double cell = std::round((x - col.range_lo) / col.precision);
    const double snapped = col.range_lo + cell * col.precision;
    if (cell < 0 || cell >= static_cast<double>(col.sorted_values.size()) ||
        std::fabs(snapped - x) > 1e-9 * std::max(1.0, std::fabs(x))) {
      return absl::InvalidArgumentError(absl::StrCat(
          At(line), ": column ", col.csv_column + 1, " (", col.name, "): ", std::string(v),
          " is not on the grid ", col.range_lo, " + i * ", col.precision, " inside the range [",
          col.range_lo, ", ", col.range_hi, ")"));
    }
    col.codes[at] = static_cast<int32_t>(cell);
  } else {
    // The id of the value among the distinct values seen; ranked by RankContinuous at the end.
    col.codes[at] = scans_[q].NumberId(x, integral);
  }
  return absl::OkStatus();
}

absl::Status RowEncoder::EncodeClass(std::string_view v, size_t at) {
  auto it = class_ids_.find(absl::string_view(v.data(), v.size()));
  if (it != class_ids_.end()) {
    ds_->class_codes[at] = it->second;
  } else if (ds_->class_declared) {
    ++unknown_classes_[std::string(v)];
    ds_->class_codes[at] = 0;
  } else {
    if (class_ids_.size() >= 65535) {
      return absl::InvalidArgumentError("the class attribute has more than 65535 values");
    }
    const auto id = static_cast<uint16_t>(class_ids_.size());
    class_ids_.emplace(std::string(v), id);
    class_labels_.emplace_back(v);
    ds_->class_codes[at] = id;
  }
  return absl::OkStatus();
}

void RowEncoder::EncodeValueColumns(const std::vector<std::string_view>& fields, size_t at) {
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    auto& vc = ds_->value_columns[v];
    const std::string_view field = fields[vc.csv_column];
    auto it = value_ids_[v].find(absl::string_view(field.data(), field.size()));
    if (it == value_ids_[v].end()) {
      ++unknown_values_[v][std::string(field)];
      vc.codes[at] = 0;
    } else {
      vc.codes[at] = it->second;
    }
  }
}

uint64_t RowEncoder::SensitiveBits(const std::vector<std::string_view>& fields) const {
  uint64_t bits = 0;
  for (const SensitiveColumn& sc : sensitive_columns_) {
    for (const auto& [value, bit] : sc.values) {
      if (fields[sc.column] == value) bits |= uint64_t{1} << bit;
    }
  }
  return bits;
}

// Adds the counts of `from` to `into`.
void MergeCounts(const std::map<std::string, uint64_t>& from,
                 std::map<std::string, uint64_t>* into) {
  for (const auto& [value, n] : from) (*into)[value] += n;
}

// Rewrites codes[0, n) through `remap` (unless it is the identity).
template <typename T>
void Remap(const std::vector<int32_t>& remap, T* codes, size_t n) {
  bool identity = true;
  for (size_t i = 0; i < remap.size(); ++i) identity = identity && remap[i] == static_cast<int>(i);
  if (identity) return;
  for (size_t r = 0; r < n; ++r) codes[r] = static_cast<T>(remap[codes[r]]);
}

// Moves n elements of `v` from `from` down to `to` (to <= from).
template <typename T, typename Allocator>
void MoveDown(std::vector<T, Allocator>& v, size_t from, size_t to, size_t n) {
  if (from != to && n > 0) std::memmove(v.data() + to, v.data() + from, n * sizeof(T));
}

void RowEncoder::Merge(RowEncoder& second) {
  const size_t n2 = second.written_, from = second.base_, to = base_ + written_;
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    QidColumn& col = ds_->qids[q];
    Scan& mine = scans_[q];
    Scan& theirs = second.scans_[q];
    MergeCounts(theirs.unknown, &mine.unknown);
    std::vector<int32_t> remap;
    if (col.kind == QidKind::kSuppression && !col.values_declared) {
      for (const std::string& v : theirs.values) {
        auto [it, inserted] =
            mine.value_ids.try_emplace(v, static_cast<int32_t>(mine.values.size()));
        if (inserted) mine.values.push_back(v);
        remap.push_back(it->second);
      }
    } else if (col.kind == QidKind::kContinuous && col.precision <= 0) {
      for (double x : theirs.numbers) remap.push_back(mine.NumberId(x));
    }
    Remap(remap, col.codes.data() + from, n2);
    MoveDown(col.codes, from, to, n2);
  }
  if (ds_->class_column >= 0) {
    MergeCounts(second.unknown_classes_, &unknown_classes_);
    std::vector<int32_t> remap;
    if (!ds_->class_declared) {
      for (const std::string& label : second.class_labels_) {
        auto [it, inserted] =
            class_ids_.try_emplace(label, static_cast<uint16_t>(class_labels_.size()));
        if (inserted) class_labels_.push_back(label);
        remap.push_back(it->second);
      }
    }
    Remap(remap, ds_->class_codes.data() + from, n2);
    MoveDown(ds_->class_codes, from, to, n2);
  }
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    MergeCounts(second.unknown_values_[v], &unknown_values_[v]);
    MoveDown(ds_->value_columns[v].codes, from, to, n2);
  }
  MoveDown(ds_->sensitive_bits, from, to, n2);
  kept_.insert(kept_.end(), second.kept_.begin(), second.kept_.end());
  for (Dataset::SourceCheckpoint c : second.checkpoints_) {
    c.row += records_in_;
    c.record += written_;
    checkpoints_.push_back(c);
  }
  records_in_ += second.records_in_;
  records_dropped_ += second.records_dropped_;
  written_ += n2;
  second.written_ = 0;
}

absl::Status RowEncoder::Finish() {
  const size_t n = base_ + written_;
  ResizeColumns(n);
  ds_->num_records = n;
  ds_->records_in = records_in_;
  ds_->records_dropped = records_dropped_;
  ds_->kept = std::move(kept_);
  ds_->checkpoints = std::move(checkpoints_);
  ds_->class_labels = class_labels_;
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    if (ds_->qids[q].kind == QidKind::kSuppression) ds_->qids[q].values = scans_[q].values;
  }
  if (ds_->num_records == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(csv_path_, ": no records",
                     ds_->records_dropped ? " left after dropping missing values" : ""));
  }
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    if (!unknown_values_[v].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", ds_->value_columns[v].name,
          "': values not among its declared values: ", FormatUnknownValues(unknown_values_[v])));
    }
  }
  if (!unknown_classes_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "class attribute '", class_name_,
        "': values not among its declared values: ", FormatUnknownValues(unknown_classes_)));
  }
  for (size_t q = 0; q < ds_->qids.size(); ++q) RETURN_IF_ERROR(FinishQid(q));
  uint64_t seen = 0;
  for (uint64_t bits : ds_->sensitive_bits) seen |= bits;
  for (size_t bit = 0; bit < ds_->tracked.size(); ++bit) {
    if (seen >> bit & 1) continue;
    ds_->warnings.push_back(absl::StrCat("sensitive value '", ds_->tracked[bit].value,
                                         "' of attribute '", ds_->tracked[bit].attribute,
                                         "' does not occur in ", csv_path_,
                                         " (a misspelling in the spec?)"));
  }
  return absl::OkStatus();
}

absl::Status RowEncoder::FinishQid(size_t q) {
  QidColumn& col = ds_->qids[q];
  const Scan& scan = scans_[q];
  if (!scan.unknown.empty()) {
    uint64_t total = 0;
    for (const auto& [v, n] : scan.unknown) total += n;
    std::string what = " not among the attribute's declared values";
    for (const Attribute& a : spec_.attributes()) {
      if (a.name() == col.name && col.kind == QidKind::kTaxonomy) {
        what = absl::StrCat(" not a leaf of taxonomy ", a.taxonomy());
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", col.name, "': ", scan.unknown.size(),
                     scan.unknown.size() == 1 ? " value is" : " values are", what, " (", total,
                     total == 1 ? " record): " : " records): ", FormatUnknownValues(scan.unknown)));
  }
  if (col.kind != QidKind::kContinuous || col.precision > 0) return absl::OkStatus();
  return RankContinuous(q);
}

// A continuous column without a grid: its distinct values become the ranks, its range is the
// spec's (which must hold them) or the smallest one that holds them.
absl::Status RowEncoder::RankContinuous(size_t q) {
  QidColumn& col = ds_->qids[q];
  const Scan& scan = scans_[q];
  const Attribute* attr = nullptr;
  for (const Attribute& a : spec_.attributes()) {
    if (a.name() == col.name) attr = &a;
  }
  col.sorted_values = scan.numbers;
  std::sort(col.sorted_values.begin(), col.sorted_values.end());
  col.sorted_values.erase(std::unique(col.sorted_values.begin(), col.sorted_values.end()),
                          col.sorted_values.end());
  const double lo = col.sorted_values.front(), hi = col.sorted_values.back();
  if (attr != nullptr && attr->range_size() == 2) {
    col.range_lo = attr->range(0);
    col.range_hi = attr->range(1);
    if (lo < col.range_lo || hi >= col.range_hi) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", col.name, "': data values span [", lo, ", ", hi,
          "] which is not inside the spec's range [", col.range_lo, ", ", col.range_hi, ")"));
    }
  } else {
    const bool integral = std::all_of(col.sorted_values.begin(), col.sorted_values.end(),
                                      [](double x) { return x == std::floor(x); });
    col.range_lo = lo;
    col.range_hi = integral ? hi + 1 : std::nextafter(hi, HUGE_VAL);
  }
  std::vector<int32_t> rank(scan.numbers.size());
  for (size_t i = 0; i < scan.numbers.size(); ++i) {
    rank[i] = static_cast<int32_t>(
        std::lower_bound(col.sorted_values.begin(), col.sorted_values.end(), scan.numbers[i]) -
        col.sorted_values.begin());
  }
  for (int32_t& code : col.codes) code = rank[code];
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<TrackedSensitive>> TrackedSensitiveValues(const JobSpec& spec) {
  std::vector<TrackedSensitive> out;
  // A set, not a scan of `out`: a spec may list thousands of values (refused below, in linear
  // time).
  absl::flat_hash_set<std::pair<std::string, std::string>> seen;
  auto add = [&](const std::string& attribute, const std::string& value) {
    if (seen.emplace(attribute, value).second) out.push_back({attribute, value});
  };
  const auto& privacy = spec.privacy();
  if (privacy.model() != fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    const std::string attr = SensitiveAttributeFor(spec, privacy.sensitive_attribute());
    for (const auto& v : privacy.sensitive_values()) add(attr, v);
  }
  for (const auto& c : privacy.confidence()) {
    const std::string attr = SensitiveAttributeFor(spec, c.attribute());
    for (const auto& v : c.sensitive_values()) add(attr, v);
  }
  if (out.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat("the privacy model names ", out.size(),
                                                   " sensitive values; at most 64 are supported"));
  }
  return out;
}

uint64_t Dataset::ValueCombinations() const {
  uint64_t n = 1;
  for (const auto& vc : value_columns) {
    if (__builtin_mul_overflow(n, std::max<uint64_t>(1, vc.values.size()), &n)) {
      return kTooManyCombinations;
    }
  }
  return n;
}

absl::StatusOr<std::unique_ptr<CsvReader>> ReopenSource(const Dataset& data) {
  if (data.source_text != nullptr) return CsvReader::FromShared(data.source_text, data.source_path);
  return CsvReader::Open(data.source_path);
}

absl::StatusOr<Dataset> BuildPublicSchema(const JobSpec& spec,
                                          const std::map<std::string, std::string>& taxonomy_texts,
                                          const TaxonomyParseOptions& taxonomy_options) {
  return BuildSchema(
      spec,
      [&](const Attribute& a) -> absl::StatusOr<Taxonomy> {
        auto it = taxonomy_texts.find(a.name());
        if (it == taxonomy_texts.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("no taxonomy was supplied for attribute '", a.name(), "'"));
        }
        return Taxonomy::ParseArx(it->second, a.taxonomy(), a.name(), taxonomy_options);
      },
      /*require_public=*/true);
}

namespace {

// `*schema`, or the schema of `spec` with its taxonomies read from disk.
absl::StatusOr<Dataset> SchemaOrOwn(const JobSpec& spec, const Dataset* schema) {
  if (schema != nullptr) return *schema;
  return BuildSchema(
      spec, [](const Attribute& a) { return Taxonomy::LoadArx(a.taxonomy(), a.name()); },
      /*require_public=*/false);
}

}  // namespace

struct DatasetEncoder::State {
  State(const JobSpec& s, std::string name, Dataset schema)
      : spec(s), source_name(std::move(name)), ds(std::move(schema)) {}
  JobSpec spec;
  std::string source_name;
  Dataset ds;
  RowEncoder encoder{spec, source_name, &ds, /*numbered_rows=*/true};
  bool has_header = false;
};

DatasetEncoder::DatasetEncoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
DatasetEncoder::~DatasetEncoder() = default;

absl::StatusOr<std::unique_ptr<DatasetEncoder>> DatasetEncoder::Create(const JobSpec& spec,
                                                                       std::string source_name,
                                                                       const Dataset* schema) {
  ASSIGN_OR_RETURN(Dataset ds, SchemaOrOwn(spec, schema));
  ds.source_path = source_name;
  return std::unique_ptr<DatasetEncoder>(
      new DatasetEncoder(std::make_unique<State>(spec, std::move(source_name), std::move(ds))));
}

absl::Status DatasetEncoder::SetHeader(const std::vector<std::string_view>& header) {
  if (state_->has_header) return absl::FailedPreconditionError("SetHeader called twice");
  state_->has_header = true;
  return state_->encoder.ResolveColumns(header);
}

absl::Status DatasetEncoder::AddRow(const std::vector<std::string_view>& fields, size_t row) {
  if (!state_->has_header) return absl::FailedPreconditionError("AddRow before SetHeader");
  return state_->encoder.EncodeRow(fields, row);
}

absl::StatusOr<Dataset> DatasetEncoder::Finish(std::shared_ptr<const std::string> source_text) {
  if (!state_->has_header) return absl::FailedPreconditionError("Finish before SetHeader");
  RETURN_IF_ERROR(state_->encoder.Finish());
  state_->ds.source_text = std::move(source_text);
  return std::move(state_->ds);
}

namespace {

// Scans the bytes [begin, end) of the regular file `path` in blocks: `fn(block, offset)` returns
// false to stop.
template <typename Fn>
absl::Status ScanBytes(const std::string& path, uint64_t begin, uint64_t end, Fn fn) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open", path);
  // 64 KiB, not zeroed and below malloc's mmap threshold: a MiB zeroed was 256 fresh pages,
  // touched once per scan, 4% of UCI Adult's whole job (the count before its one-pass load).
  constexpr size_t kBlockBytes = size_t{64} << 10;
  const std::unique_ptr<char[]> block(new char[kBlockBytes]);
  absl::Status status;
  for (uint64_t at = begin; at < end;) {
    const ssize_t got =
        ::pread(fd, block.get(), std::min<uint64_t>(kBlockBytes, end - at), static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) status = base::ErrnoStatus(errno, "cannot read", path);
    if (got <= 0) break;
    if (!fn(std::string_view(block.get(), static_cast<size_t>(got)), at)) break;
    at += static_cast<uint64_t>(got);
  }
  ::close(fd);
  return status;
}

// The '\n's of `block`: 16 bytes at a time (std::count went byte by byte: 5% of a 1M-record
// job's CPU time).
uint64_t CountNewlinesIn(std::string_view block) {
  const char* p = block.data();
  const char* const end = p + block.size();
  uint64_t n = 0;
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n');
  while (end - p >= 16) {
    // Up to 255 chunks into byte counters (each compare adds 0 or -1), then summed.
    __m128i counts = _mm_setzero_si128();
    for (int i = 0; i < 255 && end - p >= 16; ++i, p += 16) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(chunk, lf));
    }
    const __m128i sums = _mm_sad_epu8(counts, _mm_setzero_si128());
    n += static_cast<uint64_t>(_mm_cvtsi128_si64(sums)) +
         static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  return n + static_cast<uint64_t>(std::count(p, end, '\n'));
}

absl::StatusOr<uint64_t> CountNewlines(const std::string& path, uint64_t begin, uint64_t end) {
  uint64_t n = 0;
  RETURN_IF_ERROR(ScanBytes(path, begin, end, [&](std::string_view block, uint64_t) {
    n += CountNewlinesIn(block);
    return true;
  }));
  return n;
}

// The offset just after the first '\n' at or after `at` (`end` if none).
absl::StatusOr<uint64_t> NextLineStart(const std::string& path, uint64_t at, uint64_t end) {
  uint64_t found = end;
  RETURN_IF_ERROR(ScanBytes(path, at, end, [&](std::string_view block, uint64_t offset) {
    const size_t nl = block.find('\n');
    if (nl == std::string_view::npos) return true;
    found = offset + nl + 1;
    return false;
  }));
  return found;
}

// Encodes the data rows of `reader` (whose header has been read) with `encoder`; a streamed
// file's rows get checkpoints.
absl::Status EncodeRows(CsvReader& reader, RowEncoder& encoder) {
  std::vector<std::string_view> fields;
  const bool streamed = reader.shared_text() == nullptr;
  for (;;) {
    if (streamed && encoder.rows() % Dataset::kCheckpointRows == 0) {
      encoder.AddCheckpoint(reader.offset());
    }
    ASSIGN_OR_RETURN(bool more, reader.Next(&fields));
    if (!more) return absl::OkStatus();
    RETURN_IF_ERROR(encoder.EncodeRow(fields, reader.line()));
  }
}

// The most data rows `reader` (past its header) can still return: its remaining '\n's, plus a
// last line without one. Nullopt when that would read more than the reader may (or fails).
std::optional<uint64_t> RowsAtMost(const CsvReader& reader, const std::string& csv_path,
                                   const CsvOptions& csv) {
  if (const auto& text = reader.shared_text(); text != nullptr) {
    if (reader.offset() > text->size()) return std::nullopt;
    return CountNewlinesIn(std::string_view(*text).substr(reader.offset())) + 1;
  }
  struct stat st;
  if (::stat(csv_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < reader.offset() || size > csv.max_bytes) return std::nullopt;
  auto lines = CountNewlines(csv_path, reader.offset(), size);
  if (!lines.ok()) return std::nullopt;
  return *lines + 1;
}

// Loads a streamed regular file with two threads, each encoding one half of its rows (split at
// a line start) into its own part of the Dataset's vectors, sized from the halves' line counts.
// Nullopt when it does not apply (a small file, a pipe) or when either half fails: the caller then
// reads the file in one pass, which also gives the exact error (a half that starts inside a
// quoted field, a line number in the second half).
absl::StatusOr<std::optional<Dataset>> LoadInTwoParts(const JobSpec& spec,
                                                      const std::string& csv_path,
                                                      const Dataset& schema, const CsvOptions& csv,
                                                      uint64_t min_bytes) {
  // A small file is read in one pass: decided before its header is read and the schema copied
  // (with a grid of 1.5M values, 12 MiB of it).
  struct stat st;
  if (::stat(csv_path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) < min_bytes) {
    return std::nullopt;
  }
  auto header_reader = CsvReader::Open(csv_path, csv);
  if (!header_reader.ok() || (*header_reader)->shared_text() != nullptr) return std::nullopt;
  CsvReader& reader = **header_reader;
  std::vector<std::string_view> fields;
  auto has_header = reader.Next(&fields);
  if (!has_header.ok() || !*has_header) return std::nullopt;
  Dataset ds = schema;
  RowEncoder first(spec, csv_path, &ds);
  if (!first.ResolveColumns(fields).ok()) return std::nullopt;
  const uint64_t begin = reader.offset();
  const size_t first_line = reader.next_line();
  const CsvOptions range{.separator = reader.separator(), .max_line_bytes = csv.max_line_bytes};
  header_reader->reset();
  if (::stat(csv_path.c_str(), &st) != 0) return std::nullopt;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < begin || size - begin < min_bytes) return std::nullopt;
  auto mid = NextLineStart(csv_path, begin + (size - begin) / 2, size);
  if (!mid.ok() || *mid >= size) return std::nullopt;
  absl::StatusOr<uint64_t> lines1 = 0, lines2 = 0;
  {
    std::thread count([&] { lines2 = CountNewlines(csv_path, *mid, size); });
    lines1 = CountNewlines(csv_path, begin, *mid);
    count.join();
  }
  if (!lines1.ok() || !lines2.ok()) return std::nullopt;
  // The first half ends with a '\n', so it holds at most lines1 records; the second one more.
  const size_t cap1 = *lines1, total = cap1 + *lines2 + 1;
  // Every column's codes at once, each large one a huge-page mapping of its own
  // (base::HugePageVector): about a fortieth of the page faults of a large table's load.
  for (QidColumn& col : ds.qids) col.codes.resize(total);
  if (ds.class_column >= 0) ds.class_codes.resize(total);
  for (auto& vc : ds.value_columns) vc.codes.resize(total);
  ds.sensitive_bits.resize(total);
  RowEncoder second(spec, csv_path, &ds);
  second.CopyColumnsFrom(first);
  first.SetOutput(0, cap1);
  second.SetOutput(cap1, total);
  auto run = [&](RowEncoder& encoder, uint64_t from, uint64_t to, size_t line) -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> part,
                     CsvReader::OpenRange(csv_path, from, to, line, range));
    return EncodeRows(*part, encoder);
  };
  absl::Status second_status;
  std::thread worker([&] { second_status = run(second, *mid, size, /*line=*/1); });
  const absl::Status first_status = run(first, begin, *mid, first_line);
  worker.join();
  if (!first_status.ok() || !second_status.ok()) return std::nullopt;
  first.Merge(second);
  RETURN_IF_ERROR(first.Finish());
  return ds;
}

}  // namespace

absl::StatusOr<Dataset> LoadDataset(const JobSpec& spec, const std::string& csv_path,
                                    const Dataset* schema, const LoadDatasetOptions& options) {
  ASSIGN_OR_RETURN(Dataset ds, SchemaOrOwn(spec, schema));
  ds.source_path = csv_path;
  const CsvOptions csv{.max_bytes = options.max_input_bytes,
                       .max_line_bytes = options.max_line_bytes};
  const unsigned threads = options.threads > 0
                               ? static_cast<unsigned>(options.threads)
                               : std::min(2u, std::max(1u, std::thread::hardware_concurrency()));
  struct stat st;
  const bool regular = ::stat(csv_path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (threads >= 2 && regular) {  // a FIFO can be opened (and read) once only
    ASSIGN_OR_RETURN(std::optional<Dataset> parallel,
                     LoadInTwoParts(spec, csv_path, ds, csv, options.parallel_min_bytes));
    if (parallel.has_value()) return *std::move(parallel);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader, CsvReader::Open(csv_path, csv));
  ds.source_text = reader->shared_text();  // null for a regular file: re-read from disk
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(absl::StrCat(csv_path, ": file is empty"));
  RowEncoder encoder(spec, csv_path, &ds);
  RETURN_IF_ERROR(encoder.ResolveColumns(fields));
  // The columns sized once for the rows the input can hold, not grown by doubling, which copied
  // and zeroed every column again at each step: 40% of UCI Adult's page faults after start-up.
  if (const auto rows = RowsAtMost(*reader, csv_path, csv); rows.has_value()) {
    encoder.SizeFor(static_cast<size_t>(*rows));
  }
  RETURN_IF_ERROR(EncodeRows(*reader, encoder));
  RETURN_IF_ERROR(encoder.Finish());
  return ds;
}

}  // namespace fedanon::table
