// The recipient's released table written into PostgreSQL instead of a CSV file (party.yaml
// `sink:`, docs/postgres.md).
//
// All or nothing: in one transaction the rows go into a new table (every column `text`, named
// by the released header, filled with COPY FROM STDIN), the previous table of that name is
// dropped and the new one renamed in its place, then COMMIT. A failure at any point (a broken
// connection, a refused statement, a malformed row, a cancelled job) rolls it all back, so the
// previous table stays as it was and no half-written table is ever visible to readers.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fedanon::table_postgres {

struct PostgresSink {
  std::string conninfo;  // libpq connection string; never logged
  // The table to create or replace, written as in SQL ("released.adult"); `{job_id}` in it is
  // replaced by the job's id (one table per job).
  std::string table;
};

// `sink.table` with `{job_id}` replaced.
std::string PostgresSinkTable(const PostgresSink& sink, std::string_view job_id);

// Replaces the table PostgresSinkTable(sink, job_id) with the CSV table `csv` (header line first,
// as common/table/csv.h writes it). Unavailable when it cannot connect; InvalidArgument with the
// server's message otherwise. On error the database is as it was before.
absl::Status WriteTableToPostgres(const PostgresSink& sink, std::string_view job_id,
                                  std::string_view csv);
// The same from the CSV file at `path`, streamed (memory stays at the reader's buffer whatever
// the table's size).
absl::Status WriteTableFileToPostgres(const PostgresSink& sink, std::string_view job_id,
                                      const std::string& path);

}  // namespace fedanon::table_postgres
