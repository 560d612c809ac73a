// The party's durable record of the job runs it has taken part in (one file, 0600, rewritten
// atomically under a mutex): each admin-chosen run id with the leader's job id, the table it
// released from and whether the run is prepared, released, done or failed. It answers the two
// questions that must survive a restart: was this run id used already (a job starts over from round
// 0 only under a new admin authorization; a run that has not ended may continue from the party's
// durable job state, party/job_journal.h), and how many releases of a table exist (party policy
// max_releases: every run prepared and not failed counts, reserved at Prepare, freed when the
// job fails before the party answered anything from its data). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace fedanon::party {

class RunLedger {
 public:
  // `path` empty: kept in memory only (tests without an output directory). Otherwise the file is
  // read when it exists (FailedPrecondition when it does not parse) and created on first use.
  static absl::StatusOr<std::unique_ptr<RunLedger>> Open(const std::string& path);

  // Atomically: refuses a run id seen before (PermissionDenied "run id already used (by job
  // ...)") and, with `max_releases`, a table already released that often (PermissionDenied
  // "party policy: table '...' was released N times; the party allows at most M"); otherwise
  // records the run as prepared and writes the file.
  absl::Status Reserve(const std::string& run_id, const std::string& job_id,
                       const std::string& table, std::optional<uint64_t> max_releases)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The party answered the job from its data (a secure-sum hop, union rows, vertical columns):
  // from now on the run counts as a release whatever the leader later says about the job.
  absl::Status MarkReleased(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The job's run ended: a failed run that released nothing no longer counts as a release.
  // Unknown job ids are ignored.
  absl::Status Finish(const std::string& job_id, bool success) ABSL_LOCKS_EXCLUDED(mu_);

  bool Used(const std::string& run_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether run `run_id` was prepared for `job_id` and has not ended (prepared or released): a
  // party that restarted mid-job may go on with that run from its durable state (never a fresh
  // second Prepare of it).
  bool Continuable(const std::string& run_id, const std::string& job_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs of `table` prepared and not failed.
  uint64_t Releases(const std::string& table) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kPrepared, kReleased, kDone, kFailed };
  struct Run {
    std::string job_id;
    std::string table;
    State state = State::kPrepared;
  };
  explicit RunLedger(std::string path) : path_(std::move(path)) {}
  absl::Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Save() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t ReleasesLocked(const std::string& table) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  std::map<std::string, Run> runs_ ABSL_GUARDED_BY(mu_);  // by run id
};

}  // namespace fedanon::party
