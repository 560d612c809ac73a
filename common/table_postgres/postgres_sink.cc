#include "common/table_postgres/postgres_sink.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/table_postgres/postgres_connection.h"

namespace fedanon::table_postgres {
namespace {

// PostgreSQL's identifiers hold at most 63 bytes; the new table's name must stay distinct.
constexpr size_t kMaxIdentifierBytes = 63;
constexpr std::string_view kNewSuffix = "_fedanon_new";

// Appends one field in COPY's text format (backslash escapes; never \N: a value is never NULL).
void AppendCopyText(std::string_view field, std::string* out) {
  for (char c : field) {
    switch (c) {
      case '\\':
        *out += "\\\\";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        *out += c;
    }
  }
}

// Sends the rows of `reader` (after the header, `width` fields each) with COPY FROM STDIN.
absl::Status CopyRows(Connection& conn, table::CsvReader& reader, size_t width) {
  constexpr size_t kChunkBytes = 1 << 20;
  std::string chunk;
  std::vector<std::string_view> fields;
  absl::Status failure;
  for (;;) {
    absl::StatusOr<bool> more = reader.Next(&fields);
    if (!more.ok()) failure = more.status();
    if (failure.ok() && *more) failure = reader.CheckFieldCount(fields, width);
    if (!failure.ok() || !*more || chunk.size() >= kChunkBytes) {
      if (!chunk.empty() &&
          PQputCopyData(conn.get(), chunk.data(), static_cast<int>(chunk.size())) != 1) {
        if (failure.ok()) {
          failure = absl::InvalidArgumentError(
              absl::StrCat(conn.label(), ": sending rows failed: ", conn.LastError()));
        }
      }
      chunk.clear();
    }
    if (!failure.ok() || !*more) break;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) chunk += '\t';
      AppendCopyText(fields[i], &chunk);
    }
    chunk += '\n';
  }
  // Ending the COPY with an error message makes the server abort it (and the transaction).
  const std::string abort_message(failure.message());
  if (PQputCopyEnd(conn.get(), failure.ok() ? nullptr : abort_message.c_str()) != 1) {
    if (failure.ok()) {
      failure = absl::InvalidArgumentError(
          absl::StrCat(conn.label(), ": ending the rows failed: ", conn.LastError()));
    }
  }
  for (;;) {
    Result end(PQgetResult(conn.get()));
    if (!end) break;
    if (failure.ok() && PQresultStatus(end.get()) != PGRES_COMMAND_OK) {
      failure = absl::InvalidArgumentError(
          absl::StrCat(conn.label(), ": writing the rows failed: ", conn.LastError()));
    }
  }
  return failure;
}

absl::Status Replace(Connection& conn, const std::string& target, table::CsvReader& reader) {
  ASSIGN_OR_RETURN(std::vector<std::string> parts, ParseQualifiedName(conn, target));
  const std::string name = parts.back();
  std::string schema;
  if (parts.size() == 2) {
    ASSIGN_OR_RETURN(std::string quoted, conn.QuoteIdentifier(parts[0]));
    schema = quoted + ".";
  }
  ASSIGN_OR_RETURN(const std::string quoted_name, conn.QuoteIdentifier(name));
  std::string new_name = name.substr(0, kMaxIdentifierBytes - kNewSuffix.size());
  new_name += kNewSuffix;
  ASSIGN_OR_RETURN(const std::string quoted_new, conn.QuoteIdentifier(new_name));

  std::vector<std::string_view> header;
  ASSIGN_OR_RETURN(bool has_header, reader.Next(&header));
  if (!has_header) return absl::InvalidArgumentError("the released table is empty");
  std::vector<std::string> columns;
  for (std::string_view h : header) {
    ASSIGN_OR_RETURN(std::string quoted, conn.QuoteIdentifier(h));
    columns.push_back(quoted + " text NOT NULL");
  }
  RETURN_IF_ERROR(conn.Exec("BEGIN", "starting a transaction").status());
  RETURN_IF_ERROR(conn.Exec(absl::StrCat("CREATE TABLE ", schema, quoted_new, " (",
                                         absl::StrJoin(columns, ", "), ")"),
                            "creating the new table")
                      .status());
  Result copy(PQexec(conn.get(), absl::StrCat("COPY ", schema, quoted_new, " FROM STDIN").c_str()));
  if (!copy || PQresultStatus(copy.get()) != PGRES_COPY_IN) {
    return absl::InvalidArgumentError(
        absl::StrCat(conn.label(), ": starting COPY failed: ", conn.LastError()));
  }
  RETURN_IF_ERROR(CopyRows(conn, reader, header.size()));
  RETURN_IF_ERROR(conn.Exec(absl::StrCat("DROP TABLE IF EXISTS ", schema, quoted_name),
                            "dropping the previous table")
                      .status());
  RETURN_IF_ERROR(
      conn.Exec(absl::StrCat("ALTER TABLE ", schema, quoted_new, " RENAME TO ", quoted_name),
                "renaming the new table")
          .status());
  return conn.Exec("COMMIT", "committing").status();
}

}  // namespace

std::string PostgresSinkTable(const PostgresSink& sink, std::string_view job_id) {
  return absl::StrReplaceAll(sink.table, {{"{job_id}", std::string(job_id)}});
}

namespace {

absl::Status WriteFromReader(const PostgresSink& sink, std::string_view job_id,
                             table::CsvReader& reader) {
  const std::string target = PostgresSinkTable(sink, job_id);
  const std::string label = absl::StrCat("PostgreSQL sink '", target, "'");
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, Connection::Open(sink.conninfo, label));
  absl::Status st = Replace(*conn, target, reader);
  // On failure the connection closes without COMMIT: the server rolls the transaction back.
  if (!st.ok()) Result rollback(PQexec(conn->get(), "ROLLBACK"));
  return st;
}

}  // namespace

absl::Status WriteTableToPostgres(const PostgresSink& sink, std::string_view job_id,
                                  std::string_view csv) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader,
                   table::CsvReader::FromString(std::string(csv), "the released table"));
  return WriteFromReader(sink, job_id, *reader);
}

absl::Status WriteTableFileToPostgres(const PostgresSink& sink, std::string_view job_id,
                                      const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader,
                   table::CsvReader::Open(path, table::CsvOptions{.separator = ','}));
  return WriteFromReader(sink, job_id, *reader);
}

}  // namespace fedanon::table_postgres
