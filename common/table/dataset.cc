#include "common/table/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
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
        if (a.range_size() != 2) {
          return absl::InvalidArgumentError(
              absl::StrCat("attribute '", a.name(), "': `precision` needs a `range`"));
        }
        col.precision = a.precision();
        col.range_lo = a.range(0);
        col.range_hi = a.range(1);
        const double cells = std::ceil((col.range_hi - col.range_lo) / col.precision);
        if (!(cells >= 1) || cells > 50'000'000) {
          return absl::InvalidArgumentError(
              absl::StrCat("attribute '", a.name(), "': range / precision gives ", cells,
                           " grid points; between 1 and 50,000,000 are supported"));
        }
        col.sorted_values.resize(static_cast<size_t>(cells));
        for (size_t i = 0; i < col.sorted_values.size(); ++i) {
          col.sorted_values[i] = col.range_lo + static_cast<double>(i) * col.precision;
        }
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
    ds.qids.push_back(std::move(col));
  }
  return ds;
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

uint64_t Dataset::ValueCombinations() const {
  uint64_t n = 1;
  for (const auto& vc : value_columns) n *= std::max<uint64_t>(1, vc.values.size());
  return n;
}

absl::StatusOr<Dataset> BuildPublicSchema(
    const JobSpec& spec, const std::map<std::string, std::string>& taxonomy_texts) {
  return BuildSchema(
      spec,
      [&](const Attribute& a) -> absl::StatusOr<Taxonomy> {
        auto it = taxonomy_texts.find(a.name());
        if (it == taxonomy_texts.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("no taxonomy was supplied for attribute '", a.name(), "'"));
        }
        return Taxonomy::ParseArx(it->second, a.taxonomy(), a.name());
      },
      /*require_public=*/true);
}

absl::StatusOr<Dataset> LoadDataset(const JobSpec& spec, const std::string& csv_path,
                                    const Dataset* schema) {
  Dataset ds;
  if (schema != nullptr) {
    ds = *schema;
  } else {
    ASSIGN_OR_RETURN(
        ds, BuildSchema(
                spec, [](const Attribute& a) { return Taxonomy::LoadArx(a.taxonomy(), a.name()); },
                /*require_public=*/false));
  }
  ds.source_path = csv_path;
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
  std::vector<int> listed_columns;
  std::string class_name;
  for (const Attribute& a : spec.attributes()) {
    auto it = column_of.find(a.name());
    if (it == column_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(), "' named in the spec is not a column of ", csv_path,
                       " (columns: ", absl::StrJoin(ds.header, ", "), ")"));
    }
    listed_columns.push_back(it->second);
    if (a.role() == fedanon::v1::ROLE_CLASS) {
      ds.class_column = it->second;
      class_name = a.name();
    }
  }
  for (QidColumn& col : ds.qids) col.csv_column = column_of.at(col.name);
  std::vector<absl::flat_hash_map<std::string, int32_t>> value_ids(ds.value_columns.size());
  std::vector<std::map<std::string, uint64_t>> unknown_values(ds.value_columns.size());
  for (size_t v = 0; v < ds.value_columns.size(); ++v) {
    auto& vc = ds.value_columns[v];
    vc.csv_column = column_of.at(vc.name);
    vc.codes.clear();
    for (size_t i = 0; i < vc.values.size(); ++i) {
      value_ids[v].emplace(vc.values[i], static_cast<int32_t>(i));
    }
  }
  struct SensitiveColumn {
    int column;
    std::vector<std::pair<std::string, int>> values;  // tracked value -> bit
  };
  std::vector<SensitiveColumn> sensitive_columns;
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

  // Per QID column scratch state.
  struct Scan {
    absl::flat_hash_map<std::string, int32_t> value_ids;  // kSuppression
    std::map<std::string, uint64_t> unknown;              // values outside taxonomy / domain
    std::vector<double> numbers;                          // kContinuous without grid
  };
  std::vector<Scan> scans(ds.qids.size());
  for (size_t q = 0; q < ds.qids.size(); ++q) {
    for (size_t v = 0; v < ds.qids[q].values.size(); ++v) {
      scans[q].value_ids.emplace(ds.qids[q].values[v], static_cast<int32_t>(v));
    }
    ds.qids[q].codes.clear();
  }
  absl::flat_hash_map<std::string, uint16_t> class_ids;
  for (size_t c = 0; c < ds.class_labels.size(); ++c) {
    class_ids.emplace(ds.class_labels[c], static_cast<uint16_t>(c));
  }
  std::map<std::string, uint64_t> unknown_classes;

  const std::string& missing = spec.missing_token();
  const bool drop_missing = spec.missing() != fedanon::v1::MISSING_KEEP;
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
    for (size_t q = 0; q < ds.qids.size(); ++q) {
      QidColumn& col = ds.qids[q];
      Scan& scan = scans[q];
      const std::string_view v = fields[col.csv_column];
      switch (col.kind) {
        case QidKind::kTaxonomy: {
          auto leaf = col.taxonomy->FindLeaf(v);
          if (!leaf) ++scan.unknown[std::string(v)];
          col.codes.push_back(leaf ? *leaf : 0);
          break;
        }
        case QidKind::kContinuous: {
          double x;
          if (!absl::SimpleAtod(absl::string_view(v.data(), v.size()), &x) || !std::isfinite(x)) {
            return absl::InvalidArgumentError(absl::StrCat(
                csv_path, ":", reader->line(), ": column ", col.csv_column + 1, " (", col.name,
                "): '", std::string(v), "' is not a number",
                v == missing ? " (missing values in continuous attributes need `missing: drop`)"
                             : ""));
          }
          if (col.precision > 0) {
            const double cell = std::round((x - col.range_lo) / col.precision);
            const double snapped = col.range_lo + cell * col.precision;
            if (cell < 0 || cell >= static_cast<double>(col.sorted_values.size()) ||
                std::fabs(snapped - x) > 1e-9 * std::max(1.0, std::fabs(x))) {
              return absl::InvalidArgumentError(absl::StrCat(
                  csv_path, ":", reader->line(), ": column ", col.csv_column + 1, " (", col.name,
                  "): ", std::string(v), " is not on the grid ", col.range_lo, " + i * ",
                  col.precision, " inside the range [", col.range_lo, ", ", col.range_hi, ")"));
            }
            col.codes.push_back(static_cast<int32_t>(cell));
          } else {
            scan.numbers.push_back(x);
          }
          break;
        }
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
    }
    if (ds.class_column >= 0) {
      const std::string_view v = fields[ds.class_column];
      auto it = class_ids.find(std::string(v));
      if (it == class_ids.end()) {
        if (ds.class_declared) {
          ++unknown_classes[std::string(v)];
          ds.class_codes.push_back(0);
        } else {
          if (class_ids.size() >= 65535) {
            return absl::InvalidArgumentError("the class attribute has more than 65535 values");
          }
          const auto id = static_cast<uint16_t>(class_ids.size());
          class_ids.emplace(std::string(v), id);
          ds.class_labels.emplace_back(v);
          ds.class_codes.push_back(id);
        }
      } else {
        ds.class_codes.push_back(it->second);
      }
    }
    for (size_t v = 0; v < ds.value_columns.size(); ++v) {
      auto& vc = ds.value_columns[v];
      auto it = value_ids[v].find(std::string(fields[vc.csv_column]));
      if (it == value_ids[v].end()) {
        ++unknown_values[v][std::string(fields[vc.csv_column])];
        vc.codes.push_back(0);
      } else {
        vc.codes.push_back(it->second);
      }
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
  for (size_t v = 0; v < ds.value_columns.size(); ++v) {
    if (!unknown_values[v].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", ds.value_columns[v].name,
          "': values not among its declared values: ", FormatUnknownValues(unknown_values[v])));
    }
  }
  if (!unknown_classes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "class attribute '", class_name,
        "': values not among its declared values: ", FormatUnknownValues(unknown_classes)));
  }

  for (size_t q = 0; q < ds.qids.size(); ++q) {
    QidColumn& col = ds.qids[q];
    Scan& scan = scans[q];
    if (!scan.unknown.empty()) {
      uint64_t total = 0;
      for (const auto& [v, n] : scan.unknown) total += n;
      std::string what = " not among the attribute's declared values";
      for (const Attribute& a : spec.attributes()) {
        if (a.name() == col.name && col.kind == QidKind::kTaxonomy) {
          what = absl::StrCat(" not a leaf of taxonomy ", a.taxonomy());
        }
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", col.name, "': ", scan.unknown.size(),
          scan.unknown.size() == 1 ? " value is" : " values are", what, " (", total,
          total == 1 ? " record): " : " records): ", FormatUnknownValues(scan.unknown)));
    }
    if (col.kind != QidKind::kContinuous || col.precision > 0) continue;
    const Attribute* attr = nullptr;
    for (const Attribute& a : spec.attributes()) {
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
  }
  return ds;
}

}  // namespace fedanon::common
