#include "leader/job_store.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/rand.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "leader/job_store_schema.h"
#include "leader/sqlite_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

using ::fedanon::v1::JobInfo;
using ::fedanon::v1::JobState;
using ::fedanon::v1::Report;
using ::fedanon::v1::SubmitJobRequest;

constexpr int kBusyTimeoutMs = 10000;
constexpr char kRestartReason[] = "leader restarted";

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "^job-[0-9a-f]{12}$" (common/base/file_io.h). Only such ids are ever used in paths or queries.
using base::ValidateJobId;

std::atomic<size_t> reply_file_bytes{kCallReplyFileBytes};

absl::StatusOr<std::string> NewJobId() {
  std::array<unsigned char, 6> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return absl::InternalError("job store: RAND_bytes failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "job-";
  for (unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 0xf]);
  }
  return id;
}

bool IsFinal(JobState s) {
  return s == fedanon::v1::JOB_STATE_DONE || s == fedanon::v1::JOB_STATE_FAILED ||
         s == fedanon::v1::JOB_STATE_CANCELLED;
}

// "running" for JOB_STATE_RUNNING; "state(17)" for values outside the enum.
std::string StateName(JobState s) {
  if (!fedanon::v1::JobState_IsValid(s)) return absl::StrCat("state(", static_cast<int>(s), ")");
  std::string name = fedanon::v1::JobState_Name(s);
  constexpr std::string_view kPrefix = "JOB_STATE_";
  if (std::string_view(name).starts_with(kPrefix)) name.erase(0, kPrefix.size());
  absl::AsciiStrToLower(&name);
  return name;
}

absl::Status InsertAudit(sqlite3* db, const std::string& job_id, int64_t now,
                         const std::string& actor, const std::string& action,
                         const std::string& detail) {
  Stmt s(
      db,
      "INSERT INTO audit (job_id, unix_time, actor, action, detail) VALUES (?1, ?2, ?3, ?4, ?5)");
  s.Bind(1, job_id).Bind(2, now).Bind(3, actor).Bind(4, action).Bind(5, detail);
  return s.Run();
}

// The job's state; NotFound for an unknown job.
absl::StatusOr<JobState> CurrentState(sqlite3* db, const std::string& job_id) {
  Stmt s(db, "SELECT state FROM jobs WHERE job_id = ?1");
  s.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  return static_cast<JobState>(s.Int(0));
}

absl::Status RequireJob(sqlite3* db, const std::string& job_id) {
  return CurrentState(db, job_id).status();
}

// Changes the state (and failure reason, if given) and audits "state:<name>" by `actor`.
absl::Status WriteState(sqlite3* db, const std::string& job_id, JobState state,
                        const std::string& failure_reason, const std::string& actor, int64_t now) {
  Stmt s(db,
         "UPDATE jobs SET state = ?2, updated_unix = ?3, "
         "failure_reason = CASE WHEN ?4 = '' THEN failure_reason ELSE ?4 END, "
         "started_unix = CASE WHEN started_unix = 0 AND ?2 IN (?5, ?6) THEN ?3 "
         "ELSE started_unix END "
         "WHERE job_id = ?1");
  s.Bind(1, job_id).Bind(2, static_cast<int64_t>(state)).Bind(3, now).Bind(4, failure_reason);
  s.Bind(5, static_cast<int64_t>(fedanon::v1::JOB_STATE_VALIDATING))
      .Bind(6, static_cast<int64_t>(fedanon::v1::JOB_STATE_RUNNING));
  RETURN_IF_ERROR(s.Run());
  return InsertAudit(db, job_id, now, actor, absl::StrCat("state:", StateName(state)),
                     failure_reason);
}

// The columns RowToJobInfo() reads, in order (a literal, spliced into constant SQL only).
#define FEDANON_JOB_COLUMNS                                                                   \
  "job_id, request, state, failure_reason, submitted_by, created_unix, updated_unix, round, " \
  "current_best, elapsed_seconds, report, started_unix"

absl::StatusOr<JobInfo> RowToJobInfo(const Stmt& s) {
  JobInfo info;
  info.set_job_id(s.Text(0));
  SubmitJobRequest request;
  if (!request.ParseFromString(s.Blob(1))) {
    return absl::DataLossError(absl::StrCat("job store: corrupt request of ", info.job_id()));
  }
  info.set_state(static_cast<JobState>(s.Int(2)));
  info.set_failure_reason(s.Text(3));
  info.set_submitted_by(s.Text(4));
  info.set_created_unix(s.Int(5));
  info.set_updated_unix(s.Int(6));
  info.set_round(static_cast<uint32_t>(s.Int(7)));
  info.set_current_best(s.Text(8));
  info.set_elapsed_seconds(s.Double(9));
  for (const std::string& p : request.parties()) info.add_parties(p);
  info.set_recipient(request.recipient());
  if (!s.IsNull(10) && !info.mutable_report()->ParseFromString(s.Blob(10))) {
    return absl::DataLossError(absl::StrCat("job store: corrupt report of ", info.job_id()));
  }
  info.set_started_unix(s.Int(11));
  return info;
}

// Creates `dir` (mode 0700) unless it exists; parents too.
absl::Status MakeDir(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("job store: empty data directory");
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string prefix = pos == std::string::npos ? dir : dir.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return base::ErrnoStatus(errno, absl::StrCat("job store: cannot create directory ", prefix));
    }
    if (pos == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("job store: cannot stat ", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("job store: ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

JobStore::JobStore(sqlite3* db, std::string data_dir) : db_(db), data_dir_(std::move(data_dir)) {}

JobStore::~JobStore() { sqlite3_close_v2(db_); }

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& data_dir) {
  RETURN_IF_ERROR(MakeDir(data_dir));
  RETURN_IF_ERROR(MakeDir(data_dir + "/results"));
  RETURN_IF_ERROR(MakeDir(data_dir + "/calls"));
  const std::string path = data_dir + "/jobs.db";

  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  // Owns the handle until the JobStore does (sqlite3_open_v2 may return one even on failure).
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, &sqlite3_close_v2);
  if (rc != SQLITE_OK) return SqliteStatus(db.get(), rc, absl::StrCat("cannot open ", path));
  sqlite3_extended_result_codes(db.get(), 1);
  // The WAL and shared-memory files inherit the database file's mode.
  if (::chmod(path.c_str(), 0600) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("cannot chmod ", path));
  }
  if (const int brc = sqlite3_busy_timeout(db.get(), kBusyTimeoutMs); brc != SQLITE_OK) {
    return SqliteStatus(db.get(), brc, "busy_timeout");
  }
  {
    Stmt s(db.get(), "PRAGMA journal_mode=WAL");
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || absl::AsciiStrToLower(s.Text(0)) != "wal") {
      return absl::InternalError(absl::StrCat("job store: cannot enable WAL on ", path));
    }
  }
  RETURN_IF_ERROR(Exec(db.get(), "PRAGMA foreign_keys=ON"));
  RETURN_IF_ERROR(Exec(
      db.get(), base::DiskSyncsSkipped() ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(MigrateJobStore(db.get(), path));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("cannot stat ", path));
  }
  std::unique_ptr<JobStore> store(new JobStore(db.release(), data_dir));
  store->file_dev_ = st.st_dev;
  store->file_ino_ = st.st_ino;
  return store;
}

absl::Status JobStore::CheckAvailable() const {
  const std::string path = data_dir_ + "/jobs.db";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::UnavailableError(
        absl::StrCat("job store ", path, " is gone (", std::strerror(errno), ")"));
  }
  if (st.st_dev != file_dev_ || st.st_ino != file_ino_) {
    return absl::UnavailableError(
        absl::StrCat("job store ", path, " was replaced since the leader opened it"));
  }
  absl::MutexLock lock(&mu_);
  {
    Stmt read(db_, "SELECT count(*) FROM jobs");
    if (absl::StatusOr<bool> row = read.Step(); !row.ok()) {
      return absl::UnavailableError(
          absl::StrCat("job store cannot be read: ", row.status().message()));
    }
  }
  if (absl::Status st = Exec(db_, "BEGIN IMMEDIATE"); !st.ok()) {
    return absl::UnavailableError(absl::StrCat("job store cannot be written: ", st.message()));
  }
  return Exec(db_, "ROLLBACK");
}

absl::StatusOr<std::string> JobStore::Create(const SubmitJobRequest& request,
                                             const std::string& submitted_by) {
  if (submitted_by.empty()) return absl::InvalidArgumentError("job store: empty submitter");
  std::string blob;
  if (!request.SerializeToString(&blob)) {
    return absl::InvalidArgumentError("job store: cannot serialize the job request");
  }
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  const int64_t now = NowUnix();
  for (int attempt = 0; attempt < 8; ++attempt) {
    ASSIGN_OR_RETURN(std::string job_id, NewJobId());
    Stmt s(db_,
           "INSERT INTO jobs (job_id, request, state, submitted_by, created_unix, updated_unix) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT(job_id) DO NOTHING");
    s.Bind(1, job_id)
        .BindBlob(2, blob)
        .Bind(3, static_cast<int64_t>(fedanon::v1::JOB_STATE_SUBMITTED))
        .Bind(4, submitted_by)
        .Bind(5, now);
    RETURN_IF_ERROR(s.Run());
    if (sqlite3_changes(db_) == 0) continue;  // id collision: draw another
    RETURN_IF_ERROR(
        InsertAudit(db_, job_id, now, submitted_by, "submitted", request.spec().name()));
    RETURN_IF_ERROR(txn.Commit());
    return job_id;
  }
  return absl::InternalError("job store: could not draw an unused job id");
}

absl::Status JobStore::SetState(const std::string& job_id, JobState state,
                                const std::string& failure_reason) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  if (!fedanon::v1::JobState_IsValid(state) || state == fedanon::v1::JOB_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("job store: invalid target state ", StateName(state)));
  }
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  ASSIGN_OR_RETURN(JobState current, CurrentState(db_, job_id));
  if (IsFinal(current)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id, " is ", StateName(current), " (final); cannot move to ", StateName(state)));
  }
  if (state <= current) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " is ", StateName(current),
                                                      "; cannot move back to ", StateName(state)));
  }
  RETURN_IF_ERROR(WriteState(db_, job_id, state, failure_reason, "leader", NowUnix()));
  return txn.Commit();
}

absl::Status JobStore::SetProgress(const std::string& job_id, uint32_t round,
                                   const std::string& current_best, double elapsed_seconds) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  if (!std::isfinite(elapsed_seconds) || elapsed_seconds < 0) {
    return absl::InvalidArgumentError("job store: elapsed seconds must be finite and >= 0");
  }
  absl::MutexLock lock(&mu_);
  Stmt s(db_,
         "UPDATE jobs SET round = ?2, current_best = ?3, elapsed_seconds = ?4, updated_unix = ?5 "
         "WHERE job_id = ?1");
  s.Bind(1, job_id)
      .Bind(2, static_cast<int64_t>(round))
      .Bind(3, current_best)
      .Bind(4, elapsed_seconds)
      .Bind(5, NowUnix());
  RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  return absl::OkStatus();
}

absl::Status JobStore::SetReport(const std::string& job_id, const Report& report) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  std::string blob;
  if (!report.SerializeToString(&blob)) {
    return absl::InvalidArgumentError("job store: cannot serialize the report");
  }
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "UPDATE jobs SET report = ?2, updated_unix = ?3 WHERE job_id = ?1");
  s.Bind(1, job_id).BindBlob(2, blob).Bind(3, NowUnix());
  RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  return absl::OkStatus();
}

absl::Status JobStore::StoreResult(const std::string& job_id, const std::string& csv) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(RequireJob(db_, job_id));
  }
  // The file is written without holding the lock (fsync may be slow); temp names are unique.
  const std::string dir = data_dir_ + "/results";
  RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(dir, "/", job_id, ".csv"), csv,
                                            {.mode = base::kPrivateFileMode}));
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "UPDATE jobs SET has_result = 1, updated_unix = ?2 WHERE job_id = ?1");
  s.Bind(1, job_id).Bind(2, NowUnix());
  return s.Run();
}

absl::Status JobStore::StoreResultStreamed(
    const std::string& job_id, const std::function<absl::Status(const ResultWriter&)>& produce) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(RequireJob(db_, job_id));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<base::AtomicFileWriter> file,
      base::AtomicFileWriter::Open(absl::StrCat(data_dir_, "/results/", job_id, ".csv"),
                                   {.mode = base::kPrivateFileMode}));
  RETURN_IF_ERROR(produce([&file](std::string_view bytes) { return file->Write(bytes); }));
  RETURN_IF_ERROR(file->Commit());
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "UPDATE jobs SET has_result = 1, updated_unix = ?2 WHERE job_id = ?1");
  s.Bind(1, job_id).Bind(2, NowUnix());
  return s.Run();
}

absl::StatusOr<bool> JobStore::HasResult(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  struct stat st;
  const std::string path = absl::StrCat(data_dir_, "/results/", job_id, ".csv");
  // A regular file only: anything else (a symbolic link put there) is not a stored result.
  if (::lstat(path.c_str(), &st) == 0) return S_ISREG(st.st_mode);
  if (errno == ENOENT) return false;
  return base::ErrnoStatus(errno, "cannot look at the result file", path);
}

absl::StatusOr<std::string> JobStore::LoadResult(const std::string& job_id) const {
  std::string csv;
  RETURN_IF_ERROR(StreamResult(job_id, size_t{1} << 20, [&csv](std::string_view piece) {
    csv.append(piece);
    return absl::OkStatus();
  }));
  return csv;
}

absl::Status JobStore::StreamResult(const std::string& job_id, size_t piece_bytes,
                                    const ResultWriter& sink) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(RequireJob(db_, job_id));
  }
  const std::string path = absl::StrCat(data_dir_, "/results/", job_id, ".csv");
  absl::Status status = base::ReadFileInPieces(path, piece_bytes, /*follow_symlinks=*/false, sink);
  if (absl::IsNotFound(status)) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no result at the leader"));
  }
  return status;
}

absl::StatusOr<JobInfo> JobStore::Get(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT " FEDANON_JOB_COLUMNS " FROM jobs WHERE job_id = ?1");
  s.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  return RowToJobInfo(s);
}

absl::StatusOr<SubmitJobRequest> JobStore::Request(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT request FROM jobs WHERE job_id = ?1");
  s.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  SubmitJobRequest request;
  if (!request.ParseFromString(s.Blob(0))) {
    return absl::DataLossError(absl::StrCat("job store: corrupt request of ", job_id));
  }
  return request;
}

absl::StatusOr<std::vector<JobInfo>> JobStore::List() const {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT " FEDANON_JOB_COLUMNS " FROM jobs ORDER BY seq DESC");
  std::vector<JobInfo> jobs;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobInfo info, RowToJobInfo(s));
    jobs.push_back(std::move(info));
  }
  return jobs;
}

absl::Status JobStore::Audit(const std::string& job_id, const std::string& actor,
                             const std::string& action, const std::string& detail) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  if (actor.empty() || action.empty()) {
    return absl::InvalidArgumentError("job store: audit entries need an actor and an action");
  }
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  RETURN_IF_ERROR(RequireJob(db_, job_id));
  RETURN_IF_ERROR(InsertAudit(db_, job_id, NowUnix(), actor, action, detail));
  return txn.Commit();
}

absl::StatusOr<std::vector<AuditEntry>> JobStore::AuditTrail(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireJob(db_, job_id));
  Stmt s(db_, "SELECT unix_time, actor, action, detail FROM audit WHERE job_id = ?1 ORDER BY id");
  s.Bind(1, job_id);
  std::vector<AuditEntry> entries;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    entries.push_back({s.Int(0), s.Text(1), s.Text(2), s.Text(3)});
  }
  return entries;
}

absl::StatusOr<int> JobStore::RecoverAfterRestart() {
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  std::vector<std::string> in_flight;
  {
    Stmt s(db_, "SELECT job_id FROM jobs WHERE state IN (?1, ?2, ?3) ORDER BY seq");
    s.Bind(1, static_cast<int64_t>(fedanon::v1::JOB_STATE_SUBMITTED))
        .Bind(2, static_cast<int64_t>(fedanon::v1::JOB_STATE_VALIDATING))
        .Bind(3, static_cast<int64_t>(fedanon::v1::JOB_STATE_RUNNING));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      in_flight.push_back(s.Text(0));
    }
  }
  const int64_t now = NowUnix();
  for (const std::string& job_id : in_flight) {
    RETURN_IF_ERROR(
        WriteState(db_, job_id, fedanon::v1::JOB_STATE_FAILED, kRestartReason, "leader", now));
  }
  RETURN_IF_ERROR(txn.Commit());
  return static_cast<int>(in_flight.size());
}

absl::Status JobStore::RecordCallRequest(const std::string& job_id, uint64_t index,
                                         const std::string& digest, const std::string& masks) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  RETURN_IF_ERROR(RequireJob(db_, job_id));
  {
    Stmt old(db_, "SELECT digest, masks, reply FROM calls WHERE job_id = ?1 AND call_index = ?2");
    old.Bind(1, job_id).Bind(2, static_cast<int64_t>(index));
    ASSIGN_OR_RETURN(bool row, old.Step());
    if (row) {
      // A request is recorded once: a second, different one would give the parties two requests
      // under one key (one request, one answer).
      if (old.Blob(0) != digest || old.Blob(1) != masks || !old.IsNull(2)) {
        return absl::FailedPreconditionError(absl::StrCat("job store: call ", index, " of ", job_id,
                                                          " is recorded with another request"));
      }
      return txn.Commit();
    }
  }
  Stmt s(db_, "INSERT INTO calls (job_id, call_index, digest, masks) VALUES (?1, ?2, ?3, ?4)");
  s.Bind(1, job_id).Bind(2, static_cast<int64_t>(index)).BindBlob(3, digest).BindBlob(4, masks);
  RETURN_IF_ERROR(s.Run());
  return txn.Commit();
}

void SetCallReplyFileBytesForTesting(size_t bytes) {
  reply_file_bytes.store(bytes == 0 ? kCallReplyFileBytes : bytes);
}

absl::StatusOr<JobStore::StoredReply> JobStore::StoreReply(const std::string& job_id,
                                                           uint64_t index,
                                                           const std::string& reply) const {
  if (reply.size() < reply_file_bytes.load()) return StoredReply{reply, ""};
  std::array<unsigned char, 8> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return absl::InternalError("job store: RAND_bytes failed");
  }
  // A new name for every write: a refused second record of the same call leaves the first one's
  // file alone.
  const std::string file =
      absl::StrCat(job_id, "-", index, "-",
                   absl::BytesToHexString(
                       std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())),
                   ".reply");
  base::AtomicFileOptions options;
  options.replace_existing = false;
  RETURN_IF_ERROR(
      base::WriteFileAtomically(absl::StrCat(data_dir_, "/calls/", file), reply, options));
  return StoredReply{crypto::Sha256(reply), file};
}

void JobStore::RemoveReplyFile(const std::string& file) const {
  const std::string path = absl::StrCat(data_dir_, "/calls/", file);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("job store: cannot remove {}: {}", path, std::strerror(errno));
  }
}

absl::Status JobStore::RecordCallReply(const std::string& job_id, uint64_t index,
                                       const std::string& reply) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  ASSIGN_OR_RETURN(const StoredReply stored, StoreReply(job_id, index, reply));
  absl::MutexLock lock(&mu_);
  Stmt s(db_,
         "UPDATE calls SET reply = ?3, reply_file = ?4, masks = NULL WHERE job_id = ?1 AND "
         "call_index = ?2 AND reply IS NULL");
  s.Bind(1, job_id).Bind(2, static_cast<int64_t>(index)).BindBlob(3, stored.column);
  if (!stored.file.empty()) s.Bind(4, stored.file);  // unbound: NULL
  absl::Status st = s.Run();
  if (st.ok() && sqlite3_changes(db_) == 0) {
    st = absl::FailedPreconditionError(absl::StrCat("job store: call ", index, " of ", job_id,
                                                    " has no open request to complete"));
  }
  if (!st.ok() && !stored.file.empty()) RemoveReplyFile(stored.file);
  return st;
}

absl::Status JobStore::RecordCompleteCall(const std::string& job_id, uint64_t index,
                                          const std::string& digest, const std::string& reply) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(RequireJob(db_, job_id));
  }
  ASSIGN_OR_RETURN(const StoredReply stored, StoreReply(job_id, index, reply));
  absl::MutexLock lock(&mu_);
  // One row, complete at once (the reply is what the leader received; no masks).
  Stmt s(db_,
         "INSERT INTO calls (job_id, call_index, digest, masks, reply, reply_file) VALUES (?1, ?2, "
         "?3, NULL, ?4, ?5)");
  s.Bind(1, job_id)
      .Bind(2, static_cast<int64_t>(index))
      .BindBlob(3, digest)
      .BindBlob(4, stored.column);
  if (!stored.file.empty()) s.Bind(5, stored.file);  // unbound: NULL
  absl::Status st = s.Run();
  if (!st.ok() && !stored.file.empty()) RemoveReplyFile(stored.file);
  return st;
}

absl::StatusOr<std::vector<RecordedCall>> JobStore::Calls(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireJob(db_, job_id));
  Stmt s(db_,
         "SELECT call_index, digest, masks, reply, reply_file FROM calls WHERE job_id = ?1 "
         "ORDER BY call_index");
  s.Bind(1, job_id);
  std::vector<RecordedCall> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    RecordedCall c;
    c.index = static_cast<uint64_t>(s.Int(0));
    c.digest = s.Blob(1);
    c.masks = s.Blob(2);
    c.done = !s.IsNull(3);
    c.reply = s.Blob(3);
    if (c.index != out.size()) {
      return absl::DataLossError(
          absl::StrCat("job store: the calls of ", job_id, " are not numbered 0, 1, ..."));
    }
    if (!s.IsNull(4)) {
      const std::string path = absl::StrCat(data_dir_, "/calls/", s.Text(4));
      absl::StatusOr<std::string> bytes = base::ReadFile(path, /*follow_symlinks=*/false);
      if (!bytes.ok()) {
        return absl::DataLossError(absl::StrCat("job store: the reply of call ", c.index, " of ",
                                                job_id,
                                                " cannot be read: ", bytes.status().message()));
      }
      if (crypto::Sha256(*bytes) != c.reply) {
        return absl::DataLossError(absl::StrCat("job store: the reply of call ", c.index, " of ",
                                                job_id, " (", path,
                                                ") is not the one recorded: its digest differs"));
      }
      c.reply = *std::move(bytes);
    }
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status JobStore::DeleteCalls(const std::string& job_id) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  {
    absl::MutexLock lock(&mu_);
    Stmt s(db_, "DELETE FROM calls WHERE job_id = ?1");
    s.Bind(1, job_id);
    RETURN_IF_ERROR(s.Run());
  }
  // The job's reply files: those its rows named and any a crash left without a row.
  const std::string dir = data_dir_ + "/calls";
  const std::string prefix = job_id + "-";
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str()); d != nullptr) {
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name(e->d_name);
      if (name.substr(0, prefix.size()) == prefix) files.emplace_back(name);
    }
    ::closedir(d);
  }
  for (const std::string& file : files) RemoveReplyFile(file);
  return absl::OkStatus();
}

absl::Status JobStore::RecordUntold(const std::vector<UntoldEnd>& ends) {
  for (const UntoldEnd& end : ends) RETURN_IF_ERROR(ValidateJobId(end.job_id));
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  for (const UntoldEnd& end : ends) {
    RETURN_IF_ERROR(RequireJob(db_, end.job_id));
    Stmt s(db_,
           "INSERT OR REPLACE INTO untold (job_id, party, success, reason) "
           "VALUES (?1, ?2, ?3, ?4)");
    s.Bind(1, end.job_id).Bind(2, end.party);
    s.Bind(3, static_cast<int64_t>(end.success ? 1 : 0)).Bind(4, end.reason);
    RETURN_IF_ERROR(s.Run());
  }
  return txn.Commit();
}

absl::Status JobStore::ForgetUntold(const std::string& job_id, const std::string& party) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "DELETE FROM untold WHERE job_id = ?1 AND party = ?2");
  s.Bind(1, job_id).Bind(2, party);
  return s.Run();
}

absl::StatusOr<std::vector<UntoldEnd>> JobStore::Untold() const {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT job_id, party, success, reason FROM untold ORDER BY seq");
  std::vector<UntoldEnd> out;
  while (true) {
    ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    out.push_back(UntoldEnd{s.Text(0), s.Text(1), s.Int(2) != 0, s.Text(3)});
  }
  return out;
}

absl::StatusOr<int> JobStore::RecordResume(const std::string& job_id, uint32_t round) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  RETURN_IF_ERROR(RequireJob(db_, job_id));
  {
    Stmt s(db_, "UPDATE jobs SET resumes = resumes + 1, updated_unix = ?2 WHERE job_id = ?1");
    s.Bind(1, job_id).Bind(2, NowUnix());
    RETURN_IF_ERROR(s.Run());
  }
  int resumes = 0;
  {
    Stmt s(db_, "SELECT resumes FROM jobs WHERE job_id = ?1");
    s.Bind(1, job_id);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) resumes = static_cast<int>(s.Int(0));
  }
  RETURN_IF_ERROR(InsertAudit(db_, job_id, NowUnix(), "leader", "resumed",
                              absl::StrCat("resume ", resumes, " from round ", round)));
  RETURN_IF_ERROR(txn.Commit());
  return resumes;
}

absl::StatusOr<int> JobStore::Resumes(const std::string& job_id) const {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT resumes FROM jobs WHERE job_id = ?1");
  s.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("unknown job ", job_id));
  return static_cast<int>(s.Int(0));
}

absl::StatusOr<Recovery> JobStore::RecoverForResume() {
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  struct Row {
    std::string job_id;
    JobState state;
    bool parsed;
    bool finished;  // its report is stored: it was telling its parties that it is done
  };
  std::vector<Row> in_flight;
  {
    Stmt s(db_,
           "SELECT job_id, state, request, report IS NOT NULL FROM jobs WHERE state IN (?1, ?2, "
           "?3) ORDER BY seq");
    s.Bind(1, static_cast<int64_t>(fedanon::v1::JOB_STATE_SUBMITTED))
        .Bind(2, static_cast<int64_t>(fedanon::v1::JOB_STATE_VALIDATING))
        .Bind(3, static_cast<int64_t>(fedanon::v1::JOB_STATE_RUNNING));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      SubmitJobRequest request;
      const bool parsed = request.ParseFromString(s.Blob(2));
      in_flight.push_back({s.Text(0), static_cast<JobState>(s.Int(1)), parsed, s.Int(3) != 0});
    }
  }
  const int64_t now = NowUnix();
  Recovery out;
  for (const Row& r : in_flight) {
    if (r.state == fedanon::v1::JOB_STATE_SUBMITTED) {
      RETURN_IF_ERROR(
          InsertAudit(db_, r.job_id, now, "leader", "requeued", "leader restarted; queued again"));
      out.requeue.push_back(r.job_id);
    } else if (r.state == fedanon::v1::JOB_STATE_RUNNING && r.finished) {
      RETURN_IF_ERROR(WriteState(db_, r.job_id, fedanon::v1::JOB_STATE_DONE, "", "leader", now));
      out.unended.push_back(r.job_id);
    } else if (r.state == fedanon::v1::JOB_STATE_RUNNING && r.parsed) {
      RETURN_IF_ERROR(InsertAudit(db_, r.job_id, now, "leader", "resuming",
                                  "leader restarted; resuming once its parties reconnect"));
      out.resume.push_back(r.job_id);
    } else {
      const std::string reason =
          r.state == fedanon::v1::JOB_STATE_VALIDATING
              ? "leader restarted while validating the job: it cannot resume (the parties may "
                "have prepared its run); starting over is a new run an admin authorizes"
              : "leader restarted: the job's stored request does not parse, so it cannot resume; "
                "starting over is a new run an admin authorizes";
      RETURN_IF_ERROR(
          WriteState(db_, r.job_id, fedanon::v1::JOB_STATE_FAILED, reason, "leader", now));
      out.failed.push_back(r.job_id);
    }
  }
  {
    Stmt s(db_,
           "SELECT DISTINCT c.job_id FROM calls c JOIN jobs j ON j.job_id = c.job_id "
           "WHERE j.state IN (?1, ?2, ?3) ORDER BY c.job_id");
    s.Bind(1, static_cast<int64_t>(fedanon::v1::JOB_STATE_DONE))
        .Bind(2, static_cast<int64_t>(fedanon::v1::JOB_STATE_FAILED))
        .Bind(3, static_cast<int64_t>(fedanon::v1::JOB_STATE_CANCELLED));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      if (std::find(out.unended.begin(), out.unended.end(), s.Text(0)) == out.unended.end()) {
        out.unended.push_back(s.Text(0));
      }
    }
  }
  RETURN_IF_ERROR(txn.Commit());
  return out;
}

// --- For metrics and retention ---------------------------------------------------------------

absl::StatusOr<std::map<JobState, int64_t>> JobStore::CountByState() const {
  std::map<JobState, int64_t> counts;
  for (int s = fedanon::v1::JOB_STATE_SUBMITTED; s <= fedanon::v1::JOB_STATE_CANCELLED; ++s) {
    if (fedanon::v1::JobState_IsValid(s)) counts[static_cast<JobState>(s)] = 0;
  }
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  for (;;) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    counts[static_cast<JobState>(s.Int(0))] += s.Int(1);
  }
  return counts;
}

absl::StatusOr<std::vector<FinishedJob>> JobStore::FinishedBefore(int64_t cutoff_unix,
                                                                  int limit) const {
  absl::MutexLock lock(&mu_);
  Stmt s(db_,
         "SELECT job_id, state, updated_unix, has_result, report IS NOT NULL FROM jobs "
         "WHERE state IN (?1, ?2, ?3) AND updated_unix <= ?4 AND NOT EXISTS (SELECT 1 FROM audit "
         "WHERE audit.job_id = jobs.job_id AND audit.action = 'retention:deleted') "
         "ORDER BY updated_unix, seq LIMIT ?5");
  s.Bind(1, static_cast<int64_t>(fedanon::v1::JOB_STATE_DONE))
      .Bind(2, static_cast<int64_t>(fedanon::v1::JOB_STATE_FAILED))
      .Bind(3, static_cast<int64_t>(fedanon::v1::JOB_STATE_CANCELLED))
      .Bind(4, cutoff_unix)
      .Bind(5, static_cast<int64_t>(limit));
  std::vector<FinishedJob> jobs;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    jobs.push_back(
        {s.Text(0), static_cast<JobState>(s.Int(1)), s.Int(2), s.Int(3) != 0, s.Int(4) != 0});
  }
  return jobs;
}

absl::Status JobStore::ForgetOutputs(const std::string& job_id, const std::string& detail) {
  RETURN_IF_ERROR(ValidateJobId(job_id));
  absl::MutexLock lock(&mu_);
  WriteTxn txn(db_);
  RETURN_IF_ERROR(txn.Begin());
  ASSIGN_OR_RETURN(const JobState state, CurrentState(db_, job_id));
  if (!IsFinal(state)) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " is ", StateName(state),
                                                      ": retention touches only finished jobs"));
  }
  Stmt s(db_, "UPDATE jobs SET report = NULL, has_result = 0 WHERE job_id = ?1");
  s.Bind(1, job_id);
  RETURN_IF_ERROR(s.Run());
  RETURN_IF_ERROR(InsertAudit(db_, job_id, NowUnix(), "leader", "retention:deleted", detail));
  return txn.Commit();
}

}  // namespace fedanon::leader
