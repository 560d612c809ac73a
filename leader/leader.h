// The leader's job service: accepts jobs from admins, queues them, runs each on a worker thread
// (its checks: job_request_check.h; its Prepare: party_preparation.h; then the protocol's driver:
// horizontal_driver.h or vertical_driver.h, lent a JobHost, job_run.h), records everything in the
// job store and keeps the integrated table when it is the recipient. No gRPC types: server/
// adapts the Admin service and the party streams onto this class.
//
// Job lifecycle: submitted -> validating (spec checks, party-count rule of mohammed2010 §5.5,
// every party connected, PrepareJob digests equal) -> running (rounds) -> done | failed |
// cancelled. Up to max_concurrent_jobs jobs run at once, each on its own worker thread with its
// own cancellation flag; further submissions wait in a FIFO queue of at most max_queued_jobs
// (beyond it Submit answers ResourceExhausted). A party that stops answering fails the job within
// the round timeout, naming the party; no partial result is ever delivered. Thread-safe.
//
// Durable jobs (docs/operations.md "Durable jobs"): a job records its calls to the parties in the
// job store (leader/call_recorder.h: a horizontal job's secure sums, request digest before it is
// sent and the sum once complete; a vertical job's replies before they are used). After a
// restart, Create() queues the jobs that were running again; each resumes once its parties are
// connected, rebuilding its state by replaying the recorded calls without the network and
// re-sending the interrupted round's requests byte-identical; the parties answer repeated
// requests with their stored replies. A party whose connection drops mid-job is waited for
// (resume_timeout) and asked the same request again. Jobs that cannot resume (validating) fail
// with the reason and their parties are told (EndJob success=false).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/table/dataset.h"
#include "common/wire/party_channel.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/job_run.h"
#include "leader/job_store.h"
#include "leader/leader_observer.h"
#include "leader/leader_options.h"
#include "leader/payload_relay.h"

namespace fedanon::leader {

// What the job queue holds right now (for metrics and logs).
struct QueueStats {
  int running = 0;  // jobs on a worker (validating or running)
  int queued = 0;   // jobs waiting for a worker
  int max_concurrent_jobs = 0;
  int max_queued_jobs = 0;
};

class Leader {
 public:
  // `channel` is not owned and must outlive the leader. Recovers the job store after a restart.
  static absl::StatusOr<std::unique_ptr<Leader>> Create(LeaderOptions options,
                                                        wire::PartyChannel* channel);
  // Stops the workers; jobs they were running stay in the job store as they were (running
  // horizontal jobs resume at the next start), unless an admin had cancelled them.
  ~Leader();

  // Admin operations; `admin` is the identity read from the caller's certificate. Submit refuses
  // with ResourceExhausted "job queue is full (N queued, limit M)" when max_queued_jobs jobs wait.
  // JobInfo of a queued job carries its queue_position (1 = next to start).
  absl::StatusOr<fedanon::v1::JobInfo> Submit(const fedanon::v1::SubmitJobRequest& request,
                                              const std::string& admin) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) const;
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() const;
  absl::StatusOr<fedanon::v1::JobInfo> Cancel(const std::string& job_id, const std::string& admin,
                                              const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until the job's state, round or failure differs from `last` (or `timeout` passes)
  // and returns its current info; for streaming WatchJob.
  absl::StatusOr<fedanon::v1::JobInfo> WaitForChange(const std::string& job_id,
                                                     const fedanon::v1::JobInfo& last,
                                                     absl::Duration timeout) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The integrated table (CSV) of a done job whose recipient is the leader.
  absl::StatusOr<std::string> Result(const std::string& job_id) const;
  // The same handed to `sink` in pieces of at most `piece_bytes`: the leader holds one piece at a
  // time whatever the table's size (the admin API's GetResult). Errors before the first piece as
  // Result's; an error of `sink` stops it.
  absl::Status StreamResult(const std::string& job_id, size_t piece_bytes,
                            const std::function<absl::Status(std::string_view)>& sink) const;
  // The job's view log (leader/view_log.h): JSON lines, "" when nothing was decoded yet;
  // NotFound for an unknown job.
  absl::StatusOr<std::string> ViewLogText(const std::string& job_id) const;
  // The same handed to `sink` in pieces of at most `piece_bytes` (the admin API's GetViewLog).
  absl::Status StreamViewLog(const std::string& job_id, size_t piece_bytes,
                             const std::function<absl::Status(std::string_view)>& sink) const;
  std::vector<wire::ConnectedParty> Parties() const { return channel_->Parties(); }
  QueueStats Queue() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the job store answers (JobStore::CheckAvailable): cheap, for health checks.
  absl::Status CheckStore() const { return store_->CheckAvailable(); }
  // The job store, for the daemon's metrics (JobStore::CountByState) and retention sweeps.
  JobStore* store() const { return store_.get(); }

 private:
  Leader(LeaderOptions options, wire::PartyChannel* channel, std::unique_ptr<JobStore> store);
  // Cancellation of one running job (set by Cancel or the destructor, read between messages).
  struct RunningJob {
    bool cancel = false;
    std::string cancel_reason;
    // The parties the job waits for to connect, with how many waits are for each (calls to a
    // party run in parallel): JobInfo.waiting_for_parties.
    std::map<std::string, int> waiting_for;
  };
  struct QueuedJob {
    std::string job_id;
    std::vector<std::string> parties;  // its ring: told when a resumed job is cancelled here
    bool resume = false;               // a running job recovered after a restart
  };
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Records how a job ended (done, cancelled with `cancel_reason`, or failed with `status`).
  void RecordOutcome(const std::string& job_id, const absl::Status& status,
                     const std::string& cancel_reason);
  // One job (`run->job_id`) from validation to its end (the worker records the outcome); fills
  // in `run` (its ring, timeout) as it goes. Its calls to the parties are counted and logged
  // (leader/call_counter.h); RunJobOn runs it on `host`, the leader's own with that counter.
  absl::Status RunJob(JobRun* run) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RunJobOn(const JobHost& host, JobRun* run) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckCancelled(const std::string& job_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Sets what only the running leader knows: queue_position from the queue (0 when the job is
  // not queued) and waiting_for_parties of a running job.
  void AddLiveState(fedanon::v1::JobInfo* info) const ABSL_LOCKS_EXCLUDED(mu_);
  // A running job waits (or no longer waits) for `party` to connect.
  void SetWaiting(const std::string& job_id, const std::string& party, bool waiting)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Parties of a job that ended while they were away (JobHost::tell_later): recorded in the job
  // store (schema v4) and told by the teller thread as soon as each is connected, however long
  // that takes and across restarts of the leader, so that each deletes the job's durable state.
  // The error of recording them (they are told by this leader all the same).
  absl::Status TellLater(const std::string& job_id, const std::vector<std::string>& parties,
                         bool success, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // The teller thread: once a second (or on a change), tells the connected parties of untold_,
  // and records the outcomes of unrecorded_ that the job store now takes.
  void TellerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Records a job's final state; where the store cannot (a full disk), keeps it in unrecorded_.
  void RecordFinalState(const std::string& job_id, fedanon::v1::JobState state,
                        const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // Tries again to record every state of unrecorded_ (the teller thread).
  void RecordUnrecordedStates() ABSL_LOCKS_EXCLUDED(mu_);
  void Notify() const;

  LeaderOptions options_;
  LeaderObserver* observer_;  // options_.observer or NoLeaderObserver()
  wire::PartyChannel* channel_;
  std::unique_ptr<JobStore> store_;
  JobHost host_;  // what the drivers of the jobs are lent (job_run.h)

  mutable absl::Mutex mu_;
  // Signalled whenever a job's state may have changed (queue, store, cancellation, shutdown);
  // waiters re-check what they wait for, most with a timeout.
  mutable absl::CondVar changed_;
  // Counts the Notify calls, so that a waiter that read the store before a change and waits after
  // it does not miss that change's signal (WaitForChange).
  mutable uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<QueuedJob> queue_ ABSL_GUARDED_BY(mu_);  // waiting jobs, oldest first
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;  // queue places taken by Submits still storing the job
  std::map<std::string, RunningJob> running_ ABSL_GUARDED_BY(mu_);  // by job id
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  std::vector<UntoldEnd> untold_ ABSL_GUARDED_BY(mu_);  // as in the job store, oldest first
  std::thread teller_;                                  // TellerLoop
  // Final states the job store refused to record (e.g. its disk was full): admins see them from
  // here (AddLiveState) until the teller thread has recorded them.
  struct UnrecordedState {
    fedanon::v1::JobState state;
    std::string reason;
  };
  std::map<std::string, UnrecordedState> unrecorded_ ABSL_GUARDED_BY(mu_);  // by job id
};

}  // namespace fedanon::leader
