#include "leader/leader.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/call_counter.h"
#include "leader/horizontal_driver.h"
#include "leader/job_request_check.h"
#include "leader/party_preparation.h"
#include "leader/rejoining_channel.h"
#include "leader/vertical_driver.h"
#include "leader/view_log.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

// Why the workers stop when the leader is destroyed; jobs stopped for it stay as they are in the
// job store (running ones resume at the next start, like after kill -9).
constexpr char kShuttingDown[] = "leader shutting down";

using fedanon::v1::JobInfo;
using fedanon::v1::JobState;

bool IsFinal(JobState s) {
  return s == fedanon::v1::JOB_STATE_DONE || s == fedanon::v1::JOB_STATE_FAILED ||
         s == fedanon::v1::JOB_STATE_CANCELLED;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Leader>> Leader::Create(LeaderOptions options,
                                                       wire::PartyChannel* channel) {
  if (options.max_concurrent_jobs < 1 || options.max_concurrent_jobs > kMaxConcurrentJobsLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_concurrent_jobs must be in 1..",
                                                   kMaxConcurrentJobsLimit, ", not ",
                                                   options.max_concurrent_jobs));
  }
  if (options.max_queued_jobs < 0 || options.max_queued_jobs > kMaxQueuedJobsLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_queued_jobs must be in 0..", kMaxQueuedJobsLimit, ", not ", options.max_queued_jobs));
  }
  if (options.resume_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("resume_timeout must be positive");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<JobStore> store, JobStore::Open(options.data_dir));
  // Durable jobs: queued jobs stay queued, running horizontal jobs resume, the rest fail with
  // the reason (and their parties are told below).
  ASSIGN_OR_RETURN(Recovery recovery, store->RecoverForResume());
  std::deque<QueuedJob> recovered;
  for (const auto& [ids, resume] :
       {std::pair{&recovery.resume, true}, std::pair{&recovery.requeue, false}}) {
    for (const std::string& id : *ids) {
      ASSIGN_OR_RETURN(const fedanon::v1::SubmitJobRequest request, store->Request(id));
      recovered.push_back(
          QueuedJob{id, {request.parties().begin(), request.parties().end()}, resume});
    }
  }
  // Resumed jobs first (they were running), then the queue in its order.
  if (!recovered.empty() || !recovery.failed.empty()) {
    spdlog::warn(
        "leader restarted with jobs in flight: {} to resume, {} queued again, {} failed (they "
        "cannot resume)",
        recovery.resume.size(), recovery.requeue.size(), recovery.failed.size());
  }
  if (!recovery.unended.empty()) {
    spdlog::warn("{} job(s) ended while their parties were being told; telling them again",
                 recovery.unended.size());
  }
  if (!options.seal_key_pem.empty()) {
    RETURN_IF_ERROR(crypto::SealKeyPairFromPem(options.seal_key_pem).status());
  }
  std::unique_ptr<Leader> leader(new Leader(std::move(options), channel, std::move(store)));
  {
    absl::MutexLock lock(&leader->mu_);
    leader->queue_ = std::move(recovered);
  }
  // The parties still to tell from before the restart; then, for jobs that cannot resume and jobs
  // that ended while their parties were being told (stores of schema v3 kept such jobs' recorded
  // calls until then), every party of their ring (TellLater: recorded first, then the calls go).
  {
    ASSIGN_OR_RETURN(std::vector<UntoldEnd> untold, leader->store_->Untold());
    absl::MutexLock lock(&leader->mu_);
    leader->untold_ = std::move(untold);
  }
  std::vector<std::string> to_end = std::move(recovery.failed);
  to_end.insert(to_end.end(), recovery.unended.begin(), recovery.unended.end());
  for (const std::string& id : to_end) {
    absl::StatusOr<fedanon::v1::SubmitJobRequest> request = leader->store_->Request(id);
    absl::StatusOr<JobInfo> info = leader->store_->Get(id);
    if (!request.ok() || !info.ok()) continue;
    const bool done = info->state() == fedanon::v1::JOB_STATE_DONE;
    RETURN_IF_ERROR(leader->TellLater(id, {request->parties().begin(), request->parties().end()},
                                      done, done ? "done" : info->failure_reason()));
    WarnIfError(leader->store_->DeleteCalls(id), id, "cannot delete the recorded calls");
  }
  leader->teller_ = std::thread([l = leader.get()] { l->TellerLoop(); });
  for (int i = 0; i < leader->options_.max_concurrent_jobs; ++i) {
    leader->workers_.emplace_back([l = leader.get()] { l->WorkerLoop(); });
  }
  return leader;
}

Leader::Leader(LeaderOptions options, wire::PartyChannel* channel, std::unique_ptr<JobStore> store)
    : options_(std::move(options)),
      observer_(options_.observer != nullptr ? options_.observer : &NoLeaderObserver()),
      channel_(channel),
      store_(std::move(store)) {
  host_.options = &options_;
  host_.observer = observer_;
  host_.channel = channel_;
  host_.store = store_.get();
  host_.check_cancelled = [this](const std::string& job_id) { return CheckCancelled(job_id); };
  host_.notify = [this] { Notify(); };
  host_.waiting = [this](const std::string& job_id, const std::string& party, bool waiting) {
    SetWaiting(job_id, party, waiting);
  };
  host_.tell_later = [this](const std::string& job_id, const std::vector<std::string>& parties,
                            bool success, const std::string& reason) {
    WarnIfError(TellLater(job_id, parties, success, reason), job_id,
                "cannot record the parties to tell that the job ended");
  };
}

Leader::~Leader() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, run] : running_) {
      if (run.cancel) continue;  // an admin's cancellation stands
      run.cancel = true;
      run.cancel_reason = kShuttingDown;
    }
  }
  changed_.SignalAll();
  for (std::thread& worker : workers_) worker.join();
  if (teller_.joinable()) teller_.join();
}

absl::Status Leader::TellLater(const std::string& job_id, const std::vector<std::string>& parties,
                               bool success, const std::string& reason) {
  std::vector<UntoldEnd> ends;
  ends.reserve(parties.size());
  for (const std::string& party : parties)
    ends.push_back(UntoldEnd{job_id, party, success, reason});
  // Kept in the job store, so that a leader restarted meanwhile still tells them.
  absl::Status recorded = store_->RecordUntold(ends);
  {
    absl::MutexLock lock(&mu_);
    for (UntoldEnd& end : ends) {
      std::erase_if(untold_, [&](const UntoldEnd& u) {
        return u.job_id == end.job_id && u.party == end.party;
      });
      untold_.push_back(std::move(end));
    }
  }
  spdlog::info("job={} parties to tell that it ended: '{}'; each is told when it connects", job_id,
               absl::StrJoin(parties, "', '"));
  Notify();
  return recorded;
}

void Leader::TellerLoop() {
  while (true) {
    std::vector<UntoldEnd> untold;
    {
      absl::MutexLock lock(&mu_);
      changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      if (stopping_) return;
      untold = untold_;
    }
    RecordUnrecordedStates();
    if (untold.empty()) continue;
    std::set<std::string> connected;
    for (const wire::ConnectedParty& p : channel_->Parties()) connected.insert(p.name);
    for (const UntoldEnd& end : untold) {
      if (!connected.contains(end.party)) continue;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      const absl::Status told =
          TellJobEnded(channel_, end.party, end.job_id, end.success, end.reason, absl::Seconds(5));
      // Not reached (gone again, or no answer in time): tried again later.
      if (absl::IsUnavailable(told) || absl::IsDeadlineExceeded(told)) continue;
      // Told; or it answered with an error (it holds nothing of the job): nothing more to tell.
      if (told.ok()) {
        spdlog::info("job={} party '{}' is back and was told that the job ended", end.job_id,
                     end.party);
      }
      WarnIfError(store_->ForgetUntold(end.job_id, end.party), end.job_id,
                  "cannot forget a party told that the job ended");
      absl::MutexLock lock(&mu_);
      std::erase_if(untold_, [&](const UntoldEnd& u) {
        return u.job_id == end.job_id && u.party == end.party && u.reason == end.reason &&
               u.success == end.success;
      });
    }
  }
}

void Leader::RecordUnrecordedStates() {
  std::map<std::string, UnrecordedState> unrecorded;
  {
    absl::MutexLock lock(&mu_);
    unrecorded = unrecorded_;
  }
  for (const auto& [job_id, outcome] : unrecorded) {
    const absl::Status recorded = store_->SetState(job_id, outcome.state, outcome.reason);
    // Still refused (the disk is still full): tried again at the next turn. A job the store no
    // longer holds, or holds as ended, has nothing left to record.
    if (!recorded.ok() && !absl::IsNotFound(recorded) && !absl::IsFailedPrecondition(recorded)) {
      continue;
    }
    spdlog::info("job={} recorded as {} (the job store refused it before)", job_id,
                 fedanon::v1::JobState_Name(outcome.state));
    absl::MutexLock lock(&mu_);
    unrecorded_.erase(job_id);
  }
}

void Leader::Notify() const {
  {
    absl::MutexLock lock(&mu_);
    ++changes_;
  }
  changed_.SignalAll();
}

absl::StatusOr<JobInfo> Leader::Submit(const fedanon::v1::SubmitJobRequest& request,
                                       const std::string& admin) {
  RETURN_IF_ERROR(CheckJobRequest(request));
  {
    // A place in the queue is taken before the job is stored, so that a refused submission
    // leaves no record behind. Jobs a free worker takes at once never count as queued.
    absl::MutexLock lock(&mu_);
    const int free_workers = options_.max_concurrent_jobs - static_cast<int>(running_.size());
    const int waiting = static_cast<int>(queue_.size()) + reserved_;
    if (waiting - std::max(0, free_workers) >= options_.max_queued_jobs) {
      spdlog::warn("refused a job from {}: the queue is full ({} queued, limit {})", admin,
                   queue_.size(), options_.max_queued_jobs);
      return absl::ResourceExhaustedError(absl::StrCat(
          "job queue is full (", queue_.size(), " queued, limit ", options_.max_queued_jobs, ")"));
    }
    ++reserved_;
  }
  absl::StatusOr<std::string> created = store_->Create(request, admin);
  {
    absl::MutexLock lock(&mu_);
    --reserved_;
    if (created.ok()) {
      queue_.push_back(QueuedJob{*created, {request.parties().begin(), request.parties().end()}});
    }
  }
  RETURN_IF_ERROR(created.status());
  const std::string& job_id = *created;
  spdlog::info("job={} round=0 submitted by {} ({} parties)", job_id, admin,
               request.parties_size());
  Notify();
  return Get(job_id);
}

void Leader::AddLiveState(JobInfo* info) const {
  absl::MutexLock lock(&mu_);
  if (const auto u = unrecorded_.find(info->job_id()); u != unrecorded_.end()) {
    info->set_state(u->second.state);
    info->set_failure_reason(u->second.reason);
    return;
  }
  if (IsFinal(info->state())) return;
  if (const auto run = running_.find(info->job_id()); run != running_.end()) {
    for (const auto& [party, waits] : run->second.waiting_for) info->add_waiting_for_parties(party);
    return;
  }
  const auto it = std::find_if(queue_.begin(), queue_.end(),
                               [&](const QueuedJob& q) { return q.job_id == info->job_id(); });
  if (it != queue_.end()) info->set_queue_position(static_cast<uint32_t>(it - queue_.begin()) + 1);
}

void Leader::SetWaiting(const std::string& job_id, const std::string& party, bool waiting) {
  {
    absl::MutexLock lock(&mu_);
    const auto run = running_.find(job_id);
    if (run == running_.end()) return;
    int& waits = run->second.waiting_for[party];
    waits += waiting ? 1 : -1;
    if (waits <= 0) run->second.waiting_for.erase(party);
  }
  if (waiting) spdlog::info("job={} waiting for party '{}' to connect", job_id, party);
  Notify();
}

QueueStats Leader::Queue() const {
  absl::MutexLock lock(&mu_);
  return QueueStats{static_cast<int>(running_.size()), static_cast<int>(queue_.size()),
                    options_.max_concurrent_jobs, options_.max_queued_jobs};
}

absl::StatusOr<JobInfo> Leader::Get(const std::string& job_id) const {
  ASSIGN_OR_RETURN(JobInfo info, store_->Get(job_id));
  AddLiveState(&info);
  return info;
}

absl::StatusOr<std::vector<JobInfo>> Leader::List() const {
  ASSIGN_OR_RETURN(std::vector<JobInfo> jobs, store_->List());
  for (JobInfo& info : jobs) AddLiveState(&info);
  return jobs;
}

absl::StatusOr<JobInfo> Leader::Cancel(const std::string& job_id, const std::string& admin,
                                       const std::string& reason) {
  ASSIGN_OR_RETURN(JobInfo info, store_->Get(job_id));
  AddLiveState(&info);  // an outcome not recorded yet is final all the same
  if (IsFinal(info.state())) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has already ended"));
  }
  RETURN_IF_ERROR(store_->Audit(job_id, admin, "cancelled", reason));
  const std::string why = absl::StrCat("cancelled by ", admin, reason.empty() ? "" : ": ", reason);
  bool running = false;
  std::vector<std::string> prepared;  // a resumed job still queued: its parties hold its run
  {
    absl::MutexLock lock(&mu_);
    if (auto it = running_.find(job_id); it != running_.end()) {
      it->second.cancel = true;
      it->second.cancel_reason = why;
      running = true;
    } else {
      for (const QueuedJob& q : queue_) {
        if (q.job_id == job_id && q.resume) prepared = q.parties;
      }
      std::erase_if(queue_, [&](const QueuedJob& q) { return q.job_id == job_id; });
    }
  }
  if (!running) RETURN_IF_ERROR(store_->SetState(job_id, fedanon::v1::JOB_STATE_CANCELLED, why));
  if (!prepared.empty()) {
    // Recovered after a restart and cancelled before a worker took it: its parties prepared it
    // and keep its durable state until told (now, or when each comes back).
    JobRun job;
    job.job_id = job_id;
    job.ring = std::move(prepared);
    job.timeout = absl::Seconds(5);
    const std::string reason = absl::StrCat("cancelled: ", why);
    host_.EndJobAtParties(job, /*success=*/false, reason);
    WarnIfError(store_->DeleteCalls(job_id), job_id, "cannot delete the recorded calls");
  }
  Notify();
  // A running job notices the flag before its next message; wait for it briefly.
  for (int i = 0; running && i < 100; ++i) {
    ASSIGN_OR_RETURN(info, store_->Get(job_id));
    if (IsFinal(info.state())) break;
    absl::MutexLock lock(&mu_);
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
  }
  return Get(job_id);
}

absl::StatusOr<JobInfo> Leader::WaitForChange(const std::string& job_id, const JobInfo& last,
                                              absl::Duration timeout) const {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  while (true) {
    uint64_t seen = 0;
    {
      absl::MutexLock lock(&mu_);
      seen = changes_;
    }
    ASSIGN_OR_RETURN(JobInfo info, Get(job_id));
    if (info.state() != last.state() || info.round() != last.round() ||
        info.failure_reason() != last.failure_reason() ||
        info.queue_position() != last.queue_position() ||
        !std::equal(info.waiting_for_parties().begin(), info.waiting_for_parties().end(),
                    last.waiting_for_parties().begin(), last.waiting_for_parties().end()) ||
        std::chrono::steady_clock::now() >= deadline) {
      return info;
    }
    // Woken by the next Notify, even one that came while the store was read (no lost wake-up: a
    // job's end used to reach its watcher up to 200 ms late); at most 200 ms for a change made
    // without one.
    absl::MutexLock lock(&mu_);
    const auto until = std::min<std::chrono::steady_clock::time_point>(
        deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
    while (changes_ == seen) {
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero() ||
          changed_.WaitWithTimeout(&mu_, absl::FromChrono(left))) {
        break;
      }
    }
  }
}

absl::StatusOr<std::string> Leader::Result(const std::string& job_id) const {
  std::string csv;
  RETURN_IF_ERROR(StreamResult(job_id, size_t{1} << 20, [&csv](std::string_view piece) {
    csv.append(piece);
    return absl::OkStatus();
  }));
  return csv;
}

absl::Status Leader::StreamResult(const std::string& job_id, size_t piece_bytes,
                                  const std::function<absl::Status(std::string_view)>& sink) const {
  ASSIGN_OR_RETURN(JobInfo info, store_->Get(job_id));
  if (info.state() != fedanon::v1::JOB_STATE_DONE) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id, " has no result (state ", fedanon::v1::JobState_Name(info.state()), ")"));
  }
  if (!info.recipient().empty() && info.recipient() != options_.name) {
    return absl::NotFoundError(absl::StrCat("the integrated table of job ", job_id,
                                            " was delivered to party '", info.recipient(),
                                            "', not to the leader"));
  }
  return store_->StreamResult(job_id, piece_bytes, sink);
}

void Leader::WorkerLoop() {
  while (true) {
    std::string job_id;
    bool resume = false;
    {
      absl::MutexLock lock(&mu_);
      // Every party holds several jobs at once: the oldest queued job starts as soon as a worker
      // is free. Submit signals changed_ after queueing a job, the destructor after stopping_.
      while (!stopping_ && queue_.empty()) changed_.Wait(&mu_);
      if (stopping_) return;
      job_id = queue_.front().job_id;
      resume = queue_.front().resume;
      running_[job_id] = RunningJob{};
      queue_.pop_front();
    }
    Notify();  // the queue positions of the others moved
    JobRun job;
    job.job_id = job_id;
    job.resume = resume;
    const absl::Status status = RunJob(&job);
    std::string cancel_reason;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      cancel_reason = running_[job_id].cancel_reason;
      running_.erase(job_id);
      stopping = stopping_;
    }
    if (stopping && absl::IsCancelled(status) && cancel_reason == kShuttingDown) {
      // A stop (SIGTERM) is a restart like any other: the job stays in the store as it was and
      // is resumed at the next start where it can be (Create, RecoverForResume).
      spdlog::info("job={} left for the next start of the leader", job_id);
      continue;
    }
    // The parties learn that a job they prepared will not go on (a done job told them already),
    // and drop what they hold for it, before the outcome is recorded: a job submitted once this
    // one shows as failed finds the parties' releases of it freed (all parties prepare at once).
    // Bounded: a party that does not answer delays the outcome and this worker's next job by at
    // most 5 s. Not while the leader shuts down (its streams are being cancelled).
    if (!status.ok() && !stopping && !job.ring.empty()) {
      job.timeout = std::min(job.timeout, absl::Seconds(5));
      const std::string reason = status.code() == absl::StatusCode::kCancelled
                                     ? absl::StrCat("cancelled: ", cancel_reason)
                                     : std::string(status.message());
      // A party away now (e.g. the job was cancelled while waiting for it) is told when it
      // comes back, so that it drops the job's durable state too (JobHost::tell_later).
      host_.EndJobAtParties(job, /*success=*/false, reason);
    }
    RecordOutcome(job_id, status, cancel_reason);
    Notify();
    // The recorded calls served resuming (what the leader read is in the view log); kept until
    // the parties were told, so that a leader restarted before that tells them again.
    if (!stopping) {
      WarnIfError(store_->DeleteCalls(job_id), job_id, "cannot delete the recorded calls");
    }
  }
}

void Leader::RecordOutcome(const std::string& job_id, const absl::Status& status,
                           const std::string& cancel_reason) {
  // Every line of a job names its round (server/runtime/logging.h): here the last one recorded.
  const absl::StatusOr<JobInfo> info = store_->Get(job_id);
  const uint32_t round = info.ok() ? info->round() : 0;
  if (status.ok()) {
    if (!info.ok() || info->state() != fedanon::v1::JOB_STATE_DONE) {  // FinishJob records it
      RecordFinalState(job_id, fedanon::v1::JOB_STATE_DONE, "");
    }
    spdlog::info("job={} round={} done", job_id, round);
    observer_->JobDone();
  } else if (status.code() == absl::StatusCode::kCancelled) {
    RecordFinalState(job_id, fedanon::v1::JOB_STATE_CANCELLED, cancel_reason);
    spdlog::info("job={} round={} cancelled: {}", job_id, round, cancel_reason);
    observer_->JobCancelled();
  } else {
    RecordFinalState(job_id, fedanon::v1::JOB_STATE_FAILED, std::string(status.message()));
    spdlog::error("job={} round={} failed: {}", job_id, round, std::string(status.message()));
    observer_->JobFailed(FailureCategory(status));
  }
}

void Leader::RecordFinalState(const std::string& job_id, fedanon::v1::JobState state,
                              const std::string& reason) {
  const absl::Status recorded = store_->SetState(job_id, state, reason);
  if (recorded.ok()) return;
  // Admins see the outcome all the same; the teller thread records it once the store takes it.
  spdlog::warn("job={} cannot record the job as {} yet (shown from memory until it can be): {}",
               job_id, fedanon::v1::JobState_Name(state), recorded.ToString());
  absl::MutexLock lock(&mu_);
  unrecorded_[job_id] = UnrecordedState{state, reason};
}

absl::Status Leader::CheckCancelled(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = running_.find(job_id);
  if (it != running_.end() && it->second.cancel) {
    return absl::CancelledError(it->second.cancel_reason);
  }
  return absl::OkStatus();
}

absl::Status Leader::RunJob(JobRun* run) {
  // Every call of the job goes through one counter, for its end-of-run line (what a wide-area
  // link costs it: docs/operations.md "Wide-area links").
  CallCounter calls(channel_);
  JobHost host = host_;
  host.channel = &calls;
  absl::Status status = RunJobOn(host, run);
  const CallCounts c = calls.counts();
  const absl::StatusOr<JobInfo> info = store_->Get(run->job_id);
  spdlog::info(
      "job={} round={} calls to parties: {} in {} waves (sequential round trips), {} bytes sent, "
      "{} received, {} on the critical path",
      run->job_id, info.ok() ? info->round() : 0, c.calls, c.waves, c.bytes_sent, c.bytes_received,
      c.critical_bytes);
  return status;
}

absl::Status Leader::RunJobOn(const JobHost& host, JobRun* run) {
  JobRun& job = *run;
  const std::string& job_id = job.job_id;
  ASSIGN_OR_RETURN(job.request, store_->Request(job_id));
  if (!job.resume) {
    RETURN_IF_ERROR(store_->SetState(job_id, fedanon::v1::JOB_STATE_VALIDATING));
  }
  Notify();
  const auto start = std::chrono::steady_clock::now();
  job.elapsed = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const fedanon::v1::SubmitJobRequest& request = job.request;
  job.timeout = request.round_timeout_seconds() > 0 ? absl::Seconds(request.round_timeout_seconds())
                                                    : options_.round_timeout;
  job.ring.assign(request.parties().begin(), request.parties().end());
  // A data-holding leader's party goes first: its own mask is one the leader learns anyway;
  // placed later it would learn its predecessor's counts (the parties check this at Prepare).
  if (auto lp = std::find(job.ring.begin(), job.ring.end(), request.leader_party());
      lp != job.ring.end()) {
    std::rotate(job.ring.begin(), lp, lp + 1);
  }
  job.recipient = request.recipient().empty() ? options_.name : request.recipient();
  RETURN_IF_ERROR(CheckJobRequest(request));
  ASSIGN_OR_RETURN(job.run_id, wire::RunIdOf(request.authorization()));

  // The public schema the leader scores with, from the taxonomies the admin submitted.
  std::map<std::string, std::string> texts;
  for (const auto& [attr, text] : request.taxonomies()) texts[attr] = text;
  ASSIGN_OR_RETURN(table::Dataset schema, table::BuildPublicSchema(request.spec(), texts));
  const std::string expected_digest =
      crypto::Sha256(spec::CanonicalJobBytes(request.spec(), texts));
  if (job.resume) {
    // Prepared before the restart (a second Prepare of the run would be refused): the parties
    // keep the job, in memory or in their durable state. Wait for them to reconnect.
    RejoiningChannel waiter(host.channel, options_.resume_timeout,
                            [this, id = job_id] { return CheckCancelled(id); });
    waiter.set_waiting_observer(host.WaitingObserver(job_id));
    if (absl::Status back = waiter.WaitForParties(job.ring); !back.ok()) {
      if (absl::IsCancelled(back)) return back;
      return absl::UnavailableError(
          absl::StrCat("the job cannot resume after the leader restarted: ", back.message()));
    }
    ASSIGN_OR_RETURN(const JobInfo info, store_->Get(job_id));
    ASSIGN_OR_RETURN(job.resumes, store_->RecordResume(job_id, info.round()));
    if (job.resumes > options_.max_resumes) {
      return absl::FailedPreconditionError(absl::StrCat(
          kResumedTooOften, ": the job was resumed ", job.resumes,
          " time(s) after leader restarts without ending (max_resumes: ", options_.max_resumes,
          " in leader.yaml); a reply replayed at every start may be what stops the leader"));
    }
    spdlog::warn("job={} round={} resuming after a leader restart (resume {})", job_id,
                 info.round(), job.resumes);
  } else {
    // Parties reconnect on their own (within a second or two after a leader restart, longer
    // after their own): a new job waits for its ring like a resumed one, at most party_wait.
    RejoiningChannel waiter(host.channel, options_.party_wait,
                            [this, id = job_id] { return CheckCancelled(id); });
    waiter.set_waiting_observer(host.WaitingObserver(job_id));
    RETURN_IF_ERROR(waiter.WaitForParties(job.ring, "party_wait_seconds"));
    RETURN_IF_ERROR(PrepareParties(host, job, expected_digest));
    RETURN_IF_ERROR(store_->SetState(job_id, fedanon::v1::JOB_STATE_RUNNING));
  }
  Notify();
  // Nothing is decoded without being logged: the job fails if its view log cannot be written.
  ASSIGN_OR_RETURN(job.view_log, ViewLog::Open(options_.data_dir, job_id));
  const bool vertical = request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
  // A resumed horizontal job decodes its recorded secure sums again: logged once (a vertical job
  // skips its replayed lines itself, VerticalJobOptions::logged_before).
  if (job.resume && !vertical) RETURN_IF_ERROR(job.view_log->ExpectReplayOfItsLines());
  const absl::Status status =
      vertical ? RunVerticalDriver(host, job) : HorizontalDriver::Run(host, job, schema);
  RETURN_IF_ERROR(status);
  return job.view_log->Sync();
}

absl::StatusOr<std::string> Leader::ViewLogText(const std::string& job_id) const {
  RETURN_IF_ERROR(Get(job_id).status());  // NotFound for an unknown job
  return ViewLog::Read(options_.data_dir, job_id);
}

absl::Status Leader::StreamViewLog(
    const std::string& job_id, size_t piece_bytes,
    const std::function<absl::Status(std::string_view)>& sink) const {
  RETURN_IF_ERROR(Get(job_id).status());  // NotFound for an unknown job
  return ViewLog::Stream(options_.data_dir, job_id, piece_bytes, sink);
}

}  // namespace fedanon::leader
