// The leader's job store: an embedded SQLite database in the leader's data directory
// (<data_dir>/jobs.db) holding every job (request, state, progress, failure reason, report),
// an audit trail of who submitted or cancelled what and when, and the integrated tables of
// finished jobs whose recipient is the leader (<data_dir>/results/<job>.csv, written
// atomically). Job records survive restarts; for durable jobs (docs/operations.md) the store
// also keeps the calls of a running job to its parties (leader/call_recorder.h): a horizontal
// job's secure sums (request digest before the first hop leaves, the sum once complete) and a
// vertical job's replies, so that a restarted leader can resume it (RecoverForResume()).
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "fedanon/v1/federation.pb.h"

struct sqlite3;

namespace fedanon::leader {

// The schema version this build writes (and the newest it opens). docs/leader.md lists them.
inline constexpr int kJobStoreSchemaVersion = 6;
// A recorded reply of this many bytes or more is kept in a file of its own beside the database
// (<data_dir>/calls/<job_id>/), with its SHA-256 in the database (schema v6).
inline constexpr size_t kCallReplyFileBytes = size_t{1} << 20;
// Tests only: replies of `bytes` or more go to files from now on (0: kCallReplyFileBytes again),
// so that a test's small replies take the file path.
void SetCallReplyFileBytesForTesting(size_t bytes);

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

// One recorded call of a running job to its parties (schema v5, leader/call_recorder.h): the
// digest of its request (for a vertical job, the key naming the party, the call's number and the
// request's digest) with the masks the leader drew for it, if any; once complete, the reply the
// leader received (masks dropped). A horizontal job's reply is the unmasked secure sum. Opaque
// bytes for the store (the drivers encode them).
struct RecordedCall {
  uint64_t index = 0;  // 0, 1, ... per job, in recording order
  std::string digest;
  std::string masks;  // empty once done
  bool done = false;
  std::string reply;  // empty while open
};

// A party of a job that ended while the party was away (not connected, or not answering): it is
// to be told the end (EndJob `success`, `reason`) when it connects again, whenever that is, so
// that it deletes the job's durable state (schema v4).
struct UntoldEnd {
  std::string job_id;
  std::string party;
  bool success = false;
  std::string reason;
};

// What RecoverForResume() found in flight.
struct Recovery {
  std::vector<std::string> resume;   // RUNNING jobs: resume once the parties reconnect
  std::vector<std::string> requeue;  // SUBMITTED: back in the queue
  std::vector<std::string> failed;   // marked FAILED with the reason (tell their parties)
  // Jobs that ended (done, failed, cancelled) while their parties were still being told: they
  // still have recorded calls (deleted once the parties were told). Tell them again.
  std::vector<std::string> unended;
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
  // The same, for a table too large to build in memory first: `produce` hands its bytes, in
  // order and in pieces, to the writer it is given (the file is committed, synced and marked
  // only when `produce` and every write succeed; otherwise nothing is stored).
  using ResultWriter = std::function<absl::Status(std::string_view)>;
  absl::Status StoreResultStreamed(const std::string& job_id,
                                   const std::function<absl::Status(const ResultWriter&)>& produce);
  absl::StatusOr<std::string> LoadResult(const std::string& job_id) const;  // NotFound if none
  // The stored result handed to `sink` in pieces of at most `piece_bytes` (bounded memory
  // whatever its size); NotFound if none, an error of `sink` stops it.
  absl::Status StreamResult(const std::string& job_id, size_t piece_bytes,
                            const ResultWriter& sink) const;
  // Whether the job's result is stored: a regular file (not read; a symbolic link is not one).
  absl::StatusOr<bool> HasResult(const std::string& job_id) const;

  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) const;
  absl::StatusOr<fedanon::v1::SubmitJobRequest> Request(const std::string& job_id) const;
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() const;  // newest first

  absl::Status Audit(const std::string& job_id, const std::string& actor, const std::string& action,
                     const std::string& detail = "");
  absl::StatusOr<std::vector<AuditEntry>> AuditTrail(const std::string& job_id) const;

  // Marks every job in SUBMITTED, VALIDATING or RUNNING as FAILED with reason
  // "leader restarted"; returns how many. (For a leader that resumes nothing; the leader uses
  // RecoverForResume.)
  absl::StatusOr<int> RecoverAfterRestart();

  // After a restart: SUBMITTED jobs stay queued, RUNNING jobs (horizontal and vertical) are to be
  // resumed (audited "resuming"), VALIDATING jobs (and a job whose request does not parse) become
  // FAILED with the reason why they cannot resume; a RUNNING job whose report is stored (it was
  // telling its parties that it is done) becomes DONE; it and ended jobs that still have recorded
  // calls are listed as `unended` (their parties are to be told again). Idempotent for the failed
  // ones.
  absl::StatusOr<Recovery> RecoverForResume();

  // Durable jobs: the calls of a running job (leader/call_recorder.h records them).
  // Records call `index`'s request (digest and masks) before it is sent; the same again is
  // accepted (a re-send), a different one, or any once the call has its reply, refused
  // (FailedPrecondition).
  absl::Status RecordCallRequest(const std::string& job_id, uint64_t index,
                                 const std::string& digest, const std::string& masks);
  // Records the reply of call `index` before the leader uses it, completing the request recorded
  // for it (RecordCallRequest) and dropping its masks. A reply is recorded once: FailedPrecondition
  // unless that request is open (recorded, without a reply).
  absl::Status RecordCallReply(const std::string& job_id, uint64_t index, const std::string& reply);
  // The same for a call whose request is not recorded before it is sent (a vertical job: each of
  // its requests follows from the replies before it): the call is recorded complete at once,
  // `digest` (the request's digest or key) with its reply, no masks. A second record at `index`
  // is refused (AlreadyExists).
  absl::Status RecordCompleteCall(const std::string& job_id, uint64_t index,
                                  const std::string& digest, const std::string& reply);
  // The job's calls in index order (0, 1, ...); the last may be open (not done).
  absl::StatusOr<std::vector<RecordedCall>> Calls(const std::string& job_id) const;
  absl::Status DeleteCalls(const std::string& job_id);
  // Schema v4: parties to tell that a job ended. Recording a (job, party) again replaces it;
  // NotFound for an unknown job. Untold() lists every one, oldest first.
  absl::Status RecordUntold(const std::vector<UntoldEnd>& ends);
  absl::Status ForgetUntold(const std::string& job_id, const std::string& party);
  absl::StatusOr<std::vector<UntoldEnd>> Untold() const;
  // Counts one more resume of the job (audited "resumed": "resume N from round R"); returns N.
  absl::StatusOr<int> RecordResume(const std::string& job_id, uint32_t round);
  absl::StatusOr<int> Resumes(const std::string& job_id) const;

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
  // How call `index`'s reply is stored: below kCallReplyFileBytes in its row (`column` the reply,
  // `file` empty); from there in a new file of <data_dir>/calls/, written and synced before the row
  // names it (`column` its SHA-256, `file` its name).
  struct StoredReply {
    std::string column;
    std::string file;
  };
  absl::StatusOr<StoredReply> StoreReply(const std::string& job_id, uint64_t index,
                                         const std::string& reply) const;
  // Removes a reply file (a row that was not written, or a job's calls deleted); logs a failure.
  void RemoveReplyFile(const std::string& file) const;
  mutable absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);  // every statement runs under mu_
  std::string data_dir_;
  // Identity of jobs.db when opened (st_dev, st_ino).
  uint64_t file_dev_ = 0;
  uint64_t file_ino_ = 0;
};

}  // namespace fedanon::leader
