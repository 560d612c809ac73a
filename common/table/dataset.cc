#include "common/table/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::common {
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

std::string FormatUnknownValues(const std::map<std::string, uint64_t>& unknown) {
  std::vector<std::pair<std::string, uint64_t>> sorted(unknown.begin(), unknown.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (size_t i = 0; i < sorted.size() && i < 20; ++i) {
    parts.push_back(absl::StrCat("'", sorted[i].first, "' (", sorted[i].second,
                                 sorted[i].second == 1 ? " record)" : " records)"));
  }
  if (sorted.size() > 20) parts.push_back(absl::StrCat("and ", sorted.size() - 20, " more"));
  return absl::StrJoin(parts, ", ");
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
  return ds;
}

// Encodes the data rows of a CSV file into a Dataset that holds the job's schema: resolves the
// spec's attributes against the header, encodes one row at a time, and reports the values outside
// a declared domain or taxonomy once every row has been read.
class RowEncoder {
 public:
  // `numbered_rows`: `line` is a data row number (a database source), not a file line, and
  // errors say "<source>, row N" instead of "<file>:N".
  RowEncoder(const JobSpec& spec, const std::string& csv_path, Dataset* ds,
             bool numbered_rows = false)
      : spec_(spec), csv_path_(csv_path), ds_(ds), numbered_rows_(numbered_rows) {}

  // Reads the header (`fields`) into ds->header and resolves every column the job uses.
  absl::Status ResolveColumns(const std::vector<std::string_view>& fields);
  // Encodes the data row `fields` (file line `line`); rows with a missing value may be dropped.
  absl::Status EncodeRow(const std::vector<std::string_view>& fields, size_t line);
  // After the last row: no records, values outside declared domains, the ranks of continuous
  // columns without a grid.
  absl::Status Finish();

 private:
  struct SensitiveColumn {
    int column;
    std::vector<std::pair<std::string, int>> values;  // tracked value -> bit
  };
  // Per QID column scratch state.
  struct Scan {
    absl::flat_hash_map<std::string, int32_t> value_ids;  // kSuppression
    std::map<std::string, uint64_t> unknown;              // values outside taxonomy / domain
    std::vector<double> numbers;                          // kContinuous without grid
  };

  absl::Status ResolveSensitiveColumns(const absl::flat_hash_map<std::string, int>& column_of);
  void PrepareScans();
  absl::Status EncodeQid(size_t q, std::string_view v, size_t line);
  absl::Status EncodeContinuous(QidColumn& col, Scan& scan, std::string_view v, size_t line);
  absl::Status EncodeClass(std::string_view v);
  void EncodeValueColumns(const std::vector<std::string_view>& fields);
  uint64_t SensitiveBits(const std::vector<std::string_view>& fields) const;
  absl::Status FinishQid(size_t q);
  absl::Status RankContinuous(QidColumn& col, const Scan& scan) const;
  // Where record `line` is, for messages: "t.csv:12" or "PostgreSQL source 'x', row 12".
  std::string At(size_t line) const {
    return numbered_rows_ ? absl::StrCat(csv_path_, ", row ", line)
                          : absl::StrCat(csv_path_, ":", line);
  }

  const JobSpec& spec_;
  const std::string& csv_path_;
  Dataset* ds_;
  bool numbered_rows_;
  size_t width_ = 0;
  std::vector<int> listed_columns_;
  std::string class_name_;
  std::vector<absl::flat_hash_map<std::string, int32_t>> value_ids_;  // per value column
  std::vector<std::map<std::string, uint64_t>> unknown_values_;       // per value column
  std::vector<SensitiveColumn> sensitive_columns_;
  std::vector<Scan> scans_;  // per QID column
  absl::flat_hash_map<std::string, uint16_t> class_ids_;
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
  value_ids_.resize(ds_->value_columns.size());
  unknown_values_.resize(ds_->value_columns.size());
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    auto& vc = ds_->value_columns[v];
    vc.csv_column = column_of.at(vc.name);
    vc.codes.clear();
    for (size_t i = 0; i < vc.values.size(); ++i) {
      value_ids_[v].emplace(vc.values[i], static_cast<int32_t>(i));
    }
  }
  RETURN_IF_ERROR(ResolveSensitiveColumns(column_of));
  PrepareScans();
  return absl::OkStatus();
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
  scans_.resize(ds_->qids.size());
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    for (size_t v = 0; v < ds_->qids[q].values.size(); ++v) {
      scans_[q].value_ids.emplace(ds_->qids[q].values[v], static_cast<int32_t>(v));
    }
    ds_->qids[q].codes.clear();
  }
  for (size_t c = 0; c < ds_->class_labels.size(); ++c) {
    class_ids_.emplace(ds_->class_labels[c], static_cast<uint16_t>(c));
  }
}

absl::Status RowEncoder::EncodeRow(const std::vector<std::string_view>& fields, size_t line) {
  ++ds_->records_in;
  if (fields.size() != width_) {
    return absl::InvalidArgumentError(absl::StrCat(
        At(line), ": expected ", width_, " fields as in the header, found ", fields.size()));
  }
  const bool has_missing = std::any_of(listed_columns_.begin(), listed_columns_.end(),
                                       [&](int c) { return fields[c] == spec_.missing_token(); });
  if (has_missing && spec_.missing() != fedanon::v1::MISSING_KEEP) {
    ds_->kept.push_back(false);
    ++ds_->records_dropped;
    return absl::OkStatus();
  }
  ds_->kept.push_back(true);
  for (size_t q = 0; q < ds_->qids.size(); ++q) {
    RETURN_IF_ERROR(EncodeQid(q, fields[ds_->qids[q].csv_column], line));
  }
  if (ds_->class_column >= 0) RETURN_IF_ERROR(EncodeClass(fields[ds_->class_column]));
  EncodeValueColumns(fields);
  ds_->sensitive_bits.push_back(SensitiveBits(fields));
  ++ds_->num_records;
  return absl::OkStatus();
}

absl::Status RowEncoder::EncodeQid(size_t q, std::string_view v, size_t line) {
  QidColumn& col = ds_->qids[q];
  Scan& scan = scans_[q];
  switch (col.kind) {
    case QidKind::kTaxonomy: {
      auto leaf = col.taxonomy->FindLeaf(v);
      if (!leaf) ++scan.unknown[std::string(v)];
      col.codes.push_back(leaf ? *leaf : 0);
      break;
    }
    case QidKind::kContinuous:
      return EncodeContinuous(col, scan, v, line);
    case QidKind::kSuppression: {
      auto it = scan.value_ids.find(std::string(v));
      if (it != scan.value_ids.end()) {
        col.codes.push_back(it->second);
      } else if (col.values_declared) {
        ++scan.unknown[std::string(v)];
        col.codes.push_back(0);
      } else {
        const auto id = static_cast<int32_t>(col.values.size());
        scan.value_ids.emplace(std::string(v), id);
        col.values.emplace_back(v);
        col.codes.push_back(id);
      }
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status RowEncoder::EncodeContinuous(QidColumn& col, Scan& scan, std::string_view v,
                                          size_t line) {
  double x;
  if (!absl::SimpleAtod(absl::string_view(v.data(), v.size()), &x) || !std::isfinite(x)) {
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
    col.codes.push_back(static_cast<int32_t>(cell));
  } else {
    scan.numbers.push_back(x);  // ranked by RankContinuous once every value is known
  }
  return absl::OkStatus();
}

absl::Status RowEncoder::EncodeClass(std::string_view v) {
  auto it = class_ids_.find(std::string(v));
  if (it != class_ids_.end()) {
    ds_->class_codes.push_back(it->second);
  } else if (ds_->class_declared) {
    ++unknown_classes_[std::string(v)];
    ds_->class_codes.push_back(0);
  } else {
    if (class_ids_.size() >= 65535) {
      return absl::InvalidArgumentError("the class attribute has more than 65535 values");
    }
    const auto id = static_cast<uint16_t>(class_ids_.size());
    class_ids_.emplace(std::string(v), id);
    ds_->class_labels.emplace_back(v);
    ds_->class_codes.push_back(id);
  }
  return absl::OkStatus();
}

void RowEncoder::EncodeValueColumns(const std::vector<std::string_view>& fields) {
  for (size_t v = 0; v < ds_->value_columns.size(); ++v) {
    auto& vc = ds_->value_columns[v];
    auto it = value_ids_[v].find(std::string(fields[vc.csv_column]));
    if (it == value_ids_[v].end()) {
      ++unknown_values_[v][std::string(fields[vc.csv_column])];
      vc.codes.push_back(0);
    } else {
      vc.codes.push_back(it->second);
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

absl::Status RowEncoder::Finish() {
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
  return RankContinuous(col, scan);
}

// A continuous column without a grid: its distinct values become the ranks, its range is the
// spec's (which must hold them) or the smallest one that holds them.
absl::Status RowEncoder::RankContinuous(QidColumn& col, const Scan& scan) const {
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
  col.codes.resize(scan.numbers.size());
  for (size_t r = 0; r < scan.numbers.size(); ++r) {
    col.codes[r] = static_cast<int32_t>(
        std::lower_bound(col.sorted_values.begin(), col.sorted_values.end(), scan.numbers[r]) -
        col.sorted_values.begin());
  }
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

absl::StatusOr<Dataset> LoadDataset(const JobSpec& spec, const std::string& csv_path,
                                    const Dataset* schema, const LoadDatasetOptions& options) {
  ASSIGN_OR_RETURN(Dataset ds, SchemaOrOwn(spec, schema));
  ds.source_path = csv_path;
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader,
                   CsvReader::Open(csv_path, CsvOptions{.max_bytes = options.max_input_bytes,
                                                        .max_line_bytes = options.max_line_bytes}));
  ds.source_text = reader->shared_text();
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(absl::StrCat(csv_path, ": file is empty"));
  RowEncoder encoder(spec, csv_path, &ds);
  RETURN_IF_ERROR(encoder.ResolveColumns(fields));
  for (;;) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(encoder.EncodeRow(fields, reader->line()));
  }
  RETURN_IF_ERROR(encoder.Finish());
  return ds;
}

}  // namespace fedanon::common
