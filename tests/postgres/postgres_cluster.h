// A private PostgreSQL server for tests (label `postgres`, docs/postgres.md "Tests"): a cluster
// made with the distribution's initdb in a fresh temporary directory, owned by an unprivileged
// user (`nobody` when the test runs as root, as CI does: PostgreSQL refuses to run as root), its
// socket in that directory and TCP on 127.0.0.1 only, at a free port. Local (socket) connections
// are trusted; TCP ones need the password (scram-sha-256), so that passfiles can be tested.
// The destructor stops the server (immediate shutdown) and removes the directory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::testing {

class PostgresCluster {
 public:
  static constexpr char kUser[] = "fedanon";
  static constexpr char kPassword[] = "s3cret-test-password";

  // The directory of initdb and pg_ctl: $FEDANON_PG_BINDIR, the newest
  // /usr/lib/postgresql/<version>/bin (Debian), or the directory of `initdb` on PATH; "" if none.
  static std::string FindBinDir();
  // Starts a cluster. FailedPrecondition when the binaries are absent (tests skip on it).
  static absl::StatusOr<std::unique_ptr<PostgresCluster>> Start();
  ~PostgresCluster();

  // Over the Unix socket, trusted: "host=<dir> port=<port> user=fedanon dbname=<db>".
  std::string conninfo(const std::string& db = "postgres") const;
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

  // Runs SQL statements (one string, `;`-separated) as the superuser.
  absl::Status Sql(const std::string& sql, const std::string& db = "postgres") const;
  // The rows of a query, each row's fields joined by `|`.
  absl::StatusOr<std::vector<std::string>> Query(const std::string& sql,
                                                 const std::string& db = "postgres") const;
  // Creates `table` with `columns` ("name type" each, names quoted as needed) and fills it with
  // the CSV text `csv` (header line first) through COPY FROM STDIN.
  absl::Status LoadCsv(const std::string& table, const std::vector<std::string>& columns,
                       const std::string& csv, const std::string& db = "postgres") const;

 private:
  PostgresCluster(std::string bindir, std::string dir, int port, bool as_nobody)
      : bindir_(std::move(bindir)), dir_(std::move(dir)), port_(port), as_nobody_(as_nobody) {}
  // Runs a PostgreSQL program as the cluster's owner; its output goes to <dir>/<log>.
  absl::Status RunAsOwner(const std::string& command, const std::string& log) const;

  std::string bindir_;
  std::string dir_;
  int port_;
  bool as_nobody_;
  bool started_ = false;
};

}  // namespace fedanon::testing
