// Retention of finished jobs' outputs at the leader (leader.yaml `retention:`, off unless set;
// docs/operations.md, "Retention and data at rest"). A sweep deletes, for every job that reached
// a final state (done, failed, cancelled) at least the retention period ago, what the leader
// holds of it: the integrated table (<data_dir>/results/<job>.csv), the view log
// (<data_dir>/<job>.view.jsonl) and the report in the job record. Each deletion is logged (job
// id, files, age) and audited in the job record ("retention:deleted"); the record itself (state,
// reason, audit trail) stays. Jobs that are queued or running are never touched.
// PeriodicRetention runs a sweep at start and then periodically on its own thread.
//
// SecureLeaderDataDir makes the files the leader keeps at rest private to its service user:
// directories 0700, files 0600 (jobs.db and its WAL files, results, view logs).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "leader/job_store.h"

namespace fedanon::leader {

struct RetentionOptions {
  absl::Duration period = absl::ZeroDuration();                  // must be positive
  std::function<absl::Time()> now = [] { return absl::Now(); };  // a fake clock in tests
  int batch = 1000;                                              // jobs per store query
};

struct RetentionSweepStats {
  int jobs = 0;   // jobs whose outputs were forgotten
  int files = 0;  // files deleted
};

class Retention {
 public:
  // `store` is not owned and must outlive this object.
  Retention(JobStore* store, RetentionOptions options);

  // One sweep (see the header comment). A file that cannot be deleted fails the sweep for that
  // job (logged; retried at the next sweep); the other jobs are still swept.
  absl::StatusOr<RetentionSweepStats> Sweep();

 private:
  JobStore* store_;
  RetentionOptions options_;
};

// Sweeps at construction and every `interval` until destroyed.
class PeriodicRetention {
 public:
  PeriodicRetention(JobStore* store, RetentionOptions options, absl::Duration interval);
  ~PeriodicRetention();
  PeriodicRetention(const PeriodicRetention&) = delete;
  PeriodicRetention& operator=(const PeriodicRetention&) = delete;

  int sweeps() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run();

  Retention retention_;
  const absl::Duration interval_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int sweeps_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

// How often PeriodicRetention sweeps for a retention `period`: a tenth of it, between 1 s and
// one hour.
absl::Duration RetentionSweepInterval(absl::Duration period);

// Directories `data_dir` and `data_dir`/results 0700; jobs.db, jobs.db-wal, jobs.db-shm,
// *.view.jsonl and results/* 0600 when group or others had any access (each change logged as a
// warning). Symbolic links are neither followed nor changed. Returns how many modes it changed.
absl::StatusOr<int> SecureLeaderDataDir(const std::string& data_dir);

}  // namespace fedanon::leader
