#include "common/table_postgres/postgres_stats.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/unknown_values.h"
#include "common/table_postgres/postgres_connection.h"

namespace fedanon::table_postgres {
namespace {

// As tips.cc: released counts beyond this many words are never computed (the length check of the
// caller fails, as it does for the loaded table).
constexpr uint64_t kMaxReleasedWords = 50'000'000;
constexpr int64_t kNull = INT64_MIN;

size_t SatAdd(size_t a, size_t b) {
  size_t r;
  return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

size_t SatMul(size_t a, size_t b) {
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

// A double as an exact SQL float8 literal.
std::string Float8(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return absl::StrCat("'", buf, "'::float8");
}

// ", sum(s0), sum(s1), ..." for `m` tracked sensitive values ("" for none).
std::string SensitiveSums(size_t m) {
  std::string out;
  for (size_t b = 0; b < m; ++b) absl::StrAppend(&out, ", sum(s", b, ")");
  return out;
}

// Adds a row's counts (records, then each tracked sensitive value's) to every place of its key:
// the key's own words (`attr` -1) or those of fine child `fine` of attribute `attr`.
void AddGroupCounts(const std::vector<std::pair<size_t, std::vector<int64_t>>>& places, int attr,
                    int64_t fine, const int64_t* counts, size_t m, std::vector<uint64_t>* out) {
  const size_t stride = 1 + m;
  for (const auto& [offset, attr_offsets] : places) {
    uint64_t* w = out->data() + offset;
    if (attr >= 0) {
      if (attr_offsets[attr] < 0 || fine < 0) continue;
      w += attr_offsets[attr] + stride * static_cast<size_t>(fine);
    }
    for (size_t b = 0; b <= m; ++b) w[b] += static_cast<uint64_t>(counts[b]);
  }
}

// A count in a result cell: 0 for NULL or anything that is not a whole number.
uint64_t CellNumber(const Result& r, int row, int col) {
  uint64_t v = 0;
  if (PQgetisnull(r.get(), row, col)) return 0;
  if (!absl::SimpleAtoi(PQgetvalue(r.get(), row, col), &v)) return 0;
  return v;
}

}  // namespace

PostgresPushdown::~PostgresPushdown() = default;

std::string PostgresPushdown::Lit(std::string_view text) const {
  char* quoted = PQescapeLiteral(conn_->get(), text.data(), text.size());
  if (quoted == nullptr) return "NULL";  // never equal to anything: the check refuses the value
  std::string out(quoted);
  PQfreemem(quoted);
  return out;
}

std::string PostgresPushdown::Rank(int attr) const {
  const table::QidColumn& col = data_->qids[attr];
  // The number as the reader parses it: a `real` column's text (its shortest form) read as a
  // double; any other numeric type converts to double exactly as its text would.
  char* quoted = PQescapeIdentifier(conn_->get(), data_->header[col.csv_column].data(),
                                    data_->header[col.csv_column].size());
  const std::string name = quoted == nullptr ? "\"\"" : quoted;
  if (quoted != nullptr) PQfreemem(quoted);
  const std::string x = column_types_[col.csv_column] == 700
                            ? absl::StrCat("(", name, ")::text::float8")
                            : absl::StrCat("(", name, ")::float8");
  return absl::StrCat("round((", x, " - ", Float8(col.range_lo), ") / ", Float8(col.precision),
                      ")");
}

std::string PostgresPushdown::RankBelow(int attr, int64_t j) const {
  const table::QidColumn& col = data_->qids[attr];
  const unsigned type = column_types_[col.csv_column];
  // An integer column on an integer grid: every value is lo + r * precision exactly (checked at
  // Open), so `r < j` is `x <= lo + (j - 1) * precision`, an integer comparison without the
  // float conversion and rounding of the grid index.
  constexpr double kExact = 1e15;
  const bool integer_type = type == 20 || type == 21 || type == 23;  // int8, int2, int4
  if (integer_type && col.precision >= 1 && col.precision == std::floor(col.precision) &&
      col.range_lo == std::floor(col.range_lo) && std::fabs(col.range_lo) < kExact &&
      col.precision * static_cast<double>(j) < kExact) {
    char* quoted = PQescapeIdentifier(conn_->get(), data_->header[col.csv_column].data(),
                                      data_->header[col.csv_column].size());
    const std::string name = quoted == nullptr ? "\"\"" : quoted;
    if (quoted != nullptr) PQfreemem(quoted);
    const int64_t last =
        static_cast<int64_t>(col.range_lo) + (j - 1) * static_cast<int64_t>(col.precision);
    return absl::StrCat(name, " <= ", last);
  }
  return absl::StrCat(Rank(attr), " < ", j);
}

std::string PostgresPushdown::Text(int column) const {
  char* quoted =
      PQescapeIdentifier(conn_->get(), data_->header[column].data(), data_->header[column].size());
  std::string out = absl::StrCat("(", quoted == nullptr ? "\"\"" : quoted, ")::text");
  if (quoted != nullptr) PQfreemem(quoted);
  return out;
}

absl::StatusOr<std::unique_ptr<PostgresPushdown>> PostgresPushdown::Open(
    const fedanon::v1::JobSpec& spec, const PostgresSource& source, const table::Dataset& schema) {
  std::unique_ptr<PostgresPushdown> p(new PostgresPushdown());
  p->spec_ = spec;
  p->source_ = source;
  p->label_ = PostgresSourceLabel(source);
  if (source.table.empty() == source.query.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(p->label_, ": name exactly one of `table` and `query`"));
  }
  ASSIGN_OR_RETURN(p->conn_, Connection::Open(source.conninfo, p->label_));
  // One snapshot for the whole job: every round counts the same rows.
  RETURN_IF_ERROR(
      p->conn_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "starting a transaction")
          .status());
  ASSIGN_OR_RETURN(p->query_, SourceQuery(*p->conn_, source));
  ASSIGN_OR_RETURN(const std::vector<Column> columns, DescribeQuery(*p->conn_, p->query_));
  p->data_ = std::make_unique<table::Dataset>(schema);
  table::Dataset& ds = *p->data_;
  ds.source_path = p->label_;
  ds.header.clear();
  for (const auto& c : columns) {
    ds.header.push_back(c.name);
    p->column_types_.push_back(c.type);
  }
  auto column_of = [&](const std::string& name) -> int {
    const auto it = std::find(ds.header.begin(), ds.header.end(), name);
    return it == ds.header.end() ? -1 : static_cast<int>(it - ds.header.begin());
  };
  for (const auto& a : spec.attributes()) {
    if (column_of(a.name()) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(), "' named in the spec is not a column of ",
                       p->label_, " (columns: ", absl::StrJoin(ds.header, ", "), ")"));
    }
    if (std::count(ds.header.begin(), ds.header.end(), a.name()) > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(p->label_, ": column '", a.name(), "' appears twice in the result"));
    }
    if (a.role() == fedanon::v1::ROLE_CLASS) ds.class_column = column_of(a.name());
  }
  RETURN_IF_ERROR(CheckColumnTypes(*p->conn_, spec, columns));

  // The codes of every QID attribute, as the in-memory encoder assigns them.
  for (table::QidColumn& q : ds.qids) {
    q.csv_column = column_of(q.name);
    p->qid_column_.push_back(q.csv_column);
    std::vector<int32_t> codes;
    std::vector<std::string> texts;
    switch (q.kind) {
      case table::QidKind::kTaxonomy:
        for (int32_t n = 0; n < static_cast<int32_t>(q.taxonomy->size()); ++n) {
          if (!q.taxonomy->is_leaf(n)) continue;
          codes.push_back(n);
          texts.push_back(q.taxonomy->label(n));
        }
        break;
      case table::QidKind::kSuppression:
        if (!q.values_declared) {
          return absl::FailedPreconditionError(absl::StrCat(
              "push-down needs the declared values of attribute '", q.name, "' (a federated job)"));
        }
        for (size_t v = 0; v < q.values.size(); ++v) {
          codes.push_back(static_cast<int32_t>(v));
          texts.push_back(q.values[v]);
        }
        break;
      case table::QidKind::kContinuous:
        if (q.precision <= 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("push-down needs the grid (`range`, `precision`) of continuous "
                           "attribute '",
                           q.name, "' (a federated job)"));
        }
        for (size_t r = 0; r < q.sorted_values.size(); ++r)
          codes.push_back(static_cast<int32_t>(r));
        break;
    }
    p->codes_.push_back(std::move(codes));
    p->code_text_.push_back(std::move(texts));
  }
  // A kept row: no missing token in any column the spec names (unless `missing: keep`).
  if (spec.missing() != fedanon::v1::MISSING_KEEP) {
    std::vector<std::string> any;
    for (const auto& a : spec.attributes()) {
      any.push_back(
          absl::StrCat(p->Text(column_of(a.name())), " = ", p->Lit(spec.missing_token())));
    }
    p->kept_ = absl::StrCat("NOT (", absl::StrJoin(any, " OR "), ")");
  } else {
    p->kept_ = "TRUE";
  }
  // The class index, the tracked sensitive values, the released value combination.
  auto index_of = [&](int column, const std::vector<std::string>& values) {
    std::string sql = "CASE";
    for (size_t i = 0; i < values.size(); ++i) {
      absl::StrAppend(&sql, " WHEN ", p->Text(column), " = ", p->Lit(values[i]), " THEN ", i);
    }
    return absl::StrCat(sql, " ELSE 0 END");
  };
  p->class_expr_ = ds.class_column >= 0 && !ds.class_labels.empty()
                       ? index_of(ds.class_column, ds.class_labels)
                       : "0";
  for (const table::TrackedSensitive& t : ds.tracked) {
    const int col = column_of(t.attribute);
    if (col < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sensitive attribute '", t.attribute, "' is not a column of ", p->label_));
    }
    p->sensitive_expr_.push_back(
        absl::StrCat("CASE WHEN ", p->Text(col), " = ", p->Lit(t.value), " THEN 1 ELSE 0 END"));
  }
  p->value_index_expr_ = "0::bigint";
  for (auto& vc : ds.value_columns) {
    vc.csv_column = column_of(vc.name);
    vc.codes.clear();
    p->value_index_expr_ = absl::StrCat("(", p->value_index_expr_, ") * ", vc.values.size(), " + (",
                                        index_of(vc.csv_column, vc.values), ")");
  }
  RETURN_IF_ERROR(p->Check());
  return p;
}

// The check at job start, in two scans: the record counts and NULLs; the distinct values of every
// column the job reads (a plain GROUP BY per column, joined by UNION ALL), checked here as the
// reader checks each value (taxonomy, declared domain, continuous grid), with its messages.
absl::Status PostgresPushdown::Check() {
  RETURN_IF_ERROR(CountRowsAndNulls());
  ASSIGN_OR_RETURN(const DistinctValues values, ListDistinctValues());
  RETURN_IF_ERROR(CheckValuesAreKnown(values));
  TakeFingerprint(values);
  RETURN_IF_ERROR(BuildHistograms(values));
  table::Dataset& ds = *data_;
  for (const table::TrackedSensitive& t : ds.tracked) {
    if (values.Of(ColumnOf(t.attribute)).count(t.value) > 0) continue;
    ds.warnings.push_back(absl::StrCat("sensitive value '", t.value, "' of attribute '",
                                       t.attribute, "' does not occur in ", label_,
                                       " (a misspelling in the spec?)"));
  }
  return absl::OkStatus();
}

int PostgresPushdown::ColumnOf(const std::string& name) const {
  const auto& header = data_->header;
  return static_cast<int>(std::find(header.begin(), header.end(), name) - header.begin());
}

const std::map<std::string, uint64_t>& PostgresPushdown::DistinctValues::Of(int column) const {
  return seen[std::find(columns.begin(), columns.end(), column) - columns.begin()];
}

// Rows, kept rows, NULLs per column the spec names; which columns hold the missing token (kept_).
absl::Status PostgresPushdown::CountRowsAndNulls() {
  table::Dataset& ds = *data_;
  std::vector<std::string> cols = {"count(*)",
                                   absl::StrCat("sum(CASE WHEN ", kept_, " THEN 1 ELSE 0 END)")};
  std::vector<int> spec_columns;
  for (const auto& a : spec_.attributes()) {
    spec_columns.push_back(ColumnOf(a.name()));
    cols.push_back(absl::StrCat("count(", Text(spec_columns.back()), ")"));
  }
  // Which columns hold the missing token at all: the kept-row condition of every later query
  // tests only those (a text comparison per row and column is a large part of a scan's cost).
  const bool drop = spec_.missing() != fedanon::v1::MISSING_KEEP;
  if (drop) {
    // A numeric column's text is a number (or NaN, Infinity): a token that does not parse as
    // one never matches, and the column is not converted to text for nothing.
    double unused = 0;
    const bool token_is_number = absl::SimpleAtod(spec_.missing_token(), &unused);
    for (int c : spec_columns) {
      const unsigned type = column_types_[c];
      const bool numeric =
          type == 20 || type == 21 || type == 23 || type == 700 || type == 701 || type == 1700;
      cols.push_back(numeric && !token_is_number
                         ? std::string("0")
                         : absl::StrCat("sum(CASE WHEN ", Text(c), " = ",
                                        Lit(spec_.missing_token()), " THEN 1 ELSE 0 END)"));
    }
  }
  ASSIGN_OR_RETURN(Result counts, conn_->Exec(absl::StrCat("SELECT ", absl::StrJoin(cols, ", "),
                                                           " FROM (", query_, ") AS fedanon_src"),
                                              "checking the table"));
  const uint64_t rows = CellNumber(counts, 0, 0);
  for (size_t i = 0; i < spec_columns.size(); ++i) {
    const uint64_t nulls = rows - CellNumber(counts, 0, static_cast<int>(2 + i));
    if (nulls == 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": column ", spec_columns[i] + 1, " (", ds.header[spec_columns[i]], ") is NULL in ",
        nulls, nulls == 1 ? " row" : " rows",
        "; leave NULLs out in the query (WHERE ... IS NOT NULL) or map them to the job's missing "
        "token '",
        spec_.missing_token(), "' (COALESCE)"));
  }
  if (drop) {
    std::vector<std::string> any;
    for (size_t i = 0; i < spec_columns.size(); ++i) {
      if (CellNumber(counts, 0, static_cast<int>(2 + spec_columns.size() + i)) == 0) continue;
      any.push_back(absl::StrCat(Text(spec_columns[i]), " = ", Lit(spec_.missing_token())));
    }
    kept_ = any.empty() ? "TRUE" : absl::StrCat("NOT (", absl::StrJoin(any, " OR "), ")");
  }
  ds.records_in = rows;
  ds.num_records = CellNumber(counts, 0, 1);
  ds.records_dropped = ds.records_in - ds.num_records;
  if (ds.num_records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": no records", ds.records_dropped ? " left after dropping missing values" : ""));
  }
  return absl::OkStatus();
}

// The distinct values (with counts, and counts by class) of every QID, class, sensitive and
// released column.
absl::StatusOr<PostgresPushdown::DistinctValues> PostgresPushdown::ListDistinctValues() {
  const table::Dataset& ds = *data_;
  DistinctValues values;
  std::vector<int>& categorical = values.columns;
  auto want = [&](int c) {
    if (std::find(categorical.begin(), categorical.end(), c) == categorical.end()) {
      categorical.push_back(c);
    }
  };
  for (const auto& vc : ds.value_columns) want(vc.csv_column);
  if (ds.class_column >= 0) want(ds.class_column);
  for (const auto& q : ds.qids) want(q.csv_column);
  for (const auto& t : ds.tracked) want(ColumnOf(t.attribute));
  values.seen.resize(categorical.size());
  values.by_class.resize(categorical.size());
  if (categorical.empty()) return values;
  const bool classed = ds.class_column >= 0 && !ds.class_labels.empty();
  // One plain GROUP BY (value, class) per column, joined by UNION ALL into one statement (no
  // GROUPING SETS: Citus runs those on a single shard only). Each part fills its own column
  // t<i> and leaves the others NULL, so a row names its column by its one non-NULL value.
  std::vector<std::string> parts;
  for (size_t i = 0; i < categorical.size(); ++i) {
    std::vector<std::string> out;
    for (size_t j = 0; j < categorical.size(); ++j) {
      out.push_back(j == i ? absl::StrCat("t", j) : absl::StrCat("CAST(NULL AS TEXT) AS t", j));
    }
    std::vector<std::string> select = {absl::StrCat(Text(categorical[i]), " AS t", i)};
    std::string group = absl::StrCat("t", i);
    if (classed) {
      out.push_back("tc");
      select.push_back(absl::StrCat(Text(ds.class_column), " AS tc"));
      absl::StrAppend(&group, ", tc");
    }
    parts.push_back(absl::StrCat("SELECT ", absl::StrJoin(out, ", "), ", count(*) FROM (SELECT ",
                                 absl::StrJoin(select, ", "), " FROM (", query_,
                                 ") AS fedanon_src WHERE ", kept_, ") AS fedanon_t", i,
                                 " GROUP BY ", group));
  }
  ASSIGN_OR_RETURN(Result rows,
                   conn_->Exec(absl::StrJoin(parts, " UNION ALL "), "listing the values"));
  const int width = static_cast<int>(categorical.size());
  const int count_col = width + (classed ? 1 : 0);
  for (int r = 0; r < PQntuples(rows.get()); ++r) {
    int cls = 0;
    if (classed) {
      const auto it = std::find(ds.class_labels.begin(), ds.class_labels.end(),
                                std::string(PQgetvalue(rows.get(), r, width)));
      if (it != ds.class_labels.end()) cls = static_cast<int>(it - ds.class_labels.begin());
    }
    for (int i = 0; i < width; ++i) {
      if (PQgetisnull(rows.get(), r, i)) continue;
      const uint64_t n = CellNumber(rows, r, count_col);
      values.seen[i][PQgetvalue(rows.get(), r, i)] += n;
      values.by_class[i][PQgetvalue(rows.get(), r, i)][cls] += n;
      break;
    }
  }
  return values;
}

// Every distinct value passes the reader's checks, with its messages.
absl::Status PostgresPushdown::CheckValuesAreKnown(const DistinctValues& values) const {
  const table::Dataset& ds = *data_;
  auto unknown_in = [&](int column, const std::vector<std::string>& domain) {
    std::map<std::string, uint64_t> unknown;
    for (const auto& [v, n] : values.Of(column)) {
      if (std::find(domain.begin(), domain.end(), v) == domain.end()) unknown[v] = n;
    }
    return unknown;
  };
  // Continuous values: the reader's test (a number, on the grid, inside the range) on each
  // distinct value.
  for (const table::QidColumn& col : ds.qids) {
    if (col.kind != table::QidKind::kContinuous) continue;
    uint64_t bad = 0;
    std::string first;
    bool first_is_number = true;
    for (const auto& [v, n] : values.Of(col.csv_column)) {
      double x = 0;
      const bool is_number = absl::SimpleAtod(v, &x) && std::isfinite(x);
      bool ok = is_number;
      if (ok) {
        const double cell = std::round((x - col.range_lo) / col.precision);
        const double snapped = col.range_lo + cell * col.precision;
        ok = cell >= 0 && cell < static_cast<double>(col.sorted_values.size()) &&
             std::fabs(snapped - x) <= 1e-9 * std::max(1.0, std::fabs(x));
      }
      if (ok) continue;
      if (bad == 0) {
        first = v;
        first_is_number = is_number;
      }
      bad += n;
    }
    if (bad == 0) continue;
    const std::string where = absl::StrCat(" (", bad, bad == 1 ? " row)" : " rows)");
    if (!first_is_number) {
      return absl::InvalidArgumentError(absl::StrCat(label_, ": column ", col.csv_column + 1, " (",
                                                     col.name, "): '", first, "' is not a number",
                                                     where));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(label_, ": column ", col.csv_column + 1, " (", col.name, "): ", first,
                     " is not on the grid ", col.range_lo, " + i * ", col.precision,
                     " inside the range [", col.range_lo, ", ", col.range_hi, ")", where));
  }
  for (const auto& vc : ds.value_columns) {
    const auto unknown = unknown_in(vc.csv_column, vc.values);
    if (unknown.empty()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute '", vc.name,
        "': values not among its declared values: ", table::FormatUnknownValues(unknown)));
  }
  if (ds.class_column >= 0 && ds.class_declared) {
    const auto unknown = unknown_in(ds.class_column, ds.class_labels);
    if (!unknown.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "class attribute '", ds.header[ds.class_column],
          "': values not among its declared values: ", table::FormatUnknownValues(unknown)));
    }
  }
  for (size_t q = 0; q < ds.qids.size(); ++q) {
    const table::QidColumn& col = ds.qids[q];
    if (col.kind == table::QidKind::kContinuous) continue;
    const auto unknown = unknown_in(col.csv_column, code_text_[q]);
    if (unknown.empty()) continue;
    uint64_t total = 0;
    for (const auto& [v, n] : unknown) total += n;
    std::string what = " not among the attribute's declared values";
    for (const auto& a : spec_.attributes()) {
      if (a.name() == col.name && col.kind == table::QidKind::kTaxonomy) {
        what = absl::StrCat(" not a leaf of taxonomy ", a.taxonomy());
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute '", col.name, "': ", unknown.size(),
        unknown.size() == 1 ? " value is" : " values are", what, " (", total,
        total == 1 ? " record): " : " records): ", table::FormatUnknownValues(unknown)));
  }
  return absl::OkStatus();
}

// The snapshot's fingerprint: FNV-1a over the row counts and every (column, value, class, count)
// the job reads, in order.
void PostgresPushdown::TakeFingerprint(const DistinctValues& values) {
  const table::Dataset& ds = *data_;
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // a separator no text byte sequence ends with by accident
    h *= 1099511628211ull;
  };
  mix(absl::StrCat(ds.records_in, " ", ds.num_records));
  for (size_t i = 0; i < values.columns.size(); ++i) {
    mix(ds.header[values.columns[i]]);
    for (const auto& [v, per_class] : values.by_class[i]) {
      mix(v);
      for (const auto& [cls, n] : per_class) mix(absl::StrCat(cls, ":", n));
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  fingerprint_ = hex;
}

// Every value is known now: each QID's (code, class) histogram over the kept rows, from which
// range counts, rank histograms and node class counts are computed without another scan (the
// snapshot does not change during the job).
absl::Status PostgresPushdown::BuildHistograms(const DistinctValues& values) {
  const table::Dataset& ds = *data_;
  const size_t nc = std::max(1, ds.num_classes());
  hist_.assign(ds.qids.size(), {});
  for (size_t q = 0; q < ds.qids.size(); ++q) {
    const table::QidColumn& col = ds.qids[q];
    const size_t i = std::find(values.columns.begin(), values.columns.end(), col.csv_column) -
                     values.columns.begin();
    size_t space = 0;
    switch (col.kind) {
      case table::QidKind::kTaxonomy:
        space = col.taxonomy->size();
        break;
      case table::QidKind::kSuppression:
        space = col.values.size();
        break;
      case table::QidKind::kContinuous:
        space = col.sorted_values.size();
        break;
    }
    hist_[q].assign(space * nc, 0);
    for (const auto& [v, per_class] : values.by_class[i]) {
      int64_t code = -1;
      if (col.kind == table::QidKind::kContinuous) {
        double x = 0;
        if (absl::SimpleAtod(v, &x)) {
          code = static_cast<int64_t>(std::round((x - col.range_lo) / col.precision));
        }
      } else {
        const auto it = std::find(code_text_[q].begin(), code_text_[q].end(), v);
        if (it != code_text_[q].end()) code = codes_[q][it - code_text_[q].begin()];
      }
      if (code < 0 || static_cast<size_t>(code) >= space) {
        return absl::InternalError(absl::StrCat(label_, ": value of '", col.name, "' unmapped"));
      }
      for (const auto& [cls, n] : per_class) hist_[q][static_cast<size_t>(code) * nc + cls] += n;
    }
  }
  return absl::OkStatus();
}

void PostgresPushdown::Specialize(int attr, engine::NodeIndex node, int c) {
  applied_[{attr, node}] = c;
}

engine::NodeIndex PostgresPushdown::CurrentNode(const engine::AttributeHierarchy& h, int attr,
                                                int32_t code) const {
  engine::NodeIndex n = h.root();
  while (!h.node(n).children.empty()) {
    const auto it = applied_.find({attr, n});
    const int c = it == applied_.end() ? 0 : it->second;
    const int child = h.ChildOfRecord(n, c, code);
    if (child < 0 || static_cast<size_t>(child) >= h.node(n).children.size()) break;
    n = h.node(n).children[child];
  }
  return n;
}

std::string PostgresPushdown::CodeCase(int attr, const std::vector<int64_t>& per_code) const {
  const table::QidColumn& col = data_->qids[attr];
  if (col.kind == table::QidKind::kContinuous) {
    // Runs of equal values over consecutive grid indices: one WHEN per run.
    std::string sql = "CASE";
    size_t i = 0;
    while (i < per_code.size()) {
      size_t j = i;
      while (j < per_code.size() && per_code[j] == per_code[i]) ++j;
      if (j == per_code.size()) {
        return i == 0 ? absl::StrCat(per_code[i])
                      : absl::StrCat(sql, " ELSE ", per_code[i], " END");
      }
      absl::StrAppend(&sql, " WHEN ", RankBelow(attr, static_cast<int64_t>(j)), " THEN ",
                      per_code[i]);
      i = j;
    }
    return absl::StrCat(sql, " ELSE -2 END");
  }
  // Categorical: the texts grouped by value; the largest group is the ELSE (every value was
  // checked to be in the domain at Open).
  std::map<int64_t, std::vector<std::string>> by_value;
  for (size_t i = 0; i < per_code.size(); ++i)
    by_value[per_code[i]].push_back(Lit(code_text_[attr][i]));
  if (by_value.empty()) return "-2";
  auto largest = by_value.begin();
  for (auto it = by_value.begin(); it != by_value.end(); ++it) {
    if (it->second.size() > largest->second.size()) largest = it;
  }
  if (by_value.size() == 1) return absl::StrCat(largest->first);
  std::string sql = "CASE";
  for (auto it = by_value.begin(); it != by_value.end(); ++it) {
    if (it == largest) continue;
    absl::StrAppend(&sql, " WHEN ", Text(col.csv_column), " IN (", absl::StrJoin(it->second, ", "),
                    ") THEN ", it->first);
  }
  return absl::StrCat(sql, " ELSE ", largest->first, " END");
}

std::string PostgresPushdown::CutExpr(const std::vector<engine::AttributeHierarchy>& hier,
                                      int attr) const {
  std::vector<int64_t> per_code;
  for (int32_t code : codes_[attr]) per_code.push_back(CurrentNode(hier[attr], attr, code));
  return CodeCase(attr, per_code);
}

std::string PostgresPushdown::FineExpr(const std::vector<engine::AttributeHierarchy>& hier,
                                       int attr) const {
  std::vector<int64_t> per_code;
  for (int32_t code : codes_[attr]) {
    const engine::NodeIndex n = CurrentNode(hier[attr], attr, code);
    per_code.push_back(hier[attr].FineChildCount(n) > 0 ? hier[attr].FineChildOf(n, code) : -1);
  }
  return CodeCase(attr, per_code);
}

bool PostgresPushdown::Occurs(int attr, int32_t code) const {
  const size_t nc = std::max(1, data_->num_classes());
  const std::vector<uint64_t>& h = hist_[attr];
  if (code < 0 || static_cast<size_t>(code) * nc >= h.size()) return false;
  for (size_t cls = 0; cls < nc; ++cls) {
    if (h[static_cast<size_t>(code) * nc + cls] != 0) return true;
  }
  return false;
}

void PostgresPushdown::PackColumns(const std::vector<std::vector<int64_t>>& digits,
                                   PackedCut* p) const {
  // Mixed radix: attribute a's digit (0 .. radix-1, radix = nodes[a].size()) times the product of
  // the radices before it in its column; a new BIGINT column when the product would pass the
  // limit (2^62: one column unless the cut is very fine). Hashing one or two integers per row
  // instead of one per attribute is most of the gain over grouping by each attribute's node.
  const int nqid = static_cast<int>(digits.size());
  p->chunk.assign(nqid, 0);
  p->mult.assign(nqid, 1);
  std::vector<std::string> terms;
  uint64_t product = 1;
  for (int a = 0; a < nqid; ++a) {
    const uint64_t radix = std::max<uint64_t>(1, p->nodes[a].size());
    if (radix > 1 && !terms.empty() && product > limits_.pack_limit / radix) {
      p->columns.push_back(absl::StrJoin(terms, " + "));
      terms.clear();
      product = 1;
    }
    p->chunk[a] = static_cast<int>(p->columns.size());
    p->mult[a] = product;
    if (radix > 1) {
      std::string term = absl::StrCat("CAST(", CodeCase(a, digits[a]), " AS BIGINT)");
      if (product > 1) absl::StrAppend(&term, " * ", product);
      terms.push_back(std::move(term));
      product *= radix;
    }
  }
  p->columns.push_back(terms.empty() ? "0" : absl::StrJoin(terms, " + "));
}

PostgresPushdown::PackedCut PostgresPushdown::Pack(
    const std::vector<engine::AttributeHierarchy>& hier) const {
  // Each attribute's current cut nodes numbered 0..R-1 (in node order).
  const int nqid = static_cast<int>(data_->qids.size());
  PackedCut p;
  p.nodes.resize(nqid);
  p.position.resize(nqid);
  std::vector<std::vector<int64_t>> digits(nqid);
  for (int a = 0; a < nqid; ++a) {
    std::vector<int64_t> node_of;
    for (int32_t code : codes_[a]) node_of.push_back(CurrentNode(hier[a], a, code));
    std::vector<int64_t> sorted = node_of;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      p.nodes[a].push_back(static_cast<engine::NodeIndex>(sorted[i]));
      p.position[a][static_cast<engine::NodeIndex>(sorted[i])] = static_cast<int64_t>(i);
    }
    for (int64_t n : node_of) digits[a].push_back(p.position[a][static_cast<engine::NodeIndex>(n)]);
  }
  PackColumns(digits, &p);
  return p;
}

PostgresPushdown::PackedCut PostgresPushdown::PackFine(
    const std::vector<engine::AttributeHierarchy>& hier, const std::vector<bool>& refinable) const {
  // Per refinable attribute, its fine child under the current node plus one (0: the node has no
  // fine children); `nodes[a]` only records the radix (its size).
  const int nqid = static_cast<int>(data_->qids.size());
  PackedCut p;
  p.nodes.resize(nqid);
  p.position.resize(nqid);
  std::vector<std::vector<int64_t>> digits(nqid);
  for (int a = 0; a < nqid; ++a) {
    if (!refinable[a]) continue;
    int64_t top = 0;
    for (int32_t code : codes_[a]) {
      const engine::NodeIndex n = CurrentNode(hier[a], a, code);
      digits[a].push_back(hier[a].FineChildCount(n) > 0 ? hier[a].FineChildOf(n, code) + 1 : 0);
      top = std::max(top, digits[a].back());
    }
    p.nodes[a].assign(static_cast<size_t>(top) + 1, 0);
  }
  PackColumns(digits, &p);
  return p;
}

std::optional<std::vector<int64_t>> PostgresPushdown::Encode(
    const PackedCut& p, const std::vector<engine::NodeIndex>& key) const {
  std::vector<int64_t> packed(p.columns.size(), 0);
  if (key.size() != p.nodes.size()) return std::nullopt;
  for (size_t a = 0; a < key.size(); ++a) {
    const auto it = p.position[a].find(key[a]);
    if (it == p.position[a].end()) return std::nullopt;  // no record can have this key
    packed[p.chunk[a]] += it->second * static_cast<int64_t>(p.mult[a]);
  }
  return packed;
}

std::vector<engine::NodeIndex> PostgresPushdown::Decode(const PackedCut& p,
                                                        const int64_t* packed) const {
  std::vector<engine::NodeIndex> key(p.nodes.size(), -1);
  for (size_t a = 0; a < key.size(); ++a) {
    const uint64_t radix = std::max<size_t>(1, p.nodes[a].size());
    const uint64_t pos = static_cast<uint64_t>(packed[p.chunk[a]]) / p.mult[a] % radix;
    if (pos < p.nodes[a].size()) key[a] = p.nodes[a][pos];
  }
  return key;
}

std::string PostgresPushdown::PackedFilter(
    const PackedCut& p, const std::vector<std::vector<engine::NodeIndex>>& keys) const {
  std::set<std::vector<int64_t>> wanted;
  for (const auto& key : keys) {
    if (auto packed = Encode(p, key)) wanted.insert(*std::move(packed));
  }
  if (wanted.empty()) return "FALSE";
  std::vector<std::string> names, rows;
  for (size_t i = 0; i < p.columns.size(); ++i) names.push_back(absl::StrCat("g", i));
  for (const auto& w : wanted) {
    rows.push_back(p.columns.size() == 1 ? absl::StrCat(w[0])
                                         : absl::StrCat("(", absl::StrJoin(w, ", "), ")"));
  }
  if (p.columns.size() == 1) return absl::StrCat("g0 IN (", absl::StrJoin(rows, ", "), ")");
  return absl::StrCat("(", absl::StrJoin(names, ", "), ") IN (VALUES ", absl::StrJoin(rows, ", "),
                      ")");
}

std::string PostgresPushdown::KeyFilter(
    const std::vector<std::vector<engine::NodeIndex>>& keys) const {
  std::vector<std::string> names, rows;
  for (size_t a = 0; a < data_->qids.size(); ++a) names.push_back(absl::StrCat("k", a));
  for (const auto& key : keys) rows.push_back(absl::StrCat("(", absl::StrJoin(key, ", "), ")"));
  return absl::StrCat("(", absl::StrJoin(names, ", "), ") IN (VALUES ", absl::StrJoin(rows, ", "),
                      ")");
}

std::string PostgresPushdown::From(
    const std::vector<std::pair<std::string, std::string>>& columns) const {
  std::vector<std::string> select;
  select.reserve(columns.size());
  for (const auto& [name, expr] : columns) select.push_back(absl::StrCat(expr, " AS ", name));
  return absl::StrCat("(SELECT ", absl::StrJoin(select, ", "), " FROM (", query_,
                      ") AS fedanon_src WHERE ", kept_, ") AS fedanon_t");
}

absl::StatusOr<std::vector<std::vector<int64_t>>> PostgresPushdown::Rows(const std::string& sql,
                                                                         std::string_view what) {
  ++queries_;
  ASSIGN_OR_RETURN(Result r, conn_->Exec(sql, what));
  std::vector<std::vector<int64_t>> rows(PQntuples(r.get()));
  const int width = PQnfields(r.get());
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    rows[i].resize(width, kNull);
    for (int j = 0; j < width; ++j) {
      if (PQgetisnull(r.get(), i, j)) continue;
      if (!absl::SimpleAtoi(PQgetvalue(r.get(), i, j), &rows[i][j])) {
        return absl::InternalError(
            absl::StrCat(label_, ": ", std::string(what), " returned a non-integer"));
      }
    }
  }
  return rows;
}

absl::Status PostgresPushdown::AppendStats(const std::vector<engine::AttributeHierarchy>& hier,
                                           const engine::StatsRequest& request,
                                           std::vector<uint64_t>* out) {
  const table::Dataset& ds = *data_;
  if (hier.size() != ds.qids.size()) return absl::InternalError("push-down: hierarchies differ");
  if (!request.histograms.empty()) {
    return absl::FailedPreconditionError(
        "push-down: sensitive histograms (privacy.model ldiversity or tcloseness) are not computed "
        "in the database; load the table (mode: csv or a PostgreSQL source without push-down)");
  }
  AppendHistogramStats(hier, request, out);
  if (!request.group_keys.empty()) RETURN_IF_ERROR(AppendGroupStats(hier, request, out));
  return AppendReleasedCounts(hier, request, out);
}

// Range counts, rank histograms and node class counts: from the QIDs' (code, class) histograms
// taken at Open (each depends on one attribute's codes and the class only).
void PostgresPushdown::AppendHistogramStats(const std::vector<engine::AttributeHierarchy>& hier,
                                            const engine::StatsRequest& request,
                                            std::vector<uint64_t>* out) const {
  const size_t nc = std::max(1, data_->num_classes());
  for (const engine::RangeCountRequest& rq : request.range_counts) {
    if (rq.bounds.size() < 2) continue;
    const size_t per = rq.labelled ? nc : 1;
    const size_t base = out->size();
    out->resize(base + (rq.bounds.size() - 1) * per, 0);
    const std::vector<uint64_t>& h = hist_[rq.attr];
    for (size_t code = 0; code * nc < h.size(); ++code) {
      const int32_t c = static_cast<int32_t>(code);
      if (c < rq.bounds.front() || c >= rq.bounds.back()) continue;
      const size_t range = static_cast<size_t>(
          std::upper_bound(rq.bounds.begin(), rq.bounds.end(), c) - rq.bounds.begin() - 1);
      for (size_t cls = 0; cls < nc; ++cls) {
        (*out)[base + range * per + (rq.labelled ? cls : 0)] += h[code * nc + cls];
      }
    }
  }
  for (const auto& [a, n] : request.rank_histograms) {
    const engine::HierarchyNode& node = hier[a].node(n);
    const size_t base = out->size();
    out->resize(base + static_cast<size_t>(node.rank_hi - node.rank_lo) * nc, 0);
    const std::vector<uint64_t>& h = hist_[a];
    for (int32_t code = std::max(0, node.rank_lo);
         code < node.rank_hi && static_cast<size_t>(code) * nc < h.size(); ++code) {
      if (!Occurs(a, code) || CurrentNode(hier[a], a, code) != n) continue;
      for (size_t cls = 0; cls < nc; ++cls) {
        (*out)[base + static_cast<size_t>(code - node.rank_lo) * nc + cls] +=
            h[static_cast<size_t>(code) * nc + cls];
      }
    }
  }
  for (const auto& [a, n] : request.node_class_counts) {
    const int fine = hier[a].FineChildCount(n);
    const size_t base = out->size();
    out->resize(base + static_cast<size_t>(fine) * nc, 0);
    if (fine == 0) continue;
    const std::vector<uint64_t>& h = hist_[a];
    for (int32_t code : codes_[a]) {
      if (!Occurs(a, code) || CurrentNode(hier[a], a, code) != n) {
        continue;
      }
      const int f = hier[a].FineChildOf(n, code);
      if (f < 0 || f >= fine) continue;
      for (size_t cls = 0; cls < nc; ++cls) {
        (*out)[base + static_cast<size_t>(f) * nc + cls] += h[static_cast<size_t>(code) * nc + cls];
      }
    }
  }
}

struct PostgresPushdown::GroupQuery {
  PackedCut packed;
  std::vector<bool> refinable;
  GroupPlaces where;
  std::vector<std::pair<std::string, std::string>> cols;  // g0, g1, ...: the packed key
  std::vector<std::string> keys;                          // "g0", "g1", ...
  std::string filter;
};

// Group statistics of the requested keys: (k_all) and (k_all, f_a) per refinable attribute, laid
// out as Tips::AppendGroupStats lays them out.
absl::Status PostgresPushdown::AppendGroupStats(const std::vector<engine::AttributeHierarchy>& hier,
                                                const engine::StatsRequest& request,
                                                std::vector<uint64_t>* out) {
  const int nqid = static_cast<int>(data_->qids.size());
  const size_t stride = 1 + data_->tracked.size();
  GroupQuery q;
  std::vector<bool>& refinable = q.refinable;
  refinable.assign(nqid, false);
  for (const auto& key : request.group_keys) {
    for (int a = 0; a < nqid && a < static_cast<int>(key.size()); ++a) {
      if (hier[a].FineChildCount(key[a]) > 0) refinable[a] = true;
    }
  }
  q.packed = Pack(hier);
  const PackedCut& packed = q.packed;
  const int ng = static_cast<int>(packed.columns.size());
  // The layout of each requested key (as Tips::AppendGroupStats).
  const size_t base = out->size();
  GroupPlaces& where = q.where;
  size_t at = base;
  uint64_t combinations = 0;  // (key, fine child of every refinable attribute) cells at most
  for (const auto& key : request.group_keys) {
    std::vector<int64_t> offsets(nqid, -1);
    size_t words = stride;
    uint64_t cells = 1;
    for (size_t a = 0; a < key.size(); ++a) {
      const int fine = hier[a].FineChildCount(key[a]);
      if (fine == 0) continue;
      offsets[a] = static_cast<int64_t>(words);
      words += stride * fine;
      cells = SatMul(cells, static_cast<size_t>(fine));
    }
    if (where.find(key) == where.end()) combinations = SatAdd(combinations, cells);
    where[key].push_back({at, offsets});
    at += words;
  }
  out->resize(at, 0);
  auto& cols = q.cols;
  auto& keys = q.keys;
  for (int i = 0; i < ng; ++i) {
    cols.push_back({absl::StrCat("g", i), packed.columns[i]});
    keys.push_back(absl::StrCat("g", i));
  }
  q.filter = PackedFilter(packed, request.group_keys);
  return combinations <= limits_.max_combined_cells ? SumCombinedGroups(hier, q, out)
                                                    : SumGroupsPerAttribute(hier, q, out);
}

// One plain GROUP BY over the packed key and the packed fine children of every refinable
// attribute (one hash aggregate, parallel where the server allows), summed up here.
absl::Status PostgresPushdown::SumCombinedGroups(
    const std::vector<engine::AttributeHierarchy>& hier, const GroupQuery& q,
    std::vector<uint64_t>* out) {
  const int nqid = static_cast<int>(data_->qids.size());
  const size_t m = data_->tracked.size();
  const int ng = static_cast<int>(q.packed.columns.size());
  std::vector<std::pair<std::string, std::string>> cols = q.cols;
  std::vector<std::string> keys = q.keys;
  const PackedCut fine = PackFine(hier, q.refinable);
  for (size_t i = 0; i < fine.columns.size(); ++i) {
    cols.push_back({absl::StrCat("h", i), fine.columns[i]});
    keys.push_back(absl::StrCat("h", i));
  }
  for (size_t b = 0; b < m; ++b) cols.push_back({absl::StrCat("s", b), sensitive_expr_[b]});
  ASSIGN_OR_RETURN(auto rows, Rows(absl::StrCat("SELECT ", absl::StrJoin(keys, ", "), ", count(*)",
                                                SensitiveSums(m), " FROM ", From(cols), " WHERE ",
                                                q.filter, " GROUP BY ", absl::StrJoin(keys, ", ")),
                                   "group statistics"));
  const size_t grouped = keys.size();
  for (const auto& row : rows) {
    const auto it = q.where.find(Decode(q.packed, row.data()));
    if (it == q.where.end()) continue;
    AddGroupCounts(it->second, -1, -1, row.data() + grouped, m, out);
    for (int a = 0; a < nqid; ++a) {
      if (!q.refinable[a]) continue;
      const uint64_t radix = fine.nodes[a].size();
      const int64_t f = static_cast<int64_t>(static_cast<uint64_t>(row[ng + fine.chunk[a]]) /
                                             fine.mult[a] % radix) -
                        1;
      AddGroupCounts(it->second, a, f, row.data() + grouped, m, out);
    }
  }
  return absl::OkStatus();
}

// Very many cells: a plain GROUP BY (key) and one GROUP BY (key, f_a) per refinable attribute,
// each with fewer rows than the combined one, joined by UNION ALL into one statement (no
// GROUPING SETS: Citus runs those on a single shard only). Each part fills its own f_a and
// leaves the others NULL, so a row names its attribute.
absl::Status PostgresPushdown::SumGroupsPerAttribute(
    const std::vector<engine::AttributeHierarchy>& hier, const GroupQuery& q,
    std::vector<uint64_t>* out) {
  const int nqid = static_cast<int>(data_->qids.size());
  const size_t m = data_->tracked.size();
  const int ng = static_cast<int>(q.packed.columns.size());
  const std::vector<std::pair<std::string, std::string>>& cols = q.cols;
  const std::vector<std::string>& keys = q.keys;
  std::vector<int> fine_attrs;
  for (int a = 0; a < nqid; ++a) {
    if (q.refinable[a]) fine_attrs.push_back(a);
  }
  std::vector<int> fine_col(nqid, -1);
  for (size_t i = 0; i < fine_attrs.size(); ++i) {
    fine_col[fine_attrs[i]] = ng + static_cast<int>(i);
  }
  const size_t grouped = keys.size() + fine_attrs.size();
  std::vector<std::string> parts;
  for (int part = -1; part < static_cast<int>(fine_attrs.size()); ++part) {
    std::vector<std::pair<std::string, std::string>> part_cols = cols;
    std::vector<std::string> select = keys, group = keys;
    for (size_t i = 0; i < fine_attrs.size(); ++i) {
      const int a = fine_attrs[i];
      if (static_cast<int>(i) != part) {
        select.push_back(absl::StrCat("CAST(NULL AS BIGINT) AS f", a));
        continue;
      }
      part_cols.push_back({absl::StrCat("f", a), FineExpr(hier, a)});
      select.push_back(absl::StrCat("f", a));
      group.push_back(absl::StrCat("f", a));
    }
    for (size_t b = 0; b < m; ++b) {
      part_cols.push_back({absl::StrCat("s", b), sensitive_expr_[b]});
    }
    select.push_back("count(*)");
    for (size_t b = 0; b < m; ++b) select.push_back(absl::StrCat("sum(s", b, ")"));
    parts.push_back(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM ", From(part_cols),
                                 " WHERE ", q.filter, " GROUP BY ", absl::StrJoin(group, ", ")));
  }
  ASSIGN_OR_RETURN(auto rows, Rows(absl::StrJoin(parts, " UNION ALL "), "group statistics"));
  for (const auto& row : rows) {
    const auto it = q.where.find(Decode(q.packed, row.data()));
    if (it == q.where.end()) continue;
    int fine_attr = -1;
    int64_t f = -1;
    for (int a = 0; a < nqid; ++a) {
      if (fine_col[a] >= 0 && row[fine_col[a]] != kNull) {
        fine_attr = a;
        f = row[fine_col[a]];
      }
    }
    AddGroupCounts(it->second, fine_attr, f, row.data() + grouped, m, out);
  }
  return absl::OkStatus();
}

// Released counts of the requested keys per value combination.
absl::Status PostgresPushdown::AppendReleasedCounts(
    const std::vector<engine::AttributeHierarchy>& hier, const engine::StatsRequest& request,
    std::vector<uint64_t>* out) {
  const table::Dataset& ds = *data_;
  const uint64_t combos = request.released_combinations;
  if (request.released_groups.empty() ||
      SatMul(request.released_groups.size(), static_cast<size_t>(combos)) > kMaxReleasedWords ||
      combos > kMaxReleasedWords) {
    return absl::OkStatus();  // nothing, as AppendLocalStats: the caller's length check fails
  }
  const size_t base = out->size();
  out->resize(base + request.released_groups.size() * combos, 0);
  if (combos != ds.ValueCombinations()) return absl::OkStatus();
  const PackedCut packed = Pack(hier);
  const int ng = static_cast<int>(packed.columns.size());
  std::vector<std::pair<std::string, std::string>> cols;
  std::vector<std::string> select;
  for (int i = 0; i < ng; ++i) {
    cols.push_back({absl::StrCat("g", i), packed.columns[i]});
    select.push_back(absl::StrCat("g", i));
  }
  cols.push_back({"v", value_index_expr_});
  select.push_back("v");
  std::map<std::vector<engine::NodeIndex>, std::vector<size_t>> where;
  for (size_t i = 0; i < request.released_groups.size(); ++i) {
    where[request.released_groups[i]].push_back(base + i * combos);
  }
  ASSIGN_OR_RETURN(auto rows, Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "),
                                                ", count(*) FROM ", From(cols), " WHERE ",
                                                PackedFilter(packed, request.released_groups),
                                                " GROUP BY ", absl::StrJoin(select, ", ")),
                                   "released counts"));
  for (const auto& row : rows) {
    const auto it = where.find(Decode(packed, row.data()));
    if (it == where.end()) continue;
    const int64_t v = row[ng];
    if (v < 0 || static_cast<uint64_t>(v) >= combos) continue;
    for (size_t offset : it->second) (*out)[offset + v] += static_cast<uint64_t>(row[ng + 1]);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::vector<engine::NodeIndex>, std::vector<uint64_t>>>
PostgresPushdown::GroupCounts(const std::vector<engine::AttributeHierarchy>& hier) {
  const PackedCut packed = Pack(hier);
  const int ng = static_cast<int>(packed.columns.size());
  std::vector<std::pair<std::string, std::string>> cols;
  std::vector<std::string> keys, select;
  for (int i = 0; i < ng; ++i) {
    cols.push_back({absl::StrCat("g", i), packed.columns[i]});
    keys.push_back(absl::StrCat("g", i));
  }
  select = keys;
  select.push_back("count(*)");
  for (size_t b = 0; b < sensitive_expr_.size(); ++b) {
    cols.push_back({absl::StrCat("s", b), sensitive_expr_[b]});
    select.push_back(absl::StrCat("sum(s", b, ")"));
  }
  ASSIGN_OR_RETURN(auto rows,
                   Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM ", From(cols),
                                     " GROUP BY ", absl::StrJoin(keys, ", ")),
                        "group counts"));
  std::map<std::vector<engine::NodeIndex>, std::vector<uint64_t>> groups;
  for (const auto& row : rows) {
    std::vector<uint64_t> counts;
    for (size_t i = ng; i < row.size(); ++i) counts.push_back(static_cast<uint64_t>(row[i]));
    groups[Decode(packed, row.data())] = std::move(counts);
  }
  return groups;
}

absl::Status PostgresPushdown::ForEachReleasedRow(
    const std::vector<engine::AttributeHierarchy>& hier, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  const table::Dataset& ds = *data_;
  std::vector<std::string> select;
  for (int c : columns) {
    int qid = -1;
    for (size_t q = 0; q < ds.qids.size(); ++q) {
      if (ds.qids[q].csv_column == c) qid = static_cast<int>(q);
    }
    if (qid < 0) {
      select.push_back(Text(c));
      continue;
    }
    // The label of each code's cut node, as SQL text.
    std::vector<int64_t> node_of;
    for (int32_t code : codes_[qid]) node_of.push_back(CurrentNode(hier[qid], qid, code));
    std::map<int64_t, std::string> labels;
    for (int64_t n : node_of) {
      labels.emplace(
          n, Lit(hier[qid].Label(static_cast<engine::NodeIndex>(n), spec_.suppression_token())));
    }
    const std::string e = CodeCase(qid, node_of);
    // The node number mapped to its label by a second CASE over the first.
    std::string by_label = absl::StrCat("CASE (", e, ")");
    for (const auto& [n, label] : labels) absl::StrAppend(&by_label, " WHEN ", n, " THEN ", label);
    select.push_back(absl::StrCat(by_label, " END"));
  }
  std::vector<std::string> positions;
  for (size_t i = 0; i < select.size(); ++i) positions.push_back(absl::StrCat(i + 1));
  std::vector<std::string> named;
  for (size_t i = 0; i < select.size(); ++i) named.push_back(absl::StrCat(select[i], " AS c", i));
  ++queries_;
  ASSIGN_OR_RETURN(
      Result r, conn_->Exec(absl::StrCat("SELECT ", absl::StrJoin(named, ", "), ", count(*) FROM (",
                                         query_, ") AS fedanon_src WHERE ", kept_, " GROUP BY ",
                                         absl::StrJoin(positions, ", ")),
                            "released rows"));
  const int width = static_cast<int>(select.size());
  std::vector<std::string_view> row(width);
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    for (int j = 0; j < width; ++j) {
      row[j] = std::string_view(PQgetvalue(r.get(), i, j), PQgetlength(r.get(), i, j));
    }
    uint64_t n = 0;
    if (!absl::SimpleAtoi(PQgetvalue(r.get(), i, width), &n)) {
      return absl::InternalError(absl::StrCat(label_, ": released rows: a bad count"));
    }
    for (uint64_t k = 0; k < n; ++k) emit(row);
  }
  return absl::OkStatus();
}

}  // namespace fedanon::table_postgres
