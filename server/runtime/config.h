// Daemon configuration files (YAML). Each role has its own file with exactly these keys; unknown
// keys are errors, so a typo never silently falls back to a default.
//
//   # leader.yaml                         # party.yaml                  # admin.yaml
//   name: leader                          name: hospital-a              name: alice
//   listen: 0.0.0.0:7443                  leader: 127.0.0.1:7443        leader: 127.0.0.1:7443
//   data_dir: data                        data_dir: data                tls: {ca: ca.crt,
//   tls: {ca: ca.crt, cert: tls.crt,      data: table.csv   (optional)        cert: tls.crt,
//         key: tls.key}                   output_dir: output (optional)       key: tls.key}
//   seal: {cert: seal.crt, key: seal.key} tls: {...}
//   round_timeout_seconds: 60 (optional)  seal: {...}
//                                         sign: {cert: sign.crt, key: sign.key} (optional;
//                                           absent: no vertical jobs)
//   max_concurrent_jobs: 4 (optional)
//   max_queued_jobs: 64 (optional)
//   retention: 30d (optional; s, m, h, d or
//     w; absent: outputs are kept)
//   tls_reload_seconds: 60 (optional; 0: never)
//   resume_timeout_seconds: 120 (optional)
//   party_wait_seconds: 60 (optional; 0..86400)
//   max_message_bytes: 67108864 (optional;
//     4096..67108864: payload chunks)
//   max_resumes: 5 (optional)
//   reload_seconds: 60 (optional)         reload_seconds: 60 (optional; both: 0 = only on SIGHUP)
//                                         max_input_bytes: 68719476736 (optional; 64 GiB)
//                                         admins: [alice] (optional; absent: every admin
//                                           the CA certified may authorize jobs)
//                                         policy: {min_k: 10, min_l: 2, max_c: 0.8,
//                                           qid_attributes: [...], released_attributes: [...],
//                                           recipients: [...], max_releases: 3} (optional;
//                                           each key optional, docs/operations.md)
//                                         tables: {patients: {postgres: {conninfo: ...,
//                                           table: ... or query: ...}}} (optional)
//                                         sink: {postgres: {conninfo: ..., table: ...}}
//                                           (optional; docs/postgres.md)
//
// Metrics (docs/operations.md, "Metrics and health"; off unless configured): the leader's
// `metrics_listen: 127.0.0.1:9464` serves Prometheus metrics over plain HTTP and must be a
// loopback address unless `metrics_allow_non_loopback: true` (then protect the port yourself: a
// firewall, or a TLS-terminating proxy with client certificates in front of it). A party's
// `metrics_listen` must be loopback (127.0.0.0/8 or [::1]), without exception, or a unix socket
// (`unix:/run/fedanon/party-metrics.sock`, created mode 0660): a party listens on nothing on its
// network side.
//
// Every file may also carry `log_format: text|json` (default text). Relative paths are resolved
// against the directory of the config file and returned absolute, except the party's `data`,
// which like every table path of a job is relative to data_dir and kept as written. Errors name the
// file, the line:column (1-based) and the key, e.g. "party.yaml:4:1: unknown key 'dta_dir'".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/table_postgres/postgres_sink.h"
#include "common/table_postgres/postgres_source.h"
#include "party/party_policy.h"
#include "server/runtime/logging.h"

namespace fedanon::server {

struct TlsPaths {
  std::string ca;    // the federation CA certificate (PEM)
  std::string cert;  // this participant's TLS certificate (PEM)
  std::string key;   // and its private key (PEM)
};

struct SealPaths {
  std::string cert;  // sealing certificate (PEM)
  std::string key;   // sealing private key (PEM)
};

inline constexpr int kMaxIdBatchIds = 1 << 24;

struct LeaderConfig {
  std::string path;  // the file it was loaded from (absolute)
  std::string name;
  std::string listen;  // host:port
  std::string data_dir;
  TlsPaths tls;
  SealPaths seal;
  int round_timeout_seconds = 60;
  LogFormat log_format = LogFormat::kText;
  std::string crl;  // certificate revocation list (fedanonctl revoke); "": none
  // Admins (certificate identities) that may act on every job; the others only on their own.
  std::vector<std::string> all_jobs_admins;
  // Jobs that run at once (1..64) and jobs that may wait for a worker (0..100000); beyond that
  // submissions are refused (leader/leader.h).
  int max_concurrent_jobs = 4;
  int max_queued_jobs = 64;
  // Durable jobs: how long a running job waits for a party to (re)connect (after a leader
  // restart, or a party's dropped connection) before it fails naming it (1..86400).
  int resume_timeout_seconds = 120;
  int party_wait_seconds = 60;  // a new job's wait for its parties to connect
  // Durable jobs: how many times a running job is resumed after leader restarts before it fails
  // by name (0..1000): a party's reply that stops the leader is recorded and replayed at every
  // start, so a job that never gets past it must end.
  int max_resumes = 5;
  std::string metrics_listen;  // host:port of the metrics endpoint; "": no endpoint
  bool metrics_allow_non_loopback = false;
  // Finished jobs' results, reports and view logs are deleted this long after the job ended
  // (leader/retention.h); 0: kept forever.
  int64_t retention_seconds = 0;
  // How often the TLS files (tls.ca, tls.cert, tls.key) are re-read so that new handshakes use
  // renewed certificates without a restart (server/runtime/tls.h); 0: read once at start.
  int tls_reload_seconds = 60;
  // How often leader.yaml's `all_jobs_admins:` and the CA bundle (sealing certificates in hellos,
  // the CRL's signature) are re-read (server/runtime/config_reload.h); also on SIGHUP. 0: SIGHUP
  // only.
  int reload_seconds = 60;
  // Vertical jobs: ids per ID-matching batch (docs/crypto.md "ID matching"), 0..kMaxIdBatchIds;
  // 0: the default, 65536 (whole lists are gone: every list goes in batches).
  // The leader lowers it further so that a batch fits half the message limit. Changing it
  // between a leader's stop and restart makes a resumed vertical job's replayed calls differ
  // (the job then fails naming the call).
  int id_batch_ids = 65536;
  // The message limit announced to the parties in PrepareJob (4096..67108864, default 64 MiB):
  // per-record payloads travel in chunks under it (docs/federation-runtime.md "Chunked
  // payloads"), e.g. where a proxy between the sites limits message sizes. Like id_batch_ids,
  // keep it unchanged across a restart with vertical jobs running.
  int max_message_bytes = 64 << 20;
};

struct PartyConfig {
  std::string path;
  std::string name;
  std::string leader;  // host:port of the leader
  std::string data_dir;
  std::string data;        // default table, relative to data_dir (as written); may be empty
  std::string output_dir;  // empty when not configured: the daemon uses <data_dir>/output
  // The largest table a job may make this party read (bytes; common/base's default 64 GiB).
  uint64_t max_input_bytes = uint64_t{64} << 30;
  TlsPaths tls;
  SealPaths seal;
  // The statement-signing pair (`sign: {cert: sign.crt, key: sign.key}`), which vertical jobs
  // need; empty paths when party.yaml has no `sign:` (a kit made before it: horizontal only).
  SealPaths sign;
  LogFormat log_format = LogFormat::kText;
  // The admins whose signed jobs this party runs (party/job_authorization.h); nullopt: every
  // admin certified by the federation CA.
  std::optional<std::vector<std::string>> admins;
  party::PartyPolicy policy;  // what this party will ever take part in
  // Certificate revocation list (fedanonctl revoke), checked for the leader's TLS certificate
  // and every job participant's sealing certificate; fails closed. "": none.
  std::string crl;
  // Loopback host:port of the metrics endpoint, or "unix:" + an absolute path of a unix socket
  // (relative paths in the file are resolved against its directory); "": none.
  std::string metrics_listen;
  // PostgreSQL (docs/postgres.md): tables read from a database, by the name jobs use
  // (`tables: {patients: {postgres: {conninfo: ..., table: ... | query: ...}}}`), and where the
  // released tables go when this party is the recipient (`sink: {postgres: {conninfo: ...,
  // table: ...}}`). Empty / nullopt: CSV files in data_dir and output_dir.
  std::map<std::string, table_postgres::PostgresSource> postgres_tables;
  std::optional<table_postgres::PostgresSink> postgres_sink;
  // How often `admins:`, the CA bundle and the sealing key pair are re-read
  // (server/runtime/config_reload.h); also on SIGHUP. 0: SIGHUP only.
  int reload_seconds = 60;
};

struct AdminConfig {
  std::string path;
  std::string name;
  std::string leader;
  TlsPaths tls;
  LogFormat log_format = LogFormat::kText;
};

// NotFound if the file cannot be read; InvalidArgument for syntax errors, unknown or missing keys
// and bad values.
absl::StatusOr<LeaderConfig> LoadLeaderConfig(const std::string& path);
absl::StatusOr<PartyConfig> LoadPartyConfig(const std::string& path);
absl::StatusOr<AdminConfig> LoadAdminConfig(const std::string& path);

// "host:port", "[v6]:port" with a port in 0..65535; InvalidArgument otherwise (`what` names the
// setting in the message).
absl::Status ValidateHostPort(const std::string& address, const std::string& what);

// A metrics address: host:port with a loopback IP literal (127.0.0.0/8, [::1]) unless
// `allow_non_loopback`; InvalidArgument naming `what` otherwise.
absl::Status ValidateMetricsAddress(const std::string& address, bool allow_non_loopback,
                                    const std::string& what);

// "30d", "12h", "90m", "3600s", "2w" (a positive whole number and one unit) in seconds;
// InvalidArgument naming `what` otherwise.
absl::StatusOr<int64_t> ParseRetentionPeriod(const std::string& text, const std::string& what);

// The socket path of a "unix:PATH" metrics address; "" when `address` is not one.
std::string UnixSocketPath(const std::string& address);

// `path` made absolute against `base_dir` (unchanged when already absolute), lexically normal.
std::string ResolvePath(const std::string& base_dir, const std::string& path);

}  // namespace fedanon::server
