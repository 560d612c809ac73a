#include "tests/postgres/postgres_cluster.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;

// A TCP port on 127.0.0.1 nobody listens on now (the kernel's choice).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Conn = std::unique_ptr<PGconn, ConnDeleter>;
using Result = std::unique_ptr<PGresult, ResultDeleter>;

absl::StatusOr<Conn> Connect(const std::string& conninfo) {
  Conn conn(PQconnectdb(conninfo.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat("connect: ", PQerrorMessage(conn.get())));
  }
  return conn;
}

}  // namespace

std::string PostgresCluster::FindBinDir() {
  if (const char* env = std::getenv("FEDANON_PG_BINDIR"); env != nullptr && *env != '\0') {
    return fs::exists(fs::path(env) / "initdb") ? env : "";
  }
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const fs::path bin = e.path() / "bin";
    if (fs::exists(bin / "initdb") && fs::exists(bin / "pg_ctl")) {
      found.emplace_back(std::atoi(e.path().filename().c_str()), bin.string());
    }
  }
  if (!found.empty()) return std::max_element(found.begin(), found.end())->second;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string dirs = path;
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const fs::path dir = dirs.substr(start, end - start);
      if (!dir.empty() && fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl")) {
        return dir.string();
      }
      start = end + 1;
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<PostgresCluster>> PostgresCluster::Start() {
  const std::string bindir = FindBinDir();
  if (bindir.empty()) {
    return absl::FailedPreconditionError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found: install the `postgresql` package "
        "(deploy/install-deps.sh) or set FEDANON_PG_BINDIR");
  }
  const bool root = geteuid() == 0;
  const passwd* nobody = root ? getpwnam("nobody") : nullptr;
  if (root && (nobody == nullptr || !fs::exists("/usr/sbin/runuser"))) {
    return absl::FailedPreconditionError(
        "running as root, and no user `nobody` or no runuser to run PostgreSQL as");
  }
  std::string templ = "/tmp/fedanon-pg-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const int port = FreeLoopbackPort();
  std::unique_ptr<PostgresCluster> cluster(new PostgresCluster(bindir, templ, port, root));
  {
    std::ofstream pw(templ + "/pwfile");
    pw << kPassword << "\n";
  }
  if (root) {
    for (const std::string& p : {templ, templ + "/pwfile"}) {
      if (chown(p.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
        return absl::InternalError(absl::StrCat("chown ", p, " failed"));
      }
    }
  }
  if (port <= 0) return absl::InternalError("no free loopback port");
  absl::Status st = cluster->RunAsOwner(
      absl::StrCat(bindir, "/initdb -D ", templ, "/data -U ", kUser, " --pwfile=", templ,
                   "/pwfile --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale"),
      "initdb.log");
  if (!st.ok()) return st;
  st = cluster->RunAsOwner(
      absl::StrCat(bindir, "/pg_ctl -D ", templ, "/data -l ", templ, "/server.log -w -t 60 -o '-k ",
                   templ, " -p ", port,
                   " -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB' start"),
      "pg_ctl.log");
  if (!st.ok()) return st;
  cluster->started_ = true;
  return cluster;
}

PostgresCluster::~PostgresCluster() {
  if (started_) {
    absl::Status st =
        RunAsOwner(absl::StrCat(bindir_, "/pg_ctl -D ", dir_, "/data -m immediate -w -t 60 stop"),
                   "pg_ctl_stop.log");
    if (!st.ok()) fprintf(stderr, "PostgresCluster: %s\n", std::string(st.message()).c_str());
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

absl::Status PostgresCluster::RunAsOwner(const std::string& command, const std::string& log) const {
  const std::string full =
      absl::StrCat("cd ", dir_, " && ", as_nobody_ ? "/usr/sbin/runuser -u nobody -- " : "",
                   command, " > ", dir_, "/", log, " 2>&1");
  const int rc = std::system(full.c_str());
  if (rc != 0) {
    std::ifstream in(dir_ + "/" + log);
    const std::string out((std::istreambuf_iterator<char>(in)), {});
    std::ifstream server(dir_ + "/server.log");
    const std::string server_log((std::istreambuf_iterator<char>(server)), {});
    return absl::InternalError(absl::StrCat("`", command, "` failed (", rc, "): ", out,
                                            server_log.empty() ? "" : "\nserver log:\n",
                                            server_log));
  }
  return absl::OkStatus();
}

std::string PostgresCluster::conninfo(const std::string& db) const {
  return absl::StrCat("host=", dir_, " port=", port_, " user=", kUser, " dbname=", db);
}

absl::Status PostgresCluster::Sql(const std::string& sql, const std::string& db) const {
  auto conn = Connect(conninfo(db));
  if (!conn.ok()) return conn.status();
  Result r(PQexec(conn->get(), sql.c_str()));
  const ExecStatusType s = PQresultStatus(r.get());
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    return absl::InvalidArgumentError(absl::StrCat(sql, ": ", PQerrorMessage(conn->get())));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PostgresCluster::Query(const std::string& sql,
                                                                const std::string& db) const {
  auto conn = Connect(conninfo(db));
  if (!conn.ok()) return conn.status();
  Result r(PQexec(conn->get(), sql.c_str()));
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
    return absl::InvalidArgumentError(absl::StrCat(sql, ": ", PQerrorMessage(conn->get())));
  }
  std::vector<std::string> rows;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    std::vector<std::string> fields;
    for (int j = 0; j < PQnfields(r.get()); ++j) {
      fields.push_back(PQgetisnull(r.get(), i, j) ? "<NULL>" : PQgetvalue(r.get(), i, j));
    }
    rows.push_back(absl::StrJoin(fields, "|"));
  }
  return rows;
}

absl::Status PostgresCluster::LoadCsv(const std::string& table,
                                      const std::vector<std::string>& columns,
                                      const std::string& csv, const std::string& db) const {
  auto conn = Connect(conninfo(db));
  if (!conn.ok()) return conn.status();
  const std::string create =
      absl::StrCat("CREATE TABLE ", table, " (", absl::StrJoin(columns, ", "), ")");
  Result created(PQexec(conn->get(), create.c_str()));
  if (PQresultStatus(created.get()) != PGRES_COMMAND_OK) {
    return absl::InvalidArgumentError(absl::StrCat(create, ": ", PQerrorMessage(conn->get())));
  }
  const std::string copy = absl::StrCat("COPY ", table, " FROM STDIN (FORMAT csv, HEADER true)");
  Result started(PQexec(conn->get(), copy.c_str()));
  if (PQresultStatus(started.get()) != PGRES_COPY_IN ||
      PQputCopyData(conn->get(), csv.data(), static_cast<int>(csv.size())) != 1 ||
      PQputCopyEnd(conn->get(), nullptr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(copy, ": ", PQerrorMessage(conn->get())));
  }
  Result done(PQgetResult(conn->get()));
  if (PQresultStatus(done.get()) != PGRES_COMMAND_OK) {
    return absl::InvalidArgumentError(absl::StrCat(copy, ": ", PQerrorMessage(conn->get())));
  }
  while (Result more{PQgetResult(conn->get())}) {
  }
  return absl::OkStatus();
}

}  // namespace fedanon::testing
