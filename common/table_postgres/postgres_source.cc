#include "common/table_postgres/postgres_source.h"

#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/table_postgres/postgres_connection.h"

namespace fedanon::table_postgres {
namespace {

// One row of COPY's text format (fields separated by tabs, backslash escapes, \N for NULL, a
// final newline) into `fields` / `nulls`. False if the row does not have fields->size() fields.
bool ParseCopyTextRow(std::string_view row, std::vector<std::string>* fields,
                      std::vector<bool>* nulls) {
  if (!row.empty() && row.back() == '\n') row.remove_suffix(1);
  size_t f = 0;
  size_t start = 0;
  for (;;) {
    size_t end = row.find('\t', start);
    if (end == std::string_view::npos) end = row.size();
    if (f >= fields->size()) return false;
    const std::string_view raw = row.substr(start, end - start);
    std::string& out = (*fields)[f];
    out.clear();
    (*nulls)[f] = raw == "\\N";
    for (size_t i = 0; !(*nulls)[f] && i < raw.size(); ++i) {
      if (raw[i] != '\\' || i + 1 == raw.size()) {
        out += raw[i];
        continue;
      }
      const char c = raw[++i];
      switch (c) {
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x': {
          int value = 0, digits = 0;
          while (digits < 2 && i + 1 < raw.size() && absl::ascii_isxdigit(raw[i + 1])) {
            const char h = raw[++i];
            value =
                value * 16 + (absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10);
            ++digits;
          }
          if (digits == 0)
            out += 'x';
          else
            out += static_cast<char>(value);
          break;
        }
        default:
          if (c >= '0' && c <= '7') {
            int value = c - '0';
            for (int d = 1; d < 3 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7';
                 ++d) {
              value = value * 8 + (raw[++i] - '0');
            }
            out += static_cast<char>(value);
          } else {
            out += c;  // \\ and any other escaped character stand for themselves
          }
      }
    }
    ++f;
    if (end == row.size()) break;
    start = end + 1;
  }
  return f == fields->size();
}

}  // namespace

absl::StatusOr<std::vector<Column>> DescribeQuery(Connection& conn, const std::string& query) {
  Result prepared(PQprepare(conn.get(), "", query.c_str(), 0, nullptr));
  if (!prepared || PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat(conn.label(), ": the query failed: ", conn.LastError()));
  }
  Result described(PQdescribePrepared(conn.get(), ""));
  if (!described || PQresultStatus(described.get()) != PGRES_COMMAND_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat(conn.label(), ": the query failed: ", conn.LastError()));
  }
  std::vector<Column> columns;
  columns.reserve(static_cast<size_t>(PQnfields(described.get())));
  for (int i = 0; i < PQnfields(described.get()); ++i) {
    columns.push_back({PQfname(described.get(), i), PQftype(described.get(), i)});
  }
  if (columns.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(conn.label(), ": the query returns no columns"));
  }
  return columns;
}

namespace {

// Type oid -> {category (pg_type.typcategory, 'N' numeric), SQL name}.
absl::StatusOr<absl::flat_hash_map<Oid, std::pair<char, std::string>>> TypesOf(
    Connection& conn, const std::vector<Column>& columns) {
  std::vector<std::string> oids;
  oids.reserve(columns.size());
  for (const Column& c : columns) oids.push_back(absl::StrCat(c.type));
  ASSIGN_OR_RETURN(Result r, conn.Exec("SELECT oid, typcategory, format_type(oid, NULL) FROM "
                                       "pg_type WHERE oid = ANY($1::oid[])",
                                       "reading the column types",
                                       {absl::StrCat("{", absl::StrJoin(oids, ","), "}")}));
  absl::flat_hash_map<Oid, std::pair<char, std::string>> types;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    uint32_t oid = 0;
    if (!absl::SimpleAtoi(PQgetvalue(r.get(), i, 0), &oid)) continue;
    types[static_cast<Oid>(oid)] = {PQgetvalue(r.get(), i, 1)[0], PQgetvalue(r.get(), i, 2)};
  }
  return types;
}

}  // namespace

absl::Status CheckColumnTypes(Connection& conn, const fedanon::v1::JobSpec& spec,
                              const std::vector<Column>& columns) {
  ASSIGN_OR_RETURN(const auto types, TypesOf(conn, columns));
  for (const auto& a : spec.attributes()) {
    if (a.type() != fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) continue;
    for (const Column& c : columns) {
      if (c.name != a.name()) continue;
      auto it = types.find(c.type);
      if (it == types.end() || it->second.first != 'N') {
        return absl::InvalidArgumentError(absl::StrCat(
            conn.label(), ": column '", c.name, "' has type ",
            it == types.end() ? absl::StrCat("oid ", c.type) : it->second.second, "; attribute '",
            a.name(),
            "' is continuous and needs a numeric column (integer, numeric, real, double "
            "precision)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SourceQuery(Connection& conn, const PostgresSource& source) {
  if (!source.query.empty()) {
    std::string query = source.query;
    for (;;) {
      absl::StripTrailingAsciiWhitespace(&query);
      if (query.empty() || query.back() != ';') break;
      query.pop_back();
    }
    return query;
  }
  // regclass resolves the name as SQL does (search_path, case folding) and quotes it.
  ASSIGN_OR_RETURN(
      Result r, conn.Exec("SELECT $1::regclass::text",
                          absl::StrCat("finding the table '", source.table, "'"), {source.table}));
  return absl::StrCat("SELECT * FROM ", PQgetvalue(r.get(), 0, 0));
}

std::string PostgresSourceLabel(const PostgresSource& source) {
  return absl::StrCat("PostgreSQL source '", source.name, "'");
}

absl::StatusOr<table::Dataset> LoadDatasetFromPostgres(const fedanon::v1::JobSpec& spec,
                                                       const PostgresSource& source,
                                                       const table::Dataset* schema,
                                                       const table::LoadDatasetOptions& options) {
  const std::string label = PostgresSourceLabel(source);
  if (source.table.empty() == source.query.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": name exactly one of `table` and `query`"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<table::DatasetEncoder> encoder,
                   table::DatasetEncoder::Create(spec, label, schema));
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, Connection::Open(source.conninfo, label));
  // One snapshot for the description and the rows; nothing the query does can write.
  RETURN_IF_ERROR(
      conn->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "starting a transaction")
          .status());
  ASSIGN_OR_RETURN(const std::string query, SourceQuery(*conn, source));
  ASSIGN_OR_RETURN(const std::vector<Column> columns, DescribeQuery(*conn, query));

  std::vector<std::string_view> views;
  views.reserve(columns.size());
  for (const Column& c : columns) views.push_back(c.name);
  RETURN_IF_ERROR(encoder->SetHeader(views));
  RETURN_IF_ERROR(CheckColumnTypes(*conn, spec, columns));
  absl::flat_hash_set<std::string> named;  // the columns the spec uses: no NULL there
  for (const auto& a : spec.attributes()) named.insert(a.name());

  auto text = std::make_shared<std::string>();
  table::AppendCsvRecord(views, ',', text.get());

  Result copy(PQexec(conn->get(), absl::StrCat("COPY (", query, ") TO STDOUT").c_str()));
  if (!copy || PQresultStatus(copy.get()) != PGRES_COPY_OUT) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": the query failed: ", conn->LastError()));
  }
  std::vector<std::string> fields(columns.size());
  std::vector<bool> nulls(columns.size());
  size_t row = 0;
  for (;;) {
    char* buffer = nullptr;
    const int n = PQgetCopyData(conn->get(), &buffer, /*async=*/0);
    if (n == -1) break;  // end of the rows
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": reading the rows failed after row ",
                                                     row, ": ", conn->LastError()));
    }
    std::unique_ptr<char, decltype(&PQfreemem)> owned(buffer, &PQfreemem);
    ++row;
    if (!ParseCopyTextRow(std::string_view(buffer, static_cast<size_t>(n)), &fields, &nulls)) {
      return absl::InternalError(absl::StrCat(label, ", row ", row, ": COPY sent ",
                                              "a row that does not have ", columns.size(),
                                              " fields"));
    }
    for (size_t i = 0; i < columns.size(); ++i) {
      if (nulls[i] && named.contains(columns[i].name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ", row ", row, ": column ", i + 1, " (", columns[i].name,
            ") is NULL; leave NULLs out in the query (WHERE ... IS NOT NULL) or map them to the "
            "job's missing token '",
            spec.missing_token(), "' (COALESCE)"));
      }
    }
    for (size_t i = 0; i < columns.size(); ++i) views[i] = fields[i];
    table::AppendCsvRecord(views, ',', text.get());
    if (text->size() > options.max_input_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, " is larger than the limit of ", options.max_input_bytes, " bytes for a table"));
    }
    RETURN_IF_ERROR(encoder->AddRow(views, row));
  }
  // The COPY's outcome: a query can fail part way through (e.g. a division by zero in row 1000).
  for (;;) {
    Result end(PQgetResult(conn->get()));
    if (!end) break;
    if (PQresultStatus(end.get()) != PGRES_COMMAND_OK) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": the query failed after row ", row, ": ", conn->LastError()));
    }
  }
  RETURN_IF_ERROR(conn->Exec("COMMIT", "ending the transaction").status());
  return encoder->Finish(std::move(text));
}

}  // namespace fedanon::table_postgres
