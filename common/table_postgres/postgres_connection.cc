#include "common/table_postgres/postgres_connection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/table_postgres/libpq_loader.h"

namespace fedanon::table_postgres {

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& conninfo,
                                                             const std::string& label) {
  if (absl::Status loaded = LoadLibpq(); !loaded.ok()) {
    return absl::Status(loaded.code(), absl::StrCat(label, ": ", loaded.message()));
  }
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(label, ": libpq cannot allocate a connection"));
  }
  std::unique_ptr<Connection> c(new Connection(conn, label));
  if (PQstatus(conn) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat(label, ": cannot connect: ", c->LastError()));
  }
  // The server's notices ("table ... does not exist, skipping") are not errors: not printed.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  if (PQsetClientEncoding(conn, "UTF8") != 0) {
    return absl::UnavailableError(
        absl::StrCat(label, ": cannot set the client encoding to UTF8: ", c->LastError()));
  }
  return c;
}

Connection::~Connection() { PQfinish(conn_); }

std::string Connection::Describe() const {
  const char* host = PQhost(conn_);
  const char* port = PQport(conn_);
  const char* db = PQdb(conn_);
  const char* user = PQuser(conn_);
  return absl::StrCat(user ? user : "", "@", host ? host : "", ":", port ? port : "", "/",
                      db ? db : "");
}

std::string Connection::LastError() const {
  std::string message = PQerrorMessage(conn_);
  absl::StripTrailingAsciiWhitespace(&message);
  return absl::StrReplaceAll(message, {{"\n", " "}});
}

absl::StatusOr<Result> Connection::Exec(const std::string& sql, std::string_view what,
                                        const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0));
  const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string message = r ? PQresultErrorMessage(r.get()) : "";
    absl::StripTrailingAsciiWhitespace(&message);
    if (message.empty()) message = LastError();
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": ", std::string(what), " failed: ", absl::StrReplaceAll(message, {{"\n", " "}})));
  }
  return r;
}

absl::StatusOr<std::string> Connection::QuoteIdentifier(std::string_view name) const {
  const std::string copy(name);
  char* quoted = PQescapeIdentifier(conn_, copy.c_str(), copy.size());
  if (quoted == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(label_, ": cannot quote the identifier '", copy, "': ", LastError()));
  }
  std::string out(quoted);
  PQfreemem(quoted);
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseQualifiedName(Connection& conn,
                                                            const std::string& name) {
  auto parts = conn.Exec("SELECT unnest(parse_ident($1))",
                         absl::StrCat("reading the table name '", name, "'"), {name});
  if (!parts.ok()) return parts.status();
  const int n = PQntuples(parts->get());
  if (n < 1 || n > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(conn.label(), ": table name '", name, "' must be `table` or `schema.table`"));
  }
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.emplace_back(PQgetvalue(parts->get(), i, 0));
  return out;
}

}  // namespace fedanon::table_postgres
