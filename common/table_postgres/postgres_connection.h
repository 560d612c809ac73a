// The libpq plumbing the PostgreSQL source and sink share (common/table internal; only their .cc
// files include it): a connection that closes itself, statements whose failures become
// absl::Status with the server's message, and identifier quoting.
// The connection string goes to libpq as it is and appears in no message or log line: libpq's
// own messages name the host and the user, never the password.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::table_postgres {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

class Connection {
 public:
  // Connects with `conninfo` (client encoding UTF8). Unavailable with libpq's message, prefixed
  // by `label`, when it cannot.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& conninfo,
                                                          const std::string& label);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  PGconn* get() const { return conn_; }
  // "user@host:port/dbname", for logs.
  std::string Describe() const;
  // Runs `sql` with text `params` ($1, $2, ...); InvalidArgument "<label>: <what> failed:
  // <server message>" unless it succeeds (command or rows).
  absl::StatusOr<Result> Exec(const std::string& sql, std::string_view what,
                              const std::vector<std::string>& params = {});
  // The server's message for the last failure on this connection, one line.
  std::string LastError() const;
  // `name` as a quoted SQL identifier.
  absl::StatusOr<std::string> QuoteIdentifier(std::string_view name) const;
  const std::string& label() const { return label_; }

 private:
  Connection(PGconn* conn, std::string label) : conn_(conn), label_(std::move(label)) {}
  PGconn* conn_;
  std::string label_;
};

// The qualified name `name` parsed by the server with SQL's rules (parse_ident: unquoted parts
// fold to lower case, "Quoted" ones are kept): {"records", "patients"} for `records.Patients`.
// InvalidArgument for a malformed name or more than two parts (schema.table).
absl::StatusOr<std::vector<std::string>> ParseQualifiedName(Connection& conn,
                                                            const std::string& name);

// What postgres_source.cc and postgres_stats.cc share about a source (postgres_source.h).
struct Column {
  std::string name;
  Oid type = 0;
};
// The result columns of `query`, without running it (prepared and described).
absl::StatusOr<std::vector<Column>> DescribeQuery(Connection& conn, const std::string& query);
// A continuous attribute needs a numeric column (integer, numeric, real, double precision);
// every other attribute is read as its text.
absl::Status CheckColumnTypes(Connection& conn, const fedanon::v1::JobSpec& spec,
                              const std::vector<Column>& columns);

struct PostgresSource;
// The SELECT that reads `source`: its query (without a final `;`) or every column of its table.
absl::StatusOr<std::string> SourceQuery(Connection& conn, const PostgresSource& source);
}  // namespace fedanon::table_postgres
