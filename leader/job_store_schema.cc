#include "leader/job_store_schema.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "leader/job_store.h"
#include "leader/sqlite_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

// Bump together with a migration step in MigrateJobStore().
constexpr int kSchemaVersion = kJobStoreSchemaVersion;
static_assert(kJobStoreSchemaVersion == 6, "add the migration step to MigrateJobStore()");

// The schema of version 1. `seq` orders jobs by creation (newest first in List()).
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE jobs (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id          TEXT    NOT NULL UNIQUE,
  request         BLOB    NOT NULL,
  state           INTEGER NOT NULL,
  failure_reason  TEXT    NOT NULL DEFAULT '',
  submitted_by    TEXT    NOT NULL,
  created_unix    INTEGER NOT NULL,
  updated_unix    INTEGER NOT NULL,
  round           INTEGER NOT NULL DEFAULT 0,
  current_best    TEXT    NOT NULL DEFAULT '',
  elapsed_seconds REAL    NOT NULL DEFAULT 0,
  report          BLOB,
  has_result      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE TABLE audit (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id    TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  unix_time INTEGER NOT NULL,
  actor     TEXT    NOT NULL,
  action    TEXT    NOT NULL,
  detail    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_by_job ON audit(job_id, id);
)sql";

// Version 2 (concurrent jobs): when a worker took the job off the queue (0 while queued, and for
// jobs of version 1).
constexpr char kMigrateToV2[] = R"sql(
ALTER TABLE jobs ADD COLUMN started_unix INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 3 (durable jobs): each secure-sum collect of a running job — the digest of its
// request and the masks drawn for it (recorded before the first hop is sent, so that a restarted
// leader re-sends the request byte-identical), then its unmasked sum (what the leader
// legitimately learns; the masks are dropped then) — and how often the job was resumed.
constexpr char kMigrateToV3[] = R"sql(
CREATE TABLE collects (
  job_id  TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  collect INTEGER NOT NULL,
  digest  BLOB    NOT NULL,
  masks   BLOB,
  sum     BLOB,
  PRIMARY KEY (job_id, collect)
);
ALTER TABLE jobs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 4: the parties of ended jobs that were away when the job ended and are still to be told
// (the leader tells each when it connects again, across restarts, then deletes the row).
constexpr char kMigrateToV4[] = R"sql(
CREATE TABLE untold (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id  TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  party   TEXT    NOT NULL,
  success INTEGER NOT NULL,
  reason  TEXT    NOT NULL,
  UNIQUE (job_id, party)
);
)sql";

// Version 5: `calls`, the recorded calls of every kind of durable job (leader/call_recorder.h),
// replaces `collects` (its rows are copied as they are): per call its number, the digest (or key)
// of its request, the masks drawn for it (NULL once the call has its reply, and for a call
// recorded complete at once) and its reply (NULL while open).
constexpr char kMigrateToV5[] = R"sql(
CREATE TABLE calls (
  job_id     TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  call_index INTEGER NOT NULL,
  digest     BLOB    NOT NULL,
  masks      BLOB,
  reply      BLOB,
  PRIMARY KEY (job_id, call_index)
);
INSERT INTO calls (job_id, call_index, digest, masks, reply)
  SELECT job_id, collect, digest, masks, sum FROM collects;
DROP TABLE collects;
)sql";

// Version 6: a call's reply of kCallReplyFileBytes or more lives in a file of its own under
// <data_dir>/calls/<job_id>/ (`reply_file`, its name; `reply` then holds the SHA-256 of its
// bytes): SQLite spent about 0.4 s of CPU writing a 32 MiB reply into its pages and its WAL,
// where writing and syncing the file takes 0.06 s.
constexpr char kMigrateToV6[] = R"sql(
ALTER TABLE calls ADD COLUMN reply_file TEXT;
)sql";

}  // namespace

absl::Status MigrateJobStore(sqlite3* db, const std::string& path) {
  WriteTxn txn(db);
  RETURN_IF_ERROR(txn.Begin());
  RETURN_IF_ERROR(Exec(db, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  int version = 0;
  {
    Stmt s(db, "SELECT MAX(version) FROM schema_version");
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (row && !s.IsNull(0)) version = static_cast<int>(s.Int(0));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job store ", path, ": its schema version ", version,
        " was written by a newer leader; this leader reads schema versions up to ", kSchemaVersion,
        " (run the newer leader, or a copy of the data directory from before "
        "the upgrade)"));
  }
  if (version == kSchemaVersion) return txn.Commit();
  const int from = version;
  if (version < 1) {
    RETURN_IF_ERROR(Exec(db, kSchemaV1));
    version = 1;
  }
  if (version < 2) {
    RETURN_IF_ERROR(Exec(db, kMigrateToV2));
    version = 2;
  }
  if (version < 3) {
    RETURN_IF_ERROR(Exec(db, kMigrateToV3));
    version = 3;
  }
  if (version < 4) {
    RETURN_IF_ERROR(Exec(db, kMigrateToV4));
    version = 4;
  }
  if (version < 5) {
    RETURN_IF_ERROR(Exec(db, kMigrateToV5));
    version = 5;
  }
  if (version < 6) {
    RETURN_IF_ERROR(Exec(db, kMigrateToV6));
    version = 6;
  }
  RETURN_IF_ERROR(Exec(db, "DELETE FROM schema_version"));
  Stmt s(db, "INSERT INTO schema_version (version) VALUES (?1)");
  s.Bind(1, static_cast<int64_t>(version));
  RETURN_IF_ERROR(s.Run());
  RETURN_IF_ERROR(txn.Commit());
  if (from > 0) {
    spdlog::info("job store {}: schema migrated from version {} to {}", path, from, version);
  }
  return absl::OkStatus();
}

}  // namespace fedanon::leader
