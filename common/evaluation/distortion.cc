#include "common/evaluation/distortion.h"

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/table/taxonomy.h"

namespace fedanon::evaluation {
namespace {

using fedanon::v1::Attribute;

// The columns `names` of a CSV file, per record, with each record's line.
struct Columns {
  std::vector<std::vector<std::string>> values;  // per name, per record
  std::vector<size_t> lines;
};

absl::StatusOr<Columns> ReadNamedColumns(const std::string& path,
                                         const std::vector<std::string>& names,
                                         const std::string* drop_token) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(absl::StrCat(path, ": no header"));
  const size_t width = fields.size();
  std::vector<size_t> index;
  for (const std::string& name : names) {
    std::optional<size_t> found;
    for (size_t c = 0; c < fields.size(); ++c) {
      if (fields[c] == name) found = c;
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", reader->line(), ": no column '", name, "' in the header"));
    }
    index.push_back(*found);
  }
  Columns out;
  out.values.resize(names.size());
  for (;;) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, width));
    if (drop_token != nullptr) {
      bool missing = false;
      for (size_t c : index) missing = missing || fields[c] == *drop_token;
      if (missing) continue;
    }
    for (size_t i = 0; i < index.size(); ++i) out.values[i].emplace_back(fields[index[i]]);
    out.lines.push_back(reader->line());
  }
  return out;
}

bool Number(const std::string& s, double* x) { return absl::SimpleAtod(s, x) && std::isfinite(*x); }

}  // namespace

absl::StatusOr<std::pair<double, double>> ParseIntervalLabel(const std::string& label) {
  if (label.size() < 5 || label.front() != '[' || label.back() != ')') {
    return absl::InvalidArgumentError(absl::StrCat("'", label, "' is not an interval [lo-hi)"));
  }
  const std::string inner = label.substr(1, label.size() - 2);
  // The separator is a '-' that does not start a number (lo may be negative, and a number in
  // the general format may hold "e-").
  for (size_t i = 1; i < inner.size(); ++i) {
    if (inner[i] != '-' || inner[i - 1] == 'e' || inner[i - 1] == 'E') continue;
    double lo = 0, hi = 0;
    if (Number(inner.substr(0, i), &lo) && Number(inner.substr(i + 1), &hi) && lo <= hi) {
      return std::make_pair(lo, hi);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("'", label, "' is not an interval [lo-hi)"));
}

absl::StatusOr<Distortion> MeasureDistortion(const fedanon::v1::JobSpec& spec,
                                             const std::string& raw_path,
                                             const std::string& anonymized_path) {
  std::vector<const Attribute*> qids;
  std::vector<std::string> names;
  for (const Attribute& a : spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_QID) continue;
    qids.push_back(&a);
    names.push_back(a.name());
  }
  const bool drop = spec.missing() != fedanon::v1::MISSING_KEEP;
  ASSIGN_OR_RETURN(Columns raw,
                   ReadNamedColumns(raw_path, names, drop ? &spec.missing_token() : nullptr));
  ASSIGN_OR_RETURN(Columns anon, ReadNamedColumns(anonymized_path, names, nullptr));
  const size_t n = raw.lines.size();
  if (anon.lines.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(anonymized_path, ": ", anon.lines.size(), " records, but the raw table '",
                     raw_path, "' has ", n, " (after dropping records with missing values)"));
  }
  const std::string suppressed = spec.suppression_token().empty() ? "*" : spec.suppression_token();
  Distortion d;
  d.records = n;
  for (size_t q = 0; q < qids.size(); ++q) {
    const Attribute& a = *qids[q];
    const std::vector<std::string>& before = raw.values[q];
    const std::vector<std::string>& after = anon.values[q];
    auto bad = [&](size_t r, const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat(anonymized_path, ":", anon.lines[r], ": attribute '", a.name(),
                       "': released '", after[r], "' for raw '", before[r], "': ", why));
    };
    if (a.type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
      double f1 = 0, f2 = 0;
      if (a.range_size() == 2) {
        f1 = a.range(0);
        f2 = a.range(1);
      } else {
        bool first = true, integral = true;
        for (size_t r = 0; r < n; ++r) {
          double x = 0;
          if (!Number(before[r], &x)) {
            return absl::InvalidArgumentError(absl::StrCat(raw_path, ":", raw.lines[r],
                                                           ": continuous attribute '", a.name(),
                                                           "': '", before[r], "' is not a number"));
          }
          f1 = first ? x : std::min(f1, x);
          f2 = first ? x : std::max(f2, x);
          integral = integral && x == std::floor(x);
          first = false;
        }
        f2 = integral ? f2 + 1 : std::nextafter(f2, HUGE_VAL);
      }
      const double width = f2 - f1;
      for (size_t r = 0; r < n; ++r) {
        if (after[r] == before[r]) continue;
        double x = 0;
        if (!Number(before[r], &x)) return bad(r, "the raw value is not a number");
        auto interval = ParseIntervalLabel(after[r]);
        if (!interval.ok()) return bad(r, "neither the raw value nor an interval");
        if (x < interval->first || x >= interval->second) {
          return bad(r, "the interval does not hold the raw value");
        }
        if (width > 0) d.continuous += (interval->second - interval->first) / width;
      }
      continue;
    }
    if (a.taxonomy().empty()) {
      for (size_t r = 0; r < n; ++r) {
        if (after[r] == before[r]) continue;
        if (after[r] != suppressed)
          return bad(r, "neither the raw value nor the suppression token");
        d.categorical += 1;
      }
      continue;
    }
    ASSIGN_OR_RETURN(table::Taxonomy taxonomy, table::Taxonomy::LoadArx(a.taxonomy(), a.name()));
    for (size_t r = 0; r < n; ++r) {
      if (after[r] == before[r]) continue;
      const std::optional<table::Taxonomy::NodeId> leaf = taxonomy.Find(before[r]);
      const std::optional<table::Taxonomy::NodeId> general = taxonomy.Find(after[r]);
      if (!leaf) return bad(r, "the raw value is not in the taxonomy");
      if (!general || !taxonomy.Generalizes(*general, *leaf)) {
        return bad(r, "not an ancestor of the raw value in the taxonomy");
      }
      d.categorical += taxonomy.depth(*leaf) - taxonomy.depth(*general);
    }
  }
  if (n > 0) {
    d.categorical /= static_cast<double>(n);
    d.continuous /= static_cast<double>(n);
  }
  return d;
}

}  // namespace fedanon::evaluation
