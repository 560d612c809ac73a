// A party's table read from PostgreSQL instead of a CSV file (party.yaml `tables:`,
// docs/postgres.md).
//
// The source is the party's own configuration: a libpq connection string (passed to libpq as it
// is, so service files, passfiles and sslmode work as everywhere else; never logged) and either a
// table name or a SELECT. It is read inside one read-only REPEATABLE READ transaction: the column
// types are looked up first (a continuous attribute needs a numeric column), then the rows stream
// with `COPY (query) TO STDOUT` and are encoded one at a time by common/table/dataset.h's
// DatasetEncoder, so the checks and messages are those of a CSV file with "PostgreSQL source
// 'name', row N" in place of "file:line". A NULL is an error naming the column and the row.
// The rows are kept as CSV text in Dataset::source_text (as a CSV file's text is kept), so that
// everything downstream reads the table exactly as it reads a CSV file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::table_postgres {

struct PostgresSource {
  std::string name;      // the table name jobs use ("patients"); in messages
  std::string conninfo;  // libpq connection string ("service=hospital", "host=... dbname=...")
  // Exactly one of: a table or view, written as in SQL ("records.patients", unquoted parts fold
  // to lower case), or a query whose result is the table (SELECT, VALUES, TABLE, WITH ...).
  std::string table;
  std::string query;
  // `mode: push-down` (common/table_postgres/postgres_stats.h): a horizontal job computes its count
  // statistics inside the database and never loads the table; vertical jobs are refused.
  bool push_down = false;
};

// "PostgreSQL source 'patients'", the name errors and logs use.
std::string PostgresSourceLabel(const PostgresSource& source);

// Reads `source` and encodes it for `spec`, as LoadDataset does a CSV file (with `schema`
// encoded against that public schema). `options.max_input_bytes` bounds the rows' text.
// Errors: Unavailable (cannot connect), InvalidArgument (the query fails, a column is missing or
// of the wrong type, a NULL, a value a CSV file would be refused for).
absl::StatusOr<table::Dataset> LoadDatasetFromPostgres(
    const fedanon::v1::JobSpec& spec, const PostgresSource& source,
    const table::Dataset* schema = nullptr, const table::LoadDatasetOptions& options = {});

}  // namespace fedanon::table_postgres
