#include "common/table/postgres_stats.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/postgres_connection.h"
#include "common/table/unknown_values.h"

namespace fedanon::common {
namespace {

using postgres::Connection;
using postgres::Result;

// As tips.cc: released counts beyond this many words are never computed (the length check of the
// caller fails, as it does for the loaded table).
constexpr uint64_t kMaxReleasedWords = 50'000'000;
constexpr int64_t kNull = INT64_MIN;

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
  const QidColumn& col = data_->qids[attr];
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

std::string PostgresPushdown::Text(int column) const {
  char* quoted =
      PQescapeIdentifier(conn_->get(), data_->header[column].data(), data_->header[column].size());
  std::string out = absl::StrCat("(", quoted == nullptr ? "\"\"" : quoted, ")::text");
  if (quoted != nullptr) PQfreemem(quoted);
  return out;
}

absl::StatusOr<std::unique_ptr<PostgresPushdown>> PostgresPushdown::Open(
    const fedanon::v1::JobSpec& spec, const PostgresSource& source, const Dataset& schema) {
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
  ASSIGN_OR_RETURN(p->query_, postgres::SourceQuery(*p->conn_, source));
  ASSIGN_OR_RETURN(const std::vector<postgres::Column> columns,
                   postgres::DescribeQuery(*p->conn_, p->query_));
  p->data_ = std::make_unique<Dataset>(schema);
  Dataset& ds = *p->data_;
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
  RETURN_IF_ERROR(postgres::CheckColumnTypes(*p->conn_, spec, columns));

  // The codes of every QID attribute, as the in-memory encoder assigns them.
  for (QidColumn& q : ds.qids) {
    q.csv_column = column_of(q.name);
    p->qid_column_.push_back(q.csv_column);
    std::vector<int32_t> codes;
    std::vector<std::string> texts;
    switch (q.kind) {
      case QidKind::kTaxonomy:
        for (int32_t n = 0; n < static_cast<int32_t>(q.taxonomy->size()); ++n) {
          if (!q.taxonomy->is_leaf(n)) continue;
          codes.push_back(n);
          texts.push_back(q.taxonomy->label(n));
        }
        break;
      case QidKind::kSuppression:
        if (!q.values_declared) {
          return absl::FailedPreconditionError(absl::StrCat(
              "push-down needs the declared values of attribute '", q.name, "' (a federated job)"));
        }
        for (size_t v = 0; v < q.values.size(); ++v) {
          codes.push_back(static_cast<int32_t>(v));
          texts.push_back(q.values[v]);
        }
        break;
      case QidKind::kContinuous:
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
  for (const TrackedSensitive& t : ds.tracked) {
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
// column the job reads (a hashed GROUPING SETS), checked here as the reader checks each value
// (taxonomy, declared domain, continuous grid), with its messages.
absl::Status PostgresPushdown::Check() {
  Dataset& ds = *data_;
  auto column_of = [&](const std::string& name) {
    return static_cast<int>(std::find(ds.header.begin(), ds.header.end(), name) -
                            ds.header.begin());
  };
  auto number = [](const Result& r, int row, int col) -> uint64_t {
    uint64_t v = 0;
    if (PQgetisnull(r.get(), row, col)) return 0;
    if (!absl::SimpleAtoi(PQgetvalue(r.get(), row, col), &v)) return 0;
    return v;
  };
  // 1. Rows, kept rows, NULLs per column the spec names.
  std::vector<std::string> cols = {"count(*)", absl::StrCat("count(*) FILTER (WHERE ", kept_, ")")};
  std::vector<int> spec_columns;
  for (const auto& a : spec_.attributes()) {
    spec_columns.push_back(column_of(a.name()));
    cols.push_back(absl::StrCat("count(", Text(spec_columns.back()), ")"));
  }
  ASSIGN_OR_RETURN(Result counts, conn_->Exec(absl::StrCat("SELECT ", absl::StrJoin(cols, ", "),
                                                           " FROM (", query_, ") AS fedanon_src"),
                                              "checking the table"));
  const uint64_t rows = number(counts, 0, 0);
  for (size_t i = 0; i < spec_columns.size(); ++i) {
    const uint64_t nulls = rows - number(counts, 0, static_cast<int>(2 + i));
    if (nulls == 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": column ", spec_columns[i] + 1, " (", ds.header[spec_columns[i]], ") is NULL in ",
        nulls, nulls == 1 ? " row" : " rows",
        "; leave NULLs out in the query (WHERE ... IS NOT NULL) or map them to the job's missing "
        "token '",
        spec_.missing_token(), "' (COALESCE)"));
  }
  ds.records_in = rows;
  ds.num_records = number(counts, 0, 1);
  ds.records_dropped = ds.records_in - ds.num_records;
  if (ds.num_records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": no records", ds.records_dropped ? " left after dropping missing values" : ""));
  }
  // 2. The distinct values (with counts) of every QID, class, sensitive and released column.
  std::vector<int> categorical;
  auto want = [&](int c) {
    if (std::find(categorical.begin(), categorical.end(), c) == categorical.end()) {
      categorical.push_back(c);
    }
  };
  for (const auto& vc : ds.value_columns) want(vc.csv_column);
  if (ds.class_column >= 0) want(ds.class_column);
  for (const auto& q : ds.qids) want(q.csv_column);
  for (const auto& t : ds.tracked) want(column_of(t.attribute));
  std::vector<std::map<std::string, uint64_t>> seen(categorical.size());
  if (!categorical.empty()) {
    std::vector<std::string> select, sets;
    for (size_t i = 0; i < categorical.size(); ++i) {
      select.push_back(absl::StrCat(Text(categorical[i]), " AS t", i));
      sets.push_back(absl::StrCat("(t", i, ")"));
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < categorical.size(); ++i) names.push_back(absl::StrCat("t", i));
    ASSIGN_OR_RETURN(
        Result values,
        conn_->Exec(
            absl::StrCat("SELECT ", absl::StrJoin(names, ", "), ", count(*) FROM (SELECT ",
                         absl::StrJoin(select, ", "), " FROM (", query_, ") AS fedanon_src WHERE ",
                         kept_, ") AS fedanon_t GROUP BY GROUPING SETS (",
                         absl::StrJoin(sets, ", "), ")"),
            "listing the values"));
    const int width = static_cast<int>(categorical.size());
    for (int r = 0; r < PQntuples(values.get()); ++r) {
      for (int i = 0; i < width; ++i) {
        if (PQgetisnull(values.get(), r, i)) continue;
        seen[i][PQgetvalue(values.get(), r, i)] += number(values, r, width);
        break;
      }
    }
  }
  auto values_of = [&](int column) -> const std::map<std::string, uint64_t>& {
    return seen[std::find(categorical.begin(), categorical.end(), column) - categorical.begin()];
  };
  auto unknown_in = [&](int column, const std::vector<std::string>& domain) {
    std::map<std::string, uint64_t> unknown;
    for (const auto& [v, n] : values_of(column)) {
      if (std::find(domain.begin(), domain.end(), v) == domain.end()) unknown[v] = n;
    }
    return unknown;
  };
  // Continuous values: the reader's test (a number, on the grid, inside the range) on each
  // distinct value.
  for (const QidColumn& col : ds.qids) {
    if (col.kind != QidKind::kContinuous) continue;
    uint64_t bad = 0;
    std::string first;
    bool first_is_number = true;
    for (const auto& [v, n] : values_of(col.csv_column)) {
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
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", vc.name,
                     "': values not among its declared values: ", FormatUnknownValues(unknown)));
  }
  if (ds.class_column >= 0 && ds.class_declared) {
    const auto unknown = unknown_in(ds.class_column, ds.class_labels);
    if (!unknown.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("class attribute '", ds.header[ds.class_column],
                       "': values not among its declared values: ", FormatUnknownValues(unknown)));
    }
  }
  for (size_t q = 0; q < ds.qids.size(); ++q) {
    const QidColumn& col = ds.qids[q];
    if (col.kind == QidKind::kContinuous) continue;
    const auto unknown = unknown_in(col.csv_column, code_text_[q]);
    if (unknown.empty()) continue;
    uint64_t total = 0;
    for (const auto& [v, n] : unknown) total += n;
    std::string what = " not among the attribute's declared values";
    for (const auto& a : spec_.attributes()) {
      if (a.name() == col.name && col.kind == QidKind::kTaxonomy) {
        what = absl::StrCat(" not a leaf of taxonomy ", a.taxonomy());
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", col.name, "': ", unknown.size(),
                     unknown.size() == 1 ? " value is" : " values are", what, " (", total,
                     total == 1 ? " record): " : " records): ", FormatUnknownValues(unknown)));
  }
  for (const TrackedSensitive& t : ds.tracked) {
    if (values_of(column_of(t.attribute)).count(t.value) > 0) continue;
    ds.warnings.push_back(absl::StrCat("sensitive value '", t.value, "' of attribute '",
                                       t.attribute, "' does not occur in ", label_,
                                       " (a misspelling in the spec?)"));
  }
  return absl::OkStatus();
}

void PostgresPushdown::Specialize(int attr, NodeIndex node, int c) { applied_[{attr, node}] = c; }

NodeIndex PostgresPushdown::CurrentNode(const AttributeHierarchy& h, int attr, int32_t code) const {
  NodeIndex n = h.root();
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
  const QidColumn& col = data_->qids[attr];
  if (col.kind == QidKind::kContinuous) {
    // Runs of equal values over consecutive grid indices: one WHEN per run.
    const std::string rank = Rank(attr);
    std::string sql = "CASE";
    size_t i = 0;
    while (i < per_code.size()) {
      size_t j = i;
      while (j < per_code.size() && per_code[j] == per_code[i]) ++j;
      if (j == per_code.size()) {
        return i == 0 ? absl::StrCat(per_code[i])
                      : absl::StrCat(sql, " ELSE ", per_code[i], " END");
      }
      absl::StrAppend(&sql, " WHEN ", rank, " < ", j, " THEN ", per_code[i]);
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

std::string PostgresPushdown::CutExpr(const std::vector<AttributeHierarchy>& hier, int attr) const {
  std::vector<int64_t> per_code;
  for (int32_t code : codes_[attr]) per_code.push_back(CurrentNode(hier[attr], attr, code));
  return CodeCase(attr, per_code);
}

std::string PostgresPushdown::FineExpr(const std::vector<AttributeHierarchy>& hier,
                                       int attr) const {
  std::vector<int64_t> per_code;
  for (int32_t code : codes_[attr]) {
    const NodeIndex n = CurrentNode(hier[attr], attr, code);
    per_code.push_back(hier[attr].FineChildCount(n) > 0 ? hier[attr].FineChildOf(n, code) : -1);
  }
  return CodeCase(attr, per_code);
}

std::string PostgresPushdown::KeyFilter(const std::vector<std::vector<NodeIndex>>& keys) const {
  std::vector<std::string> names, rows;
  for (size_t a = 0; a < data_->qids.size(); ++a) names.push_back(absl::StrCat("k", a));
  for (const auto& key : keys) rows.push_back(absl::StrCat("(", absl::StrJoin(key, ", "), ")"));
  return absl::StrCat("(", absl::StrJoin(names, ", "), ") IN (VALUES ", absl::StrJoin(rows, ", "),
                      ")");
}

std::string PostgresPushdown::From(
    const std::vector<std::pair<std::string, std::string>>& columns) const {
  std::vector<std::string> select;
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

absl::Status PostgresPushdown::AppendStats(const std::vector<AttributeHierarchy>& hier,
                                           const StatsRequest& request,
                                           std::vector<uint64_t>* out) {
  const Dataset& ds = *data_;
  const int nqid = static_cast<int>(ds.qids.size());
  if (hier.size() != ds.qids.size()) return absl::InternalError("push-down: hierarchies differ");
  const size_t nc = std::max(1, ds.num_classes());
  const size_t m = ds.tracked.size();
  const size_t stride = 1 + m;
  std::vector<std::string> sums;  // sum(s0), sum(s1), ...
  for (size_t b = 0; b < m; ++b) sums.push_back(absl::StrCat("sum(s", b, ")"));

  // 1. Range counts over all records: one query, a grouping set per request.
  std::vector<std::vector<uint64_t>> ranges(request.range_counts.size());
  {
    std::vector<std::pair<std::string, std::string>> cols = {{"cls", class_expr_}};
    std::vector<std::string> sets;
    for (size_t j = 0; j < request.range_counts.size(); ++j) {
      const RangeCountRequest& rq = request.range_counts[j];
      if (rq.bounds.size() < 2) continue;
      ranges[j].assign((rq.bounds.size() - 1) * (rq.labelled ? nc : 1), 0);
      const std::string rank = Rank(rq.attr);
      std::string e = absl::StrCat("CASE WHEN ", rank, " < ", rq.bounds.front(), " THEN -1");
      for (size_t i = 1; i < rq.bounds.size(); ++i) {
        absl::StrAppend(&e, " WHEN ", rank, " < ", rq.bounds[i], " THEN ", i - 1);
      }
      absl::StrAppend(&e, " ELSE -1 END");
      cols.push_back({absl::StrCat("g", j), e});
      sets.push_back(absl::StrCat("(g", j, ", cls)"));
    }
    if (!sets.empty()) {
      std::vector<std::string> select;
      for (const auto& c : cols) select.push_back(c.first);
      ASSIGN_OR_RETURN(
          auto rows,
          Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), ", count(*) FROM ", From(cols),
                            " GROUP BY GROUPING SETS (", absl::StrJoin(sets, ", "), ")"),
               "range counts"));
      for (const auto& row : rows) {
        for (size_t c = 1; c + 1 < row.size(); ++c) {
          if (row[c] == kNull || row[c] < 0) continue;
          const size_t j = std::stoul(cols[c].first.substr(1));
          const RangeCountRequest& rq = request.range_counts[j];
          const size_t idx =
              static_cast<size_t>(row[c]) * (rq.labelled ? nc : 1) + (rq.labelled ? row[0] : 0);
          if (idx < ranges[j].size()) ranges[j][idx] += static_cast<uint64_t>(row.back());
        }
      }
    }
  }
  for (const auto& r : ranges) out->insert(out->end(), r.begin(), r.end());

  // 2-3. Rank histograms and node class counts: one query, grouping sets (k_a, r_a, cls) and
  // (k_a, f_a, cls).
  {
    std::vector<bool> rank_attr(nqid, false), fine_attr(nqid, false);
    for (const auto& [a, n] : request.rank_histograms) rank_attr[a] = true;
    for (const auto& [a, n] : request.node_class_counts) fine_attr[a] = true;
    std::vector<std::pair<std::string, std::string>> cols = {{"cls", class_expr_}};
    std::vector<std::string> sets;
    // Result column -> (kind, attr): kind 0 key, 1 rank, 2 fine.
    std::vector<std::pair<int, int>> meaning = {{-1, -1}};
    for (int a = 0; a < nqid; ++a) {
      if (!rank_attr[a] && !fine_attr[a]) continue;
      cols.push_back({absl::StrCat("k", a), CutExpr(hier, a)});
      meaning.push_back({0, a});
      if (rank_attr[a]) {
        cols.push_back({absl::StrCat("r", a), Rank(a)});
        meaning.push_back({1, a});
        sets.push_back(absl::StrCat("(k", a, ", r", a, ", cls)"));
      }
      if (fine_attr[a]) {
        cols.push_back({absl::StrCat("f", a), FineExpr(hier, a)});
        meaning.push_back({2, a});
        sets.push_back(absl::StrCat("(k", a, ", f", a, ", cls)"));
      }
    }
    // (kind, attr, node) -> (value, class) -> count
    std::map<std::tuple<int, int, int64_t>, std::map<std::pair<int64_t, int64_t>, uint64_t>> got;
    if (!sets.empty()) {
      std::vector<std::string> select;
      for (const auto& c : cols) select.push_back(c.first);
      ASSIGN_OR_RETURN(
          auto rows,
          Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), ", count(*) FROM ", From(cols),
                            " GROUP BY GROUPING SETS (", absl::StrJoin(sets, ", "), ")"),
               "node statistics"));
      for (const auto& row : rows) {
        int64_t key = kNull;
        for (size_t c = 1; c + 1 < row.size(); ++c) {
          if (row[c] == kNull) continue;
          if (meaning[c].first == 0) key = row[c];
        }
        for (size_t c = 1; c + 1 < row.size(); ++c) {
          if (row[c] == kNull || meaning[c].first == 0) continue;
          got[{meaning[c].first, meaning[c].second, key}][{row[c], row[0]}] +=
              static_cast<uint64_t>(row.back());
        }
      }
    }
    for (const auto& [a, n] : request.rank_histograms) {
      const HierarchyNode& node = hier[a].node(n);
      const size_t base = out->size();
      out->resize(base + static_cast<size_t>(node.rank_hi - node.rank_lo) * nc, 0);
      const auto it = got.find({1, a, n});
      if (it == got.end()) continue;
      for (const auto& [vc, count] : it->second) {
        const int64_t idx = (vc.first - node.rank_lo) * static_cast<int64_t>(nc) + vc.second;
        if (vc.first >= node.rank_lo && vc.first < node.rank_hi) (*out)[base + idx] += count;
      }
    }
    for (const auto& [a, n] : request.node_class_counts) {
      const int fine = hier[a].FineChildCount(n);
      const size_t base = out->size();
      out->resize(base + static_cast<size_t>(fine) * nc, 0);
      const auto it = got.find({2, a, n});
      if (it == got.end() || fine == 0) continue;
      for (const auto& [vc, count] : it->second) {
        if (vc.first < 0 || vc.first >= fine) continue;
        (*out)[base + static_cast<size_t>(vc.first) * nc + vc.second] += count;
      }
    }
  }

  // 4. Group statistics of the requested keys: (k_all) and (k_all, f_a) per refinable attribute.
  if (!request.group_keys.empty()) {
    std::vector<bool> refinable(nqid, false);
    for (const auto& key : request.group_keys) {
      for (int a = 0; a < nqid && a < static_cast<int>(key.size()); ++a) {
        if (hier[a].FineChildCount(key[a]) > 0) refinable[a] = true;
      }
    }
    std::vector<std::pair<std::string, std::string>> cols;
    std::vector<std::string> keys, sets;
    for (int a = 0; a < nqid; ++a) {
      cols.push_back({absl::StrCat("k", a), CutExpr(hier, a)});
      keys.push_back(absl::StrCat("k", a));
    }
    const std::string all = absl::StrJoin(keys, ", ");
    sets.push_back(absl::StrCat("(", all, ")"));
    std::vector<int> fine_col(nqid, -1);
    for (int a = 0; a < nqid; ++a) {
      if (!refinable[a]) continue;
      fine_col[a] = static_cast<int>(cols.size());
      cols.push_back({absl::StrCat("f", a), FineExpr(hier, a)});
      sets.push_back(absl::StrCat("(", all, ", f", a, ")"));
    }
    for (size_t b = 0; b < m; ++b) cols.push_back({absl::StrCat("s", b), sensitive_expr_[b]});
    std::vector<std::string> select;  // the keys and the fine children (the first columns)
    for (const auto& c : cols) {
      if (c.first[0] == 'k' || c.first[0] == 'f') select.push_back(c.first);
    }
    const size_t grouped = select.size();
    select.push_back("count(*)");
    for (const auto& s : sums) select.push_back(s);
    // The layout of each requested key (as Tips::AppendGroupStats).
    const size_t base = out->size();
    std::map<std::vector<NodeIndex>, std::vector<std::pair<size_t, std::vector<int64_t>>>> where;
    size_t at = base;
    for (const auto& key : request.group_keys) {
      std::vector<int64_t> offsets(nqid, -1);
      size_t words = stride;
      for (size_t a = 0; a < key.size(); ++a) {
        const int fine = hier[a].FineChildCount(key[a]);
        if (fine == 0) continue;
        offsets[a] = static_cast<int64_t>(words);
        words += stride * fine;
      }
      where[key].push_back({at, offsets});
      at += words;
    }
    out->resize(at, 0);
    ASSIGN_OR_RETURN(auto rows,
                     Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM ", From(cols),
                                       " WHERE ", KeyFilter(request.group_keys),
                                       " GROUP BY GROUPING SETS (", absl::StrJoin(sets, ", "), ")"),
                          "group statistics"));
    for (const auto& row : rows) {
      std::vector<NodeIndex> key(row.begin(), row.begin() + nqid);
      const auto it = where.find(key);
      if (it == where.end()) continue;
      int fine_attr = -1;
      int64_t fine = -1;
      for (int a = 0; a < nqid; ++a) {
        if (fine_col[a] >= 0 && row[fine_col[a]] != kNull) {
          fine_attr = a;
          fine = row[fine_col[a]];
        }
      }
      for (const auto& [offset, attr_offsets] : it->second) {
        uint64_t* w = out->data() + offset;
        if (fine_attr >= 0) {
          if (attr_offsets[fine_attr] < 0 || fine < 0) continue;
          w += attr_offsets[fine_attr] + stride * static_cast<size_t>(fine);
        }
        w[0] += static_cast<uint64_t>(row[grouped]);
        for (size_t b = 0; b < m; ++b) w[1 + b] += static_cast<uint64_t>(row[grouped + 1 + b]);
      }
    }
  }

  // 5. Released counts of the requested keys per value combination.
  const uint64_t combos = request.released_combinations;
  if (request.released_groups.empty() ||
      SatMul(request.released_groups.size(), static_cast<size_t>(combos)) > kMaxReleasedWords ||
      combos > kMaxReleasedWords) {
    return absl::OkStatus();  // nothing, as AppendLocalStats: the caller's length check fails
  }
  const size_t base = out->size();
  out->resize(base + request.released_groups.size() * combos, 0);
  if (combos != ds.ValueCombinations()) return absl::OkStatus();
  std::vector<std::pair<std::string, std::string>> cols;
  std::vector<std::string> select;
  for (int a = 0; a < nqid; ++a) {
    cols.push_back({absl::StrCat("k", a), CutExpr(hier, a)});
    select.push_back(absl::StrCat("k", a));
  }
  cols.push_back({"v", value_index_expr_});
  select.push_back("v");
  std::map<std::vector<NodeIndex>, std::vector<size_t>> where;
  for (size_t i = 0; i < request.released_groups.size(); ++i) {
    where[request.released_groups[i]].push_back(base + i * combos);
  }
  ASSIGN_OR_RETURN(auto rows,
                   Rows(absl::StrCat("SELECT ", absl::StrJoin(select, ", "), ", count(*) FROM ",
                                     From(cols), " WHERE ", KeyFilter(request.released_groups),
                                     " GROUP BY ", absl::StrJoin(select, ", ")),
                        "released counts"));
  for (const auto& row : rows) {
    const auto it = where.find(std::vector<NodeIndex>(row.begin(), row.begin() + nqid));
    if (it == where.end()) continue;
    const int64_t v = row[nqid];
    if (v < 0 || static_cast<uint64_t>(v) >= combos) continue;
    for (size_t offset : it->second) (*out)[offset + v] += static_cast<uint64_t>(row[nqid + 1]);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::vector<NodeIndex>, std::vector<uint64_t>>>
PostgresPushdown::GroupCounts(const std::vector<AttributeHierarchy>& hier) {
  const int nqid = static_cast<int>(data_->qids.size());
  std::vector<std::pair<std::string, std::string>> cols;
  std::vector<std::string> keys, select;
  for (int a = 0; a < nqid; ++a) {
    cols.push_back({absl::StrCat("k", a), CutExpr(hier, a)});
    keys.push_back(absl::StrCat("k", a));
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
  std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups;
  for (const auto& row : rows) {
    std::vector<uint64_t> counts;
    for (size_t i = nqid; i < row.size(); ++i) counts.push_back(static_cast<uint64_t>(row[i]));
    groups[std::vector<NodeIndex>(row.begin(), row.begin() + nqid)] = std::move(counts);
  }
  return groups;
}

absl::Status PostgresPushdown::ForEachReleasedRow(
    const std::vector<AttributeHierarchy>& hier, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  const Dataset& ds = *data_;
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
      labels.emplace(n, Lit(hier[qid].Label(static_cast<NodeIndex>(n), spec_.suppression_token())));
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

}  // namespace fedanon::common
