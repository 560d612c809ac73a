// The leader's job store: an embedded SQLite database in the leader's data directory
// (<data_dir>/jobs.db) holding every job (request, state, progress, failure reason, report),
// an audit trail of who submitted or cancelled what and when, and the integrated tables of
// finished jobs whose recipient is the leader (<data_dir>/results/<job>.csv, written
// atomically). Job records survive restarts; RecoverAfterRestart() marks jobs that were in
// flight as failed with reason "leader restarted". Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "fedanon/v1/federation.pb.h"

struct sqlite3;

namespace fedanon::leader {

// The schema version this build writes (and the newest it opens). docs/leader.md lists them.
inline constexpr int kJobStoreSchemaVersion = 2;

// A finished job whose outputs retention may delete (JobStore::FinishedBefore).
struct FinishedJob {
  std::string job_id;
  fedanon::v1::JobState state = fedanon::v1::JOB_STATE_UNSPECIFIED;
  int64_t finished_unix = 0;  // updated_unix of the final state
  bool has_result = false;    // results/<job>.csv is recorded
  bool has_report = false;
};

struct AuditEntry {
  int64_t unix_time = 0;
  std::string actor;   // identity from a certificate, or "leader"
  std::string action;  // "submitted", "cancelled", "state:running", ...
  std::string detail;
};

class JobStore {
 public:
  // Opens or creates <data_dir>/jobs.db (and the directory, mode 0700), migrating an older
  // schema forward in one transaction; FailedPrecondition naming both versions for a database
  // of a newer leader.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& data_dir);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Stores a new job in state SUBMITTED and audits "submitted" by `submitted_by`. Job ids are
  // "job-" + 12 random hex digits.
  absl::StatusOr<std::string> Create(const fedanon::v1::SubmitJobRequest& request,
                                     const std::string& submitted_by);
  // NotFound for an unknown job; FailedPrecondition for a transition out of a final state
  // (done, failed, cancelled). Audits "state:<name>".
  absl::Status SetState(const std::string& job_id, fedanon::v1::JobState state,
                        const std::string& failure_reason = "");
  absl::Status SetProgress(const std::string& job_id, uint32_t round,
                           const std::string& current_best, double elapsed_seconds);
  absl::Status SetReport(const std::string& job_id, const fedanon::v1::Report& report);
  absl::Status StoreResult(const std::string& job_id, const std::string& csv);
  absl::StatusOr<std::string> LoadResult(const std::string& job_id) const;  // NotFound if none

  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) const;
  absl::StatusOr<fedanon::v1::SubmitJobRequest> Request(const std::string& job_id) const;
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() const;  // newest first

  absl::Status Audit(const std::string& job_id, const std::string& actor, const std::string& action,
                     const std::string& detail = "");
  absl::StatusOr<std::vector<AuditEntry>> AuditTrail(const std::string& job_id) const;

  // Marks every job in SUBMITTED, VALIDATING or RUNNING as FAILED with reason
  // "leader restarted"; returns how many.
  absl::StatusOr<int> RecoverAfterRestart();

  // Cheap check that the store still works (for the leader's health service): jobs.db is still
  // the file that was opened (not deleted or replaced, e.g. by a lost volume), it can be read,
  // and the write lock can be taken (BEGIN IMMEDIATE; ROLLBACK). Unavailable naming what failed.
  absl::Status CheckAvailable() const;

  // --- For metrics and retention (no schema change) ---
  // Jobs by state, every state of the enum present (0 when none): one GROUP BY query, cheap
  // enough for every metrics scrape.
  absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>> CountByState() const;
  // Jobs in a final state (done, failed, cancelled) whose last update is at or before
  // `cutoff_unix` and whose outputs retention has not deleted yet (no "retention:deleted" audit
  // entry), oldest first, at most `limit`.
  absl::StatusOr<std::vector<FinishedJob>> FinishedBefore(int64_t cutoff_unix, int limit) const;
  // Retention: forgets a finished job's report and result in the record (report NULL,
  // has_result 0; updated_unix kept) and audits "retention:deleted" by "leader" with `detail`
  // (what was deleted, the age). Deleting the files is the caller's. FailedPrecondition for a
  // job that is not final, NotFound for an unknown one.
  absl::Status ForgetOutputs(const std::string& job_id, const std::string& detail);
  const std::string& data_dir() const { return data_dir_; }

 private:
  JobStore(sqlite3* db, std::string data_dir);
  mutable absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);  // every statement runs under mu_
  std::string data_dir_;
  // Identity of jobs.db when opened (st_dev, st_ino).
  uint64_t file_dev_ = 0;
  uint64_t file_ino_ = 0;
};

}  // namespace fedanon::leader
