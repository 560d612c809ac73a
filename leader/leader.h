// The leader role: accepts jobs from admins, validates them with the parties, drives the
// federated protocol round by round through a PartyChannel, records everything in the job store
// and keeps the integrated table when it is the recipient. No gRPC types: server/ adapts the
// Admin service and the party streams onto this class.
//
// Job lifecycle: submitted -> validating (spec checks, party-count rule of mohammed2010 §5.5,
// every party connected, PrepareJob digests equal) -> running (rounds) -> done | failed |
// cancelled. Up to max_concurrent_jobs jobs run at once, each on its own worker thread with its
// own cancellation flag; further submissions wait in a FIFO queue of at most max_queued_jobs
// (beyond it Submit answers ResourceExhausted). A party that stops answering fails the job within
// the round timeout, naming the party; no partial result is ever delivered. Thread-safe.
//
// Durable jobs (docs/operations.md "Durable jobs"): a horizontal job records each secure-sum
// collect in the job store (request digest and masks before it is sent, the sum once complete).
// After a restart, Create() queues the jobs that were running again; each resumes once its
// parties are connected, rebuilding its state by replaying the recorded collects without the
// network and re-sending the interrupted round's requests byte-identical; the parties answer
// repeated requests with their stored replies. A party whose connection drops mid-job is waited
// for (resume_timeout) and asked the same request again. Jobs that cannot resume (validating,
// vertical) fail with the reason and their parties are told (EndJob success=false).
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
#include "leader/job_store.h"
#include "leader/leader_observer.h"
#include "leader/payload_relay.h"

namespace fedanon::leader {

class SecureSumCountSource;

struct LeaderOptions {
  std::string name = "leader";
  std::string data_dir;  // job store and results
  absl::Duration round_timeout = absl::Seconds(60);
  std::string ca_pem;         // the federation CA (verifies seal certs)
  std::string seal_cert_pem;  // the leader's sealing certificate
  std::string seal_key_pem;   // and key (opens the union when recipient)
  // Jobs that run at once (1..kMaxConcurrentJobsLimit) and jobs that may wait for a free worker
  // (0..kMaxQueuedJobsLimit); Create refuses values outside those ranges.
  int max_concurrent_jobs = 4;
  int max_queued_jobs = 64;
  // Durable jobs (docs/operations.md): how long a running horizontal job waits for a party to
  // (re)connect — after the leader restarted, or when a party's connection drops mid-job — before
  // it fails naming the party (leader.yaml `resume_timeout_seconds`).
  absl::Duration resume_timeout = absl::Seconds(120);
  // Told about rounds, phases and job outcomes (not owned; null: nobody). Must outlive the leader.
  LeaderObserver* observer = nullptr;
  // The message limit of the transport (server/transport.h), announced to the parties in
  // PrepareJob: per-record payloads travel in chunks under it (protocol 1.2,
  // common/wire/payload_chunks.h). Tests lower it to make payloads span several chunks.
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // Vertical ID matching in batches of at most this many ids (docs/crypto.md "ID matching"),
  // fewer if a batch would not fit half the message limit; 0: kDefaultIdBatchIds. Tests set it
  // tiny to run many batches.
  static constexpr uint32_t kDefaultIdBatchIds = 65536;
  uint32_t id_batch_ids = kDefaultIdBatchIds;
  // Sealing certificates of the parties, by name (from their bundles or announced on connect).
  // Parties present their own in PrepareResult too; see party/party_agent.h.
};

inline constexpr int kMaxConcurrentJobsLimit = 64;
inline constexpr int kMaxQueuedJobsLimit = 100'000;

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
                                                        common::PartyChannel* channel);
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
  // The job's view log (leader/view_log.h): JSON lines, "" when nothing was decoded yet;
  // NotFound for an unknown job.
  absl::StatusOr<std::string> ViewLogText(const std::string& job_id) const;
  std::vector<common::ConnectedParty> Parties() const { return channel_->Parties(); }
  QueueStats Queue() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the job store answers (JobStore::CheckAvailable): cheap, for health checks.
  absl::Status CheckStore() const { return store_->CheckAvailable(); }
  // The job store, for the daemon's metrics (JobStore::CountByState) and retention sweeps.
  JobStore* store() const { return store_.get(); }

 private:
  struct JobRun;
  Leader(LeaderOptions options, common::PartyChannel* channel, std::unique_ptr<JobStore> store);
  // Cancellation of one running job (set by Cancel or the destructor, read between messages).
  struct RunningJob {
    bool cancel = false;
    std::string cancel_reason;
    std::vector<std::string> parties;
  };
  struct QueuedJob {
    std::string job_id;
    std::vector<std::string> parties;
    bool resume = false;  // a running job recovered after a restart
  };
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Records how a job ended (done, cancelled with `cancel_reason`, or failed with `status`).
  void RecordOutcome(const std::string& job_id, const absl::Status& status,
                     const std::string& cancel_reason);
  // One job (`job->job_id`) from validation to its end (the worker records the outcome); fills
  // in `job` (its ring, timeout) as it goes.
  absl::Status RunJob(JobRun* job) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckCancelled(const std::string& job_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Sets queue_position from the queue (0 when the job is not waiting).
  void AddQueuePosition(fedanon::v1::JobInfo* info) const ABSL_LOCKS_EXCLUDED(mu_);
  // The PrepareJob every party of the ring receives: the spec and the participants with their
  // sealing certificates (Unavailable when a party of the ring is not connected).
  absl::StatusOr<fedanon::v1::PrepareJob> MakePrepare(const JobRun& job) const;
  // Sends PrepareJob to every party and checks that each loaded the submitted job.
  absl::Status PrepareParties(const JobRun& job, const std::string& expected_digest)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A horizontal job's rounds (secure sums) and integration.
  absl::Status RunHorizontal(const JobRun& job, const common::Dataset& schema)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The secure set union of the parties' sealed rows, opened by (or delivered to) the recipient.
  absl::Status RunSecureUnion(const JobRun& job, uint32_t round, common::PartyChannel* channel)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status StoreUnionAtLeader(const JobRun& job, uint32_t round,
                                  const std::vector<std::string>& header,
                                  const CarriedPayload& carried);
  absl::Status RunVertical(const JobRun& job) ABSL_LOCKS_EXCLUDED(mu_);
  // Tells every party of the ring that the job ended (best effort, failures logged); `success`
  // false with the failure or cancellation `reason` for a job that did not end done, so that
  // each party closes its run (audit `job-end`, run ledger: a run that released nothing is
  // freed).
  // Returns the parties that did not acknowledge (e.g. not connected).
  std::vector<std::string> EndJobAtParties(const JobRun& job, bool success = true,
                                           const std::string& reason = "done");
  // A job that ended failed or cancelled while some of its parties were away (e.g. cancelled
  // while it waited for them to come back): tells each of `parties` once it connects again, at
  // most resume_timeout later, so that it deletes the job's durable state. On its own thread.
  void TellWhenBack(const std::string& job_id, std::vector<std::string> parties,
                    const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // After a restart: tells the parties of each job that could not resume that it ended
  // (EndJob success=false with the job's failure reason), waiting for each party to connect at
  // most resume_timeout. Runs on its own thread.
  void EndRecoveredJobs(std::vector<std::string> job_ids) ABSL_LOCKS_EXCLUDED(mu_);
  // Stores the released table unless the job has one already (a resumed job releases once).
  absl::Status StoreResultOnce(const std::string& job_id, const std::string& csv);
  // The same for a table written in pieces by `produce` (never held whole in memory).
  absl::Status StoreResultOnce(
      const std::string& job_id,
      const std::function<absl::Status(const JobStore::ResultWriter&)>& produce);
  // The report and final progress of a horizontal job; then EndJobAtParties.
  // `fill_result` fills the engine's part (global or local recoding).
  absl::Status FinishJob(const JobRun& job, uint64_t total_records,
                         const std::function<void(fedanon::v1::Report*)>& fill_result,
                         const SecureSumCountSource& source, uint32_t round, double rounds_start,
                         double union_start, const std::string& final_check);
  void Notify() const;

  LeaderOptions options_;
  LeaderObserver* observer_;  // options_.observer or NoLeaderObserver()
  common::PartyChannel* channel_;
  std::unique_ptr<JobStore> store_;

  mutable absl::Mutex mu_;
  // Signalled whenever a job's state may have changed (queue, store, cancellation, shutdown);
  // waiters re-check what they wait for, most with a timeout.
  mutable absl::CondVar changed_;
  // The first queued job that may start now: every job may, except that a party speaking
  // protocol 1.0 (common/wire/protocol_version.h) takes part in one job at a time.
  std::deque<QueuedJob>::iterator NextStartable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::deque<QueuedJob> queue_ ABSL_GUARDED_BY(mu_);  // waiting jobs, oldest first
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;  // queue places taken by Submits still storing the job
  std::map<std::string, RunningJob> running_ ABSL_GUARDED_BY(mu_);  // by job id
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  std::thread recovery_;                                   // EndRecoveredJobs
  std::vector<std::thread> tellers_ ABSL_GUARDED_BY(mu_);  // TellWhenBack
};

}  // namespace fedanon::leader
