#include "common/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/csv.h"
#include "common/status_macros.h"

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

// Per-column scratch state while scanning.
struct ColumnScan {
  const Attribute* attr = nullptr;
  int column = -1;
  std::unique_ptr<Taxonomy> taxonomy;                   // kTaxonomy (mutable until shared)
  absl::flat_hash_map<std::string, int32_t> value_ids;  // kSuppression
  std::map<std::string, uint64_t> unknown;              // kTaxonomy: values that are not leaves
  std::vector<double> numbers;                          // kContinuous: raw numbers per record
  std::vector<int32_t> codes;                           // other kinds: code per record
};

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

}  // namespace

absl::StatusOr<std::vector<TrackedSensitive>> TrackedSensitiveValues(const JobSpec& spec) {
  std::vector<TrackedSensitive> out;
  auto add = [&](const std::string& attribute, const std::string& value) {
    for (const auto& t : out) {
      if (t.attribute == attribute && t.value == value) return;
    }
    out.push_back({attribute, value});
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

absl::StatusOr<Dataset> LoadDataset(const JobSpec& spec, const std::string& csv_path) {
  Dataset ds;
  ds.source_path = csv_path;
  ASSIGN_OR_RETURN(ds.tracked, TrackedSensitiveValues(spec));
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader, CsvReader::Open(csv_path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(absl::StrCat(csv_path, ": file is empty"));
  absl::flat_hash_map<std::string, int> column_of;
  for (size_t i = 0; i < fields.size(); ++i) {
    ds.header.emplace_back(fields[i]);
    if (!column_of.emplace(std::string(fields[i]), static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          csv_path, ":1: column '", std::string(fields[i]), "' appears twice in the header"));
    }
  }
  const size_t width = ds.header.size();

  // Resolve the spec's attributes against the header.
  std::vector<ColumnScan> qid_scans;
  std::vector<int> listed_columns;
  struct SensitiveColumn {
    int column;
    std::vector<std::pair<std::string, int>> values;  // tracked value -> bit
  };
  std::vector<SensitiveColumn> sensitive_columns;
  for (const Attribute& a : spec.attributes()) {
    auto it = column_of.find(a.name());
    if (it == column_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(), "' named in the spec is not a column of ", csv_path,
                       " (columns: ", absl::StrJoin(ds.header, ", "), ")"));
    }
    listed_columns.push_back(it->second);
    if (a.role() == fedanon::v1::ROLE_QID) {
      ColumnScan scan;
      scan.attr = &a;
      scan.column = it->second;
      if (!a.taxonomy().empty()) {
        ASSIGN_OR_RETURN(Taxonomy tax, Taxonomy::LoadArx(a.taxonomy(), a.name()));
        scan.taxonomy = std::make_unique<Taxonomy>(std::move(tax));
        if (spec.missing() == fedanon::v1::MISSING_KEEP &&
            !scan.taxonomy->FindLeaf(spec.missing_token()).has_value()) {
          RETURN_IF_ERROR(scan.taxonomy->AddLeafUnderRoot(spec.missing_token()).status());
        }
      }
      qid_scans.push_back(std::move(scan));
    } else if (a.role() == fedanon::v1::ROLE_CLASS) {
      ds.class_column = it->second;
    }
  }
  for (size_t bit = 0; bit < ds.tracked.size(); ++bit) {
    const auto& t = ds.tracked[bit];
    auto it = column_of.find(t.attribute);
    if (it == column_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensitive attribute '", t.attribute, "' is not a column of ", csv_path));
    }
    auto sc = std::find_if(sensitive_columns.begin(), sensitive_columns.end(),
                           [&](const SensitiveColumn& s) { return s.column == it->second; });
    if (sc == sensitive_columns.end()) {
      sensitive_columns.push_back({it->second, {}});
      sc = sensitive_columns.end() - 1;
    }
    sc->values.emplace_back(t.value, static_cast<int>(bit));
  }

  const std::string& missing = spec.missing_token();
  const bool drop_missing = spec.missing() != fedanon::v1::MISSING_KEEP;
  absl::flat_hash_map<std::string, uint16_t> class_ids;
  std::vector<int32_t> row_codes(qid_scans.size());

  for (;;) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    ++ds.records_in;
    if (fields.size() != width) {
      return absl::InvalidArgumentError(absl::StrCat(csv_path, ":", reader->line(), ": expected ",
                                                     width, " fields as in the header, found ",
                                                     fields.size()));
    }
    bool has_missing = false;
    for (int c : listed_columns) {
      if (fields[c] == missing) {
        has_missing = true;
        break;
      }
    }
    if (has_missing && drop_missing) {
      ds.kept.push_back(false);
      ++ds.records_dropped;
      continue;
    }
    ds.kept.push_back(true);
    for (size_t q = 0; q < qid_scans.size(); ++q) {
      ColumnScan& scan = qid_scans[q];
      const std::string_view v = fields[scan.column];
      if (scan.taxonomy) {
        auto leaf = scan.taxonomy->FindLeaf(v);
        if (!leaf) {
          ++scan.unknown[std::string(v)];
          row_codes[q] = -1;
        } else {
          row_codes[q] = *leaf;
        }
      } else if (scan.attr->type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
        double x;
        if (!absl::SimpleAtod(absl::string_view(v.data(), v.size()), &x) || !std::isfinite(x)) {
          return absl::InvalidArgumentError(
              absl::StrCat(csv_path, ":", reader->line(), ": column ", scan.column + 1, " (",
                           scan.attr->name(), "): '", std::string(v), "' is not a number",
                           v == missing ? " (missing values in continuous "
                                          "attributes need `missing: drop`)"
                                        : ""));
        }
        scan.numbers.push_back(x);
      } else {
        auto [it, inserted] =
            scan.value_ids.try_emplace(std::string(v), static_cast<int32_t>(scan.value_ids.size()));
        row_codes[q] = it->second;
      }
    }
    for (size_t q = 0; q < qid_scans.size(); ++q) {
      if (qid_scans[q].taxonomy ||
          qid_scans[q].attr->type() != fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
        qid_scans[q].codes.push_back(row_codes[q]);
      }
    }
    if (ds.class_column >= 0) {
      auto [it, inserted] = class_ids.try_emplace(std::string(fields[ds.class_column]),
                                                  static_cast<uint16_t>(class_ids.size()));
      if (inserted) {
        if (class_ids.size() > 65535) {
          return absl::InvalidArgumentError("the class attribute has more than 65535 values");
        }
        ds.class_labels.emplace_back(fields[ds.class_column]);
      }
      ds.class_codes.push_back(it->second);
    }
    uint64_t bits = 0;
    for (const SensitiveColumn& sc : sensitive_columns) {
      for (const auto& [value, bit] : sc.values) {
        if (fields[sc.column] == value) bits |= uint64_t{1} << bit;
      }
    }
    ds.sensitive_bits.push_back(bits);
    ++ds.num_records;
  }
  if (ds.num_records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        csv_path, ": no records", ds.records_dropped ? " left after dropping missing values" : ""));
  }

  ds.qids.resize(qid_scans.size());
  for (size_t q = 0; q < qid_scans.size(); ++q) {
    ColumnScan& scan = qid_scans[q];
    QidColumn& col = ds.qids[q];
    col.name = scan.attr->name();
    col.csv_column = scan.column;
    if (scan.taxonomy) {
      if (!scan.unknown.empty()) {
        uint64_t total = 0;
        for (const auto& [v, n] : scan.unknown) total += n;
        return absl::InvalidArgumentError(absl::StrCat(
            "attribute '", col.name, "': ", scan.unknown.size(),
            scan.unknown.size() == 1 ? " value is" : " values are", " not a leaf of taxonomy ",
            scan.attr->taxonomy(), " (", total,
            total == 1 ? " record): " : " records): ", FormatUnknownValues(scan.unknown)));
      }
      col.kind = QidKind::kTaxonomy;
      col.codes = std::move(scan.codes);
      col.taxonomy = std::shared_ptr<const Taxonomy>(std::move(scan.taxonomy));
    } else if (scan.attr->type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
      col.kind = QidKind::kContinuous;
      col.sorted_values = scan.numbers;
      std::sort(col.sorted_values.begin(), col.sorted_values.end());
      col.sorted_values.erase(std::unique(col.sorted_values.begin(), col.sorted_values.end()),
                              col.sorted_values.end());
      const double lo = col.sorted_values.front(), hi = col.sorted_values.back();
      if (scan.attr->range_size() == 2) {
        col.range_lo = scan.attr->range(0);
        col.range_hi = scan.attr->range(1);
        if (lo < col.range_lo || hi >= col.range_hi) {
          return absl::InvalidArgumentError(absl::StrCat(
              "attribute '", col.name, "': data values span [", lo, ", ", hi,
              "] which is not inside the spec's range [", col.range_lo, ", ", col.range_hi, ")"));
        }
      } else {
        bool integral = std::all_of(col.sorted_values.begin(), col.sorted_values.end(),
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
    } else {
      col.kind = QidKind::kSuppression;
      col.codes = std::move(scan.codes);
      col.values.resize(scan.value_ids.size());
      for (const auto& [v, id] : scan.value_ids) col.values[id] = v;
    }
  }
  return ds;
}

}  // namespace fedanon::common
