#include "leader/leader.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/engine/final_check.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/job_authorization.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/protocol_version.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "crypto/shuffle.h"
#include "leader/final_check_ring.h"
#include "leader/local_job.h"
#include "leader/payload_relay.h"
#include "leader/rejoining_channel.h"
#include "leader/secure_sum_source.h"
#include "leader/vertical_job.h"
#include "leader/view_log.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

// For bookkeeping whose failure must not change the job's outcome: logs it with the job id.
// The sealing key of a connected data party, verified against the federation CA.
absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> PartySealKey(common::PartyChannel* channel,
                                                                    const std::string& ca_pem,
                                                                    const std::string& party) {
  for (const auto& p : channel->Parties()) {
    if (p.name == party) {
      return crypto::VerifiedSealKey(p.seal_cert_pem, ca_pem, {crypto::Role::kParty, party});
    }
  }
  return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
}

// Why the workers stop when the leader is destroyed; jobs stopped for it stay as they are in the
// job store (running ones resume at the next start, like after kill -9).
constexpr char kShuttingDown[] = "leader shutting down";

void WarnIfError(const absl::Status& status, const std::string& job_id, std::string_view what) {
  if (!status.ok()) spdlog::warn("job={} {}: {}", job_id, what, status.ToString());
}

using fedanon::v1::JobInfo;
using fedanon::v1::JobState;

bool IsFinal(JobState s) {
  return s == fedanon::v1::JOB_STATE_DONE || s == fedanon::v1::JOB_STATE_FAILED ||
         s == fedanon::v1::JOB_STATE_CANCELLED;
}

// A round that takes longer than a day is a mistake or an attack on the leader's resources.
constexpr uint32_t kMaxRoundTimeoutSeconds = 86'400;

// Checks what can be checked before anything is exchanged with the parties.
absl::Status CheckRequest(const fedanon::v1::SubmitJobRequest& request) {
  RETURN_IF_ERROR(common::ValidateJobSpec(request.spec()));
  RETURN_IF_ERROR(common::CheckFederatedRecoding(request.spec()));
  if (request.spec().partitioning() != fedanon::v1::PARTITIONING_HORIZONTAL &&
      request.spec().partitioning() != fedanon::v1::PARTITIONING_VERTICAL) {
    return absl::InvalidArgumentError(
        "the job spec does not say `partitioning: horizontal` or `partitioning: vertical`: a "
        "spec without it is for one table (fedanon anonymize), not for a federation");
  }
  if (request.round_timeout_seconds() > kMaxRoundTimeoutSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("round_timeout_seconds ", request.round_timeout_seconds(),
                     " is over the limit of ", kMaxRoundTimeoutSeconds, " (one day)"));
  }
  if (request.authorization().body().empty()) {
    return absl::InvalidArgumentError(
        "the job carries no admin authorization (fedanonctl submit signs the job with the "
        "admin's key; parties run only jobs an admin signed)");
  }
  const auto& parties = request.parties();
  if (parties.empty()) return absl::InvalidArgumentError("the job names no data parties");
  std::set<std::string> unique(parties.begin(), parties.end());
  if (unique.size() != static_cast<size_t>(parties.size())) {
    return absl::InvalidArgumentError("a party is listed twice");
  }
  for (const auto& p : parties) RETURN_IF_ERROR(crypto::ValidateParticipantName(p));
  if (request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL) {
    if (parties.size() < 2) {
      return absl::InvalidArgumentError("a vertical job needs at least 2 data parties");
    }
    if (!request.leader_party().empty()) {
      return absl::InvalidArgumentError(
          "a vertical job runs with a data-less leader (leader_party is for horizontal jobs)");
    }
    bool has_id = false;
    for (const auto& a : request.spec().attributes()) {
      has_id = has_id || a.role() == fedanon::v1::ROLE_ID;
      const bool shared = a.role() == fedanon::v1::ROLE_ID || a.role() == fedanon::v1::ROLE_CLASS;
      if (shared) continue;
      if (a.party().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute '", a.name(),
                         "' needs `party:` (the party that holds it) in a vertical job"));
      }
      if (!unique.count(a.party())) {
        return absl::InvalidArgumentError(absl::StrCat("attribute '", a.name(), "' belongs to '",
                                                       a.party(), "', which is not in the job"));
      }
    }
    if (!has_id) {
      return absl::InvalidArgumentError(
          "a vertical job needs an attribute with role id (the column the parties match on)");
    }
    RETURN_IF_ERROR(common::CheckVerticalScoreComputable(request.spec()));
  } else if (request.leader_party().empty()) {
    if (parties.size() < 2) {
      return absl::InvalidArgumentError("a horizontal job needs at least 2 data parties");
    }
  } else {
    if (!unique.count(request.leader_party())) {
      return absl::InvalidArgumentError(absl::StrCat("leader_party '", request.leader_party(),
                                                     "' is not one of the job's parties"));
    }
    if (parties.size() < 3) {
      return absl::InvalidArgumentError(
          "with a data-holding leader a horizontal job needs at least 3 data parties: with two, "
          "the leader could subtract its own counts from the secure sum and learn the other "
          "party's (mohammed2010 §5.5); use a data-less leader for two parties");
    }
  }
  if (!request.recipient().empty() && !unique.count(request.recipient())) {
    return absl::InvalidArgumentError(
        absl::StrCat("recipient '", request.recipient(), "' is not one of the job's parties"));
  }
  const bool vertical = request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
  if (vertical && !request.recipient().empty() &&
      !request.spec().release().allow_data_holding_recipient()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recipient '", request.recipient(),
        "' holds data of this vertical job and could link the released rows to its own "
        "identified records; name the leader as recipient, or opt in with release: "
        "{allow_data_holding_recipient: true} in the spec"));
  }
  return absl::OkStatus();
}

// Hands `write` the bytes of a table in pieces of about 4 MiB: the header line, then
// `line(i)` for i = 0 .. n-1.
absl::Status WriteTableBuffered(const std::string& header_line, size_t n,
                                const std::function<std::string_view(size_t)>& line,
                                const JobStore::ResultWriter& write) {
  constexpr size_t kBuffer = size_t{4} << 20;
  std::string buffer = header_line;
  buffer.reserve(kBuffer + 4096);
  for (size_t i = 0; i < n; ++i) {
    buffer += line(i);
    if (buffer.size() >= kBuffer) {
      RETURN_IF_ERROR(write(buffer));
      buffer.clear();
    }
  }
  return buffer.empty() ? absl::OkStatus() : write(buffer);
}

// Writes the released table rebuilt from the summed counts per (group, value combination), in
// a random order (OpenSSL CSPRNG), with columns in spec order (the record id excluded). Each
// distinct row is formatted once and a record costs 12 bytes (its row's number and its place in
// the permutation), so that a table of tens of millions of rows is never held as text.
// `groups` groups; `labels_of(g)` gives group g's released value of every QID attribute (global
// recoding: the cut's labels of its key; local recoding: its LocalValue labels).
absl::Status WriteReleasedTableFromCounts(
    const fedanon::v1::JobSpec& spec, const common::Dataset& schema, size_t groups,
    const std::function<std::vector<std::string>(size_t)>& labels_of,
    const std::vector<uint64_t>& counts, uint64_t total_records,
    const JobStore::ResultWriter& write) {
  const uint64_t combos = schema.ValueCombinations();
  if (counts.size() != groups * combos) {
    return absl::InternalError("released counts have the wrong length");
  }
  // The counts are the parties' sums: before writing one row per record they must add up to the
  // job's records (a wrong sum would make the leader write, and allocate, any number of rows).
  uint64_t sum = 0;
  for (uint64_t n : counts) {
    if (n > total_records - sum) {
      return absl::DataLossError(
          absl::StrCat("the released counts add up to more than the job's ", total_records,
                       " records (a party answered inconsistently); nothing was released"));
    }
    sum += n;
  }
  if (sum != total_records) {
    return absl::DataLossError(absl::StrCat("the released counts add up to ", sum,
                                            ", not the job's ", total_records,
                                            " records (a party answered inconsistently); nothing "
                                            "was released"));
  }
  // Per released column: a QID index (>= 0) or a value column (-1 - index).
  std::vector<int> source;
  std::vector<std::string_view> header;
  for (const auto& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_ID) continue;
    header.push_back(a.name());
    int src = 0;
    bool found = false;
    for (size_t q = 0; q < schema.qids.size(); ++q) {
      if (schema.qids[q].name == a.name()) src = static_cast<int>(q), found = true;
    }
    for (size_t v = 0; v < schema.value_columns.size() && !found; ++v) {
      if (schema.value_columns[v].name == a.name()) src = -1 - static_cast<int>(v), found = true;
    }
    if (!found) return absl::InternalError("released column without a source");
    source.push_back(src);
  }
  // The distinct rows (at most the 50M released words, so their numbers fit 32 bits), and per
  // record the number of its row.
  std::vector<std::string> lines;
  std::vector<uint32_t> line_of;
  line_of.reserve(total_records);
  std::vector<std::string_view> row(source.size());
  std::vector<int32_t> value_index(schema.value_columns.size());
  for (size_t g = 0; g < groups; ++g) {
    const std::vector<std::string> labels = labels_of(g);
    if (labels.size() != schema.qids.size()) {
      return absl::InternalError("a released group without a label per QID attribute");
    }
    for (uint64_t c = 0; c < combos; ++c) {
      const uint64_t n = counts[g * combos + c];
      if (n == 0) continue;
      uint64_t rest = c;
      for (size_t v = schema.value_columns.size(); v-- > 0;) {
        const uint64_t size = std::max<uint64_t>(1, schema.value_columns[v].values.size());
        value_index[v] = static_cast<int32_t>(rest % size);
        rest /= size;
      }
      for (size_t i = 0; i < source.size(); ++i) {
        row[i] =
            source[i] >= 0
                ? std::string_view(labels[source[i]])
                : std::string_view(
                      schema.value_columns[-1 - source[i]].values[value_index[-1 - source[i]]]);
      }
      lines.push_back(common::CsvLine(row));
      line_of.insert(line_of.end(), n, static_cast<uint32_t>(lines.size() - 1));
    }
  }
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(line_of.size()));
  return WriteTableBuffered(
      common::CsvLine(header), perm.size(),
      [&](size_t i) -> std::string_view { return lines[line_of[perm[i]]]; }, write);
}

}  // namespace

// What every step of one job's run needs, read once from the stored request.
struct Leader::JobRun {
  std::string job_id;
  fedanon::v1::SubmitJobRequest request;
  std::string run_id;                 // the admin's run (bound into every sealed box of the job)
  std::vector<std::string> ring;      // the data parties in ring order
  std::string recipient;              // a party, or the leader's own name
  absl::Duration timeout;             // for every call to a party
  std::function<double()> elapsed;    // seconds since the run started
  std::unique_ptr<ViewLog> view_log;  // every statistic the leader decodes for this job
  bool resume = false;                // resumed after a leader restart (durable jobs)
  int resumes = 0;                    // how often this job was resumed so far
};

absl::StatusOr<std::unique_ptr<Leader>> Leader::Create(LeaderOptions options,
                                                       common::PartyChannel* channel) {
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
  // Jobs that cannot resume, and jobs that ended while their parties were being told.
  std::vector<std::string> to_end = std::move(recovery.failed);
  to_end.insert(to_end.end(), recovery.unended.begin(), recovery.unended.end());
  if (!to_end.empty()) {
    leader->recovery_ =
        std::thread([l = leader.get(), ids = std::move(to_end)] { l->EndRecoveredJobs(ids); });
  }
  for (int i = 0; i < leader->options_.max_concurrent_jobs; ++i) {
    leader->workers_.emplace_back([l = leader.get()] { l->WorkerLoop(); });
  }
  return leader;
}

Leader::Leader(LeaderOptions options, common::PartyChannel* channel,
               std::unique_ptr<JobStore> store)
    : options_(std::move(options)),
      observer_(options_.observer != nullptr ? options_.observer : &NoLeaderObserver()),
      channel_(channel),
      store_(std::move(store)) {}

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
  if (recovery_.joinable()) recovery_.join();
  std::vector<std::thread> tellers;
  {
    absl::MutexLock lock(&mu_);
    tellers.swap(tellers_);
  }
  for (std::thread& teller : tellers) teller.join();
}

void Leader::TellWhenBack(const std::string& job_id, std::vector<std::string> parties,
                          const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  tellers_.emplace_back([this, job_id, parties = std::move(parties), reason] {
    const RejoiningChannel waiter(channel_, options_.resume_timeout, [this] {
      absl::MutexLock lock(&mu_);
      return stopping_ ? absl::CancelledError("leader shutting down") : absl::OkStatus();
    });
    for (const std::string& party : parties) {
      absl::Status back = waiter.WaitForParties({party});
      if (absl::IsCancelled(back)) return;
      if (!back.ok()) {
        spdlog::warn("job={} {}: it was not told that the job ended", job_id,
                     std::string(back.message()));
        continue;
      }
      fedanon::v1::LeaderMessage msg;
      msg.set_job_id(job_id);
      msg.mutable_end_job()->set_success(false);
      msg.mutable_end_job()->set_reason(reason);
      const absl::Status told = channel_->Call(party, msg, absl::Seconds(5)).status();
      WarnIfError(told, job_id,
                  absl::StrCat("party '", party, "' did not acknowledge the end of the job"));
      if (told.ok()) {
        spdlog::info("job={} party '{}' is back and was told that the job ended", job_id, party);
      }
    }
  });
}

void Leader::EndRecoveredJobs(std::vector<std::string> job_ids) {
  for (const std::string& job_id : job_ids) {
    absl::StatusOr<fedanon::v1::SubmitJobRequest> request = store_->Request(job_id);
    absl::StatusOr<JobInfo> info = store_->Get(job_id);
    if (!request.ok() || !info.ok()) continue;
    JobRun job;
    job.job_id = job_id;
    job.ring.assign(request->parties().begin(), request->parties().end());
    job.timeout = absl::Seconds(5);
    // Each party as soon as it is connected (parties reconnect on their own after a restart).
    const absl::Time deadline = absl::Now() + options_.resume_timeout;
    RejoiningChannel waiter(channel_, options_.resume_timeout, [this] {
      absl::MutexLock lock(&mu_);
      return stopping_ ? absl::CancelledError("leader shutting down") : absl::OkStatus();
    });
    for (const std::string& party : job.ring) {
      absl::Status connected = waiter.WaitForParties({party});
      if (absl::IsCancelled(connected)) return;
      if (!connected.ok() || absl::Now() > deadline) {
        spdlog::warn("job={} {}: it was not told that the job ended", job_id,
                     std::string(connected.message()));
        continue;
      }
      const bool done = info->state() == fedanon::v1::JOB_STATE_DONE;
      fedanon::v1::LeaderMessage msg;
      msg.set_job_id(job_id);
      msg.mutable_end_job()->set_success(done);
      msg.mutable_end_job()->set_reason(done ? "done" : info->failure_reason());
      WarnIfError(channel_->Call(party, msg, job.timeout).status(), job_id,
                  absl::StrCat("party '", party, "' did not acknowledge the end of the job"));
    }
    WarnIfError(store_->DeleteCollects(job_id), job_id, "cannot delete the recorded collects");
    spdlog::info("job={} its parties were told that it ended ({})", job_id,
                 fedanon::v1::JobState_Name(info->state()));
  }
}

absl::Status Leader::StoreResultOnce(const std::string& job_id, const std::string& csv) {
  ASSIGN_OR_RETURN(const bool stored, store_->HasResult(job_id));
  if (stored) {
    spdlog::info("job={} its released table was stored before the restart; kept as it is", job_id);
    return absl::OkStatus();
  }
  return store_->StoreResult(job_id, csv);
}

absl::Status Leader::StoreResultOnce(
    const std::string& job_id,
    const std::function<absl::Status(const JobStore::ResultWriter&)>& produce) {
  ASSIGN_OR_RETURN(const bool stored, store_->HasResult(job_id));
  if (stored) {
    spdlog::info("job={} its released table was stored before the restart; kept as it is", job_id);
    return absl::OkStatus();
  }
  return store_->StoreResultStreamed(job_id, produce);
}

void Leader::Notify() const { changed_.SignalAll(); }

absl::StatusOr<JobInfo> Leader::Submit(const fedanon::v1::SubmitJobRequest& request,
                                       const std::string& admin) {
  RETURN_IF_ERROR(CheckRequest(request));
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

void Leader::AddQueuePosition(JobInfo* info) const {
  if (info->state() != fedanon::v1::JOB_STATE_SUBMITTED) return;
  absl::MutexLock lock(&mu_);
  const auto it = std::find_if(queue_.begin(), queue_.end(),
                               [&](const QueuedJob& q) { return q.job_id == info->job_id(); });
  if (it != queue_.end()) info->set_queue_position(static_cast<uint32_t>(it - queue_.begin()) + 1);
}

QueueStats Leader::Queue() const {
  absl::MutexLock lock(&mu_);
  return QueueStats{static_cast<int>(running_.size()), static_cast<int>(queue_.size()),
                    options_.max_concurrent_jobs, options_.max_queued_jobs};
}

absl::StatusOr<JobInfo> Leader::Get(const std::string& job_id) const {
  ASSIGN_OR_RETURN(JobInfo info, store_->Get(job_id));
  AddQueuePosition(&info);
  return info;
}

absl::StatusOr<std::vector<JobInfo>> Leader::List() const {
  ASSIGN_OR_RETURN(std::vector<JobInfo> jobs, store_->List());
  for (JobInfo& info : jobs) AddQueuePosition(&info);
  return jobs;
}

absl::StatusOr<JobInfo> Leader::Cancel(const std::string& job_id, const std::string& admin,
                                       const std::string& reason) {
  ASSIGN_OR_RETURN(JobInfo info, store_->Get(job_id));
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
    std::vector<std::string> away = EndJobAtParties(job, /*success=*/false, reason);
    if (!away.empty()) TellWhenBack(job_id, std::move(away), reason);
    WarnIfError(store_->DeleteCollects(job_id), job_id, "cannot delete the recorded collects");
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
    ASSIGN_OR_RETURN(JobInfo info, Get(job_id));
    if (info.state() != last.state() || info.round() != last.round() ||
        info.failure_reason() != last.failure_reason() ||
        info.queue_position() != last.queue_position() ||
        std::chrono::steady_clock::now() >= deadline) {
      return info;
    }
    absl::MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    changed_.WaitWithTimeout(&mu_, absl::FromChrono(std::min<std::chrono::steady_clock::duration>(
                                       deadline - now, std::chrono::milliseconds(200))));
  }
}

absl::StatusOr<std::string> Leader::Result(const std::string& job_id) const {
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
  return store_->LoadResult(job_id);
}

std::deque<Leader::QueuedJob>::iterator Leader::NextStartable() {
  if (queue_.empty()) return queue_.end();
  std::set<std::string> single_job_parties_busy;
  for (const common::ConnectedParty& p : channel_->Parties()) {
    if (common::HoldsSeveralJobs(p.protocol)) continue;
    for (const auto& [id, run] : running_) {
      if (std::find(run.parties.begin(), run.parties.end(), p.name) != run.parties.end()) {
        single_job_parties_busy.insert(p.name);
      }
    }
  }
  return std::find_if(queue_.begin(), queue_.end(), [&](const QueuedJob& q) {
    return std::none_of(q.parties.begin(), q.parties.end(),
                        [&](const std::string& p) { return single_job_parties_busy.count(p); });
  });
}

void Leader::WorkerLoop() {
  while (true) {
    std::string job_id;
    bool resume = false;
    {
      absl::MutexLock lock(&mu_);
      auto next = queue_.end();
      // Re-checked on every change and once a second (a 1.0 party may connect or go).
      while (!stopping_ && (next = NextStartable()) == queue_.end()) {
        changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      }
      if (stopping_) return;
      job_id = next->job_id;
      resume = next->resume;
      running_[job_id] = RunningJob{false, "", std::move(next->parties)};
      queue_.erase(next);
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
      std::vector<std::string> away = EndJobAtParties(job, /*success=*/false, reason);
      // A party away now (e.g. the job was cancelled while waiting for it) is told when it
      // comes back, so that it drops the job's durable state too.
      if (!away.empty()) TellWhenBack(job_id, std::move(away), reason);
    }
    RecordOutcome(job_id, status, cancel_reason);
    Notify();
    // The recorded collects served resuming (the sums are in the view log); kept until the
    // parties were told, so that a leader restarted before that tells them again.
    if (!stopping) {
      WarnIfError(store_->DeleteCollects(job_id), job_id, "cannot delete the recorded collects");
    }
  }
}

void Leader::RecordOutcome(const std::string& job_id, const absl::Status& status,
                           const std::string& cancel_reason) {
  // Every line of a job names its round (server/logging.h): here the last one recorded.
  const absl::StatusOr<JobInfo> info = store_->Get(job_id);
  const uint32_t round = info.ok() ? info->round() : 0;
  if (status.ok()) {
    if (!info.ok() || info->state() != fedanon::v1::JOB_STATE_DONE) {  // FinishJob records it
      WarnIfError(store_->SetState(job_id, fedanon::v1::JOB_STATE_DONE), job_id,
                  "cannot record the job as done");
    }
    spdlog::info("job={} round={} done", job_id, round);
    observer_->JobDone();
  } else if (status.code() == absl::StatusCode::kCancelled) {
    WarnIfError(store_->SetState(job_id, fedanon::v1::JOB_STATE_CANCELLED, cancel_reason), job_id,
                "cannot record the job as cancelled");
    spdlog::info("job={} round={} cancelled: {}", job_id, round, cancel_reason);
    observer_->JobCancelled();
  } else {
    WarnIfError(
        store_->SetState(job_id, fedanon::v1::JOB_STATE_FAILED, std::string(status.message())),
        job_id, "cannot record the job as failed");
    spdlog::error("job={} round={} failed: {}", job_id, round, std::string(status.message()));
    observer_->JobFailed(FailureCategory(status));
  }
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
  RETURN_IF_ERROR(CheckRequest(request));
  ASSIGN_OR_RETURN(job.run_id, common::RunIdOf(request.authorization()));

  // The public schema the leader scores with, from the taxonomies the admin submitted.
  std::map<std::string, std::string> texts;
  for (const auto& [attr, text] : request.taxonomies()) texts[attr] = text;
  ASSIGN_OR_RETURN(common::Dataset schema, common::BuildPublicSchema(request.spec(), texts));
  const std::string expected_digest =
      crypto::Sha256(common::CanonicalJobBytes(request.spec(), texts));
  if (job.resume) {
    // Prepared before the restart (a second Prepare of the run would be refused): the parties
    // keep the job, in memory or in their durable state. Wait for them to reconnect.
    const RejoiningChannel waiter(channel_, options_.resume_timeout,
                                  [this, id = job_id] { return CheckCancelled(id); });
    if (absl::Status back = waiter.WaitForParties(job.ring); !back.ok()) {
      if (absl::IsCancelled(back)) return back;
      return absl::UnavailableError(
          absl::StrCat("the job cannot resume after the leader restarted: ", back.message()));
    }
    ASSIGN_OR_RETURN(const JobInfo info, store_->Get(job_id));
    ASSIGN_OR_RETURN(job.resumes, store_->RecordResume(job_id, info.round()));
    spdlog::warn("job={} round={} resuming after a leader restart (resume {})", job_id,
                 info.round(), job.resumes);
  } else {
    RETURN_IF_ERROR(PrepareParties(job, expected_digest));
    RETURN_IF_ERROR(store_->SetState(job_id, fedanon::v1::JOB_STATE_RUNNING));
  }
  Notify();
  // Nothing is decoded without being logged: the job fails if its view log cannot be written.
  ASSIGN_OR_RETURN(job.view_log, ViewLog::Open(options_.data_dir, job_id));
  const bool vertical = request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
  // A resumed horizontal job decodes its recorded secure sums again: logged once (a vertical job
  // skips its replayed lines itself, VerticalJobOptions::logged_before).
  if (job.resume && !vertical) RETURN_IF_ERROR(job.view_log->ExpectReplayOfItsLines());
  const absl::Status status = vertical ? RunVertical(job) : RunHorizontal(job, schema);
  RETURN_IF_ERROR(status);
  return job.view_log->Sync();
}

absl::StatusOr<std::string> Leader::ViewLogText(const std::string& job_id) const {
  RETURN_IF_ERROR(Get(job_id).status());  // NotFound for an unknown job
  return ViewLog::Read(options_.data_dir, job_id);
}

absl::StatusOr<fedanon::v1::PrepareJob> Leader::MakePrepare(const JobRun& job) const {
  // Announce the participants with their sealing certificates (each party verifies them).
  std::map<std::string, std::string> seal_certs;
  for (const auto& p : channel_->Parties()) seal_certs[p.name] = p.seal_cert_pem;
  fedanon::v1::PrepareJob prepare;
  *prepare.mutable_spec() = job.request.spec();
  for (size_t i = 0; i < job.ring.size(); ++i) {
    auto it = seal_certs.find(job.ring[i]);
    if (it == seal_certs.end()) {
      return absl::UnavailableError(absl::StrCat("party '", job.ring[i], "' is not connected"));
    }
    auto* p = prepare.add_participants();
    p->set_name(job.ring[i]);
    p->set_index(static_cast<uint32_t>(i));
    p->set_seal_certificate(it->second);
  }
  // The leader always: the secure sum's last hop is sealed for it (and the result when it is the
  // recipient).
  auto* leader = prepare.add_participants();
  leader->set_name(options_.name);
  leader->set_index(UINT32_MAX);
  leader->set_seal_certificate(options_.seal_cert_pem);
  for (const auto& p : job.ring) prepare.add_ring(p);
  prepare.set_data_holding_leader(!job.request.leader_party().empty());
  prepare.set_leader_party(job.request.leader_party());
  prepare.set_recipient(job.recipient);
  // Protocol 1.2: per-record payloads in chunks under the message limit, when every data party
  // of the job speaks it (with a 1.1 party they travel whole, as 1.1 expects).
  bool chunked = true;
  for (const auto& p : channel_->Parties()) {
    if (std::find(job.ring.begin(), job.ring.end(), p.name) != job.ring.end() &&
        !common::ChunksPayloads(p.protocol)) {
      chunked = false;
    }
  }
  if (chunked) prepare.set_max_message_bytes(options_.max_message_bytes);
  // The admin's signature, unchanged: each party checks it against what this Prepare names.
  *prepare.mutable_authorization() = job.request.authorization();
  return prepare;
}

absl::Status Leader::PrepareParties(const JobRun& job, const std::string& expected_digest) {
  // Protocol 1.4: vertical local recoding's waves travel in pages; a 1.3 party cannot take part.
  if (job.request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL &&
      job.request.spec().recoding() == fedanon::v1::RECODING_LOCAL) {
    for (const auto& p : channel_->Parties()) {
      if (std::find(job.ring.begin(), job.ring.end(), p.name) != job.ring.end() &&
          !common::PagesLocalWaves(p.protocol)) {
        return absl::FailedPreconditionError(absl::StrCat(common::kLocalWavesNeedProtocol,
                                                          ": party '", p.name, "' speaks ",
                                                          common::ProtocolVersionText(p.protocol)));
      }
    }
  }
  ASSIGN_OR_RETURN(const fedanon::v1::PrepareJob prepare, MakePrepare(job));
  RETURN_IF_ERROR(CheckCancelled(job.job_id));
  // Each party loads its table on Prepare; they do so at the same time (one request each, as
  // before, on one thread per party). The first failure in ring order is the job's. Loading tens
  // of millions of records takes longer than a round: Prepare waits 10 round timeouts, at least
  // 10 minutes (like the ID matching's longer wait, a step that follows the table's size).
  const absl::Duration prepare_timeout = std::max(job.timeout * 10, absl::Minutes(10));
  auto prepare_one = [&](const std::string& party) -> absl::Status {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job.job_id);
    *msg.mutable_prepare() = prepare;
    auto path = job.request.data_paths().find(party);
    msg.mutable_prepare()->set_data_path(path == job.request.data_paths().end() ? ""
                                                                                : path->second);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply, channel_->Call(party, msg, prepare_timeout));
    if (!reply.has_prepared()) {
      return absl::InternalError(absl::StrCat("party '", party, "' did not prepare the job"));
    }
    if (reply.prepared().digest() != expected_digest) {
      return absl::FailedPreconditionError(
          absl::StrCat("party '", party,
                       "' loaded a different job (its schema or taxonomies differ from the "
                       "submitted ones; digest ",
                       crypto::ToHex(reply.prepared().digest()).substr(0, 16), " vs ",
                       crypto::ToHex(expected_digest).substr(0, 16), ")"));
    }
    return absl::OkStatus();
  };
  std::vector<absl::Status> prepared(job.ring.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < job.ring.size(); ++i) {
      threads.emplace_back([&, i] { prepared[i] = prepare_one(job.ring[i]); });
    }
    if (!job.ring.empty()) prepared[0] = prepare_one(job.ring[0]);
    for (std::thread& t : threads) t.join();
  }
  for (const absl::Status& st : prepared) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

absl::Status Leader::RunHorizontal(const JobRun& job, const common::Dataset& schema) {
  // Rounds: the centralized engine, fed by ring secure sums.
  const fedanon::v1::JobSpec& spec = job.request.spec();
  ASSIGN_OR_RETURN(common::PrivacyModel model, common::BuildPrivacyModel(spec, schema));
  std::vector<common::AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  uint32_t round = 0;
  // A party whose connection drops is waited for and asked the same request again.
  RejoiningChannel channel(channel_, options_.resume_timeout,
                           [this, id = job.job_id] { return CheckCancelled(id); });
  // Secure-sum and final-check vectors go in chunks that fit the message limit (the limit minus
  // the chunk headroom, in 8-byte words), at most 2^20 words (8 MiB) a chunk.
  const size_t sum_chunk_words = static_cast<size_t>(std::clamp<uint64_t>(
      common::ChunkBytesForLimit(options_.max_message_bytes) / sizeof(uint64_t), 1,
      uint64_t{1} << 20));
  SecureSumCountSource source(
      &channel, job.job_id, job.ring, job.timeout, &hier, std::max(1, schema.num_classes()),
      schema.tracked.size(), [&round] { return round; },
      [this, id = job.job_id] { return CheckCancelled(id); }, sum_chunk_words);
  // Every collect recorded before it is sent and once complete; after a restart, replayed.
  SecureSumCountSource::Journal journal;
  journal.record_request = [this, id = job.job_id](uint64_t collect, const std::string& digest) {
    // No masks: the ring's first party draws them (and keeps them durably).
    return store_->RecordCollectRequest(id, collect, digest, "");
  };
  journal.record_sum = [this, id = job.job_id](uint64_t collect, const std::string& sum) {
    return store_->RecordCollectSum(id, collect, sum);
  };
  if (job.resume) {
    ASSIGN_OR_RETURN(journal.recorded, store_->Collects(job.job_id));
    spdlog::info("job={} replaying {} recorded secure sum(s) without the network", job.job_id,
                 journal.recorded.size());
  }
  source.set_journal(std::move(journal));
  source.set_share_group_sizes(job.ring.size() >= 3);
  source.set_view_log(job.view_log.get());
  source.set_observer(observer_);
  ASSIGN_OR_RETURN(const std::unique_ptr<crypto::SealKeyPair> leader_keys,
                   crypto::SealKeyPairFromPem(options_.seal_key_pem));
  ASSIGN_OR_RETURN(const std::unique_ptr<crypto::SealPublicKey> first_party_key,
                   PartySealKey(channel_, options_.ca_pem, job.ring.front()));
  ASSIGN_OR_RETURN(const std::unique_ptr<crypto::SealPublicKey> last_party_key,
                   PartySealKey(channel_, options_.ca_pem, job.ring.back()));
  source.set_sealing(options_.name, job.run_id, leader_keys.get(), first_party_key.get(),
                     last_party_key.get());
  common::EngineOptions engine_options;
  engine_options.score = spec.score();
  engine_options.beneficial = spec.beneficial();
  engine_options.suppression_token = spec.suppression_token();
  engine_options.numeric = common::NumericSplitFromSpec(spec);
  engine_options.on_step = [&](const fedanon::v1::SpecializationStep& step, size_t groups) {
    round = step.round();
    WarnIfError(
        store_->SetProgress(job.job_id, step.round(),
                            absl::StrCat(step.attribute(), " ", step.value()), job.elapsed()),
        job.job_id, "cannot record progress");
    spdlog::info("job={} round={} specialized {} {} ({} groups)", job.job_id, step.round(),
                 step.attribute(), step.value(), groups);
    observer_->RoundDone();
    Notify();
  };
  // The final check's ring (docs/threat-model.md): every data party re-checks `words` summed
  // counts around the ring without the leader.
  auto run_final_check = [&](uint64_t words) {
    FinalCheckRing ring;
    ring.channel = &channel;
    ring.job_id = job.job_id;
    ring.ring = job.ring;
    ring.round = round;
    ring.timeout = job.timeout;
    ring.check = [this, id = job.job_id] { return CheckCancelled(id); };
    ring.chunk_words = sum_chunk_words;
    return RunFinalCheck(ring, source.TakePendingUpdates(), words);
  };
  if (spec.recoding() == fedanon::v1::RECODING_LOCAL) {
    // Local recoding (leader/local_job.h): per-group secure sums, the final check, then the
    // released counts or the secure union.
    const double local_start = job.elapsed();
    ASSIGN_OR_RETURN(LocalRounds local,
                     RunLocalRounds(spec, schema, model, &source, job.view_log.get(), &round,
                                    std::move(engine_options.on_step)));
    const double local_union_start = job.elapsed();
    std::string local_check =
        "skipped: with two data parties the summed counts would reveal the other party's, so "
        "the parties did not re-check the final groups; their sizes rest on the leader's word "
        "(docs/threat-model.md)";
    if (job.ring.size() >= 3) {
      // Every party re-checks each final group's size and confidences on the summed counts.
      ASSIGN_OR_RETURN(
          const common::FinalCheckLayout layout,
          common::LocalFinalCheckLayout(model, schema, local.engine->final_groups().size()));
      RETURN_IF_ERROR(run_final_check(layout.words));
      local_check =
          absl::StrCat("passed at every data party: ", job.ring.size(), " parties re-checked ",
                       local.engine->final_groups().size(),
                       " local group(s) on their global counts (", layout.words, " words)");
    }
    // Integration as for global recoding: one secure sum of the released counts per (final
    // group, value combination) when the leader is the recipient and every released non-QID
    // value is declared (leader/local_job.h); otherwise the sealed-row secure union.
    if (job.recipient == options_.name && LocalReleasedCountsApply(*local.engine, schema)) {
      ASSIGN_OR_RETURN(
          const std::vector<uint64_t> counts,
          CollectLocalReleasedCounts(*local.engine, schema, &source, job.view_log.get(), round));
      const common::LocalRecoder& engine = *local.engine;
      RETURN_IF_ERROR(StoreResultOnce(job.job_id, [&](const JobStore::ResultWriter& write) {
        return WriteReleasedTableFromCounts(
            spec, schema, engine.final_groups().size(),
            [&](size_t g) {
              const std::vector<common::LocalValue>& key = engine.Key(engine.final_groups()[g]);
              std::vector<std::string> labels(key.size());
              for (size_t a = 0; a < key.size(); ++a) {
                labels[a] = engine.Label(static_cast<int>(a), key[a]);
              }
              return labels;
            },
            counts, engine.total_records(), write);
      }));
    } else {
      RETURN_IF_ERROR(RunSecureUnion(job, round, &channel));
    }
    return FinishJob(
        job, local.engine->total_records(),
        [&local](fedanon::v1::Report* r) { local.engine->FillReport(local.stop_reason, r); },
        source, round, local_start, local_union_start, local_check);
  }
  ASSIGN_OR_RETURN(auto engine, common::TopDownSpecializer::Create(&schema, &model, &hier, &source,
                                                                   std::move(engine_options)));
  const double rounds_start = job.elapsed();
  ASSIGN_OR_RETURN(std::string stop_reason, engine->Run());
  round = static_cast<uint32_t>(engine->steps().size() + 1);
  const double union_start = job.elapsed();

  // The final check (docs/threat-model.md): before any row or released count leaves a party,
  // every data party re-checks the signed privacy model on the global counts of the final cut,
  // summed around the ring without the leader. With two data parties the sum would reveal the
  // other party's counts: it is not run, and the group sizes rest on the leader's word.
  std::string final_check;
  if (job.ring.size() >= 3) {
    ASSIGN_OR_RETURN(const common::FinalCheckLayout layout,
                     common::BuildFinalCheckLayout(model, schema, hier, spec.suppression_token()));
    RETURN_IF_ERROR(run_final_check(layout.words));
    final_check = absl::StrCat("passed at every data party: ", job.ring.size(),
                               " parties re-checked ", layout.constraints.size(),
                               " constraint(s) on the global counts of the final cut (",
                               layout.words, " words)");
    spdlog::info("job={} round={} final check {}", job.job_id, round, final_check);
  } else {
    final_check =
        "skipped: with two data parties the summed counts would reveal the other party's, so "
        "the parties did not re-check the privacy model; the final group sizes rest on the "
        "leader's word (docs/threat-model.md)";
    spdlog::warn("job={} round={} final check {}", job.job_id, round, final_check);
  }

  // Integration. When every released non-QID attribute has a declared domain, the released
  // table is a multiset over public values: one more secure sum gives the leader (recipient) the
  // count of every (group, values) combination and nothing else. Otherwise a secure set union of
  // the local anonymous tables (rows sealed for the recipient) travels the ring. A recipient
  // party goes last, so that it only ever sees the complete, shuffled set.
  constexpr uint64_t kMaxReleasedWords = 50'000'000;
  const std::vector<std::vector<common::NodeIndex>> final_groups = engine->GroupKeys();
  const uint64_t combinations = schema.ValueCombinations();
  if (job.recipient == options_.name && schema.all_values_declared &&
      combinations <= kMaxReleasedWords &&  // checked: the product below cannot overflow
      final_groups.size() * combinations <= kMaxReleasedWords) {
    common::StatsRequest released;
    released.released_groups = final_groups;
    released.released_combinations = combinations;
    ASSIGN_OR_RETURN(std::vector<uint64_t> counts, source.Collect(released));
    RETURN_IF_ERROR(StoreResultOnce(job.job_id, [&](const JobStore::ResultWriter& write) {
      return WriteReleasedTableFromCounts(
          spec, schema, final_groups.size(),
          [&](size_t g) {
            std::vector<std::string> labels(hier.size());
            for (size_t a = 0; a < hier.size(); ++a) {
              labels[a] = hier[a].Label(final_groups[g][a], spec.suppression_token());
            }
            return labels;
          },
          counts, engine->total_records(), write);
    }));
  } else {
    RETURN_IF_ERROR(RunSecureUnion(job, round, &channel));
  }
  return FinishJob(
      job, engine->total_records(),
      [&](fedanon::v1::Report* r) { engine->FillReport(stop_reason, r); }, source, round,
      rounds_start, union_start, final_check);
}

absl::Status Leader::RunSecureUnion(const JobRun& job, uint32_t round,
                                    common::PartyChannel* channel) {
  std::vector<std::string> union_ring;
  for (const auto& p : job.ring) {
    if (p != job.recipient) union_ring.push_back(p);
  }
  if (job.recipient != options_.name) union_ring.push_back(job.recipient);
  std::vector<std::string> header;
  for (const auto& a : job.request.spec().attributes()) {
    if (a.role() != fedanon::v1::ROLE_ID) header.push_back(a.name());
  }
  // The set travels whole (protocol 1.1) or in chunks under the message limit (1.2): fetched
  // from each hop and handed to the next before its step (leader/payload_relay.h).
  const PayloadRelay relay(channel, job.job_id,
                           [this, id = job.job_id] { return CheckCancelled(id); });
  CarriedPayload carried;
  for (size_t i = 0; i < union_ring.size(); ++i) {
    RETURN_IF_ERROR(CheckCancelled(job.job_id));
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job.job_id);
    msg.set_round(round);
    auto* step = msg.mutable_union_step();
    RETURN_IF_ERROR(
        relay.Hand(carried, round, job.timeout, step->mutable_list(), step->mutable_list_ref()));
    carried = CarriedPayload();
    step->set_recipient(job.recipient);
    step->set_next(i + 1 < union_ring.size() ? union_ring[i + 1] : job.recipient);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply,
                     channel->Call(union_ring[i], msg, job.timeout));
    if (!reply.has_union_step() ||
        (!reply.union_step().has_list() && reply.union_step().list_ref().stream().empty())) {
      return absl::InternalError(absl::StrCat("party '", union_ring[i], "' sent no union reply"));
    }
    ASSIGN_OR_RETURN(carried,
                     relay.Fetch(union_ring[i], round, job.timeout, reply.union_step().list(),
                                 reply.union_step().list_ref()));
  }
  if (job.recipient == options_.name) return StoreUnionAtLeader(job, round, header, carried);
  fedanon::v1::LeaderMessage msg;
  msg.set_job_id(job.job_id);
  msg.set_round(round);
  auto* step = msg.mutable_union_step();
  RETURN_IF_ERROR(
      relay.Hand(carried, round, job.timeout, step->mutable_list(), step->mutable_list_ref()));
  step->set_recipient(job.recipient);
  step->set_deliver(true);
  for (const auto& h : header) step->add_header(h);
  return channel->Call(job.recipient, msg, job.timeout).status();
}

absl::Status Leader::StoreUnionAtLeader(const JobRun& job, uint32_t round,
                                        const std::vector<std::string>& header,
                                        const CarriedPayload& carried) {
  ASSIGN_OR_RETURN(auto keys, crypto::SealKeyPairFromPem(options_.seal_key_pem));
  // The last party of the union (the ring without the recipient, which is the leader here).
  const std::string& last = job.ring.back();
  ASSIGN_OR_RETURN(auto last_key, PartySealKey(channel_, options_.ca_pem, last));
  fedanon::v1::UnionList list;
  if (!carried.chunked()) {
    ASSIGN_OR_RETURN(list, common::OpenUnionList(*keys, job.job_id, job.run_id, round,
                                                 options_.name, last, *last_key, carried.whole));
  } else {
    if (carried.sender() != last) {
      return absl::PermissionDeniedError(absl::StrCat("the union list must come from '", last,
                                                      "', not from '", carried.sender(), "'"));
    }
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenCarriedAtLeader(carried, *keys, *last_key, job.job_id, job.run_id, round,
                                         options_.name, "union-list"));
    if (!list.ParseFromString(bytes)) {
      return absl::InvalidArgumentError("the union list does not parse");
    }
  }
  ASSIGN_OR_RETURN(
      std::vector<std::string> rows,
      common::OpenUnionRows(*keys, job.job_id, job.run_id, round, options_.name, list.rows()));
  // The released table itself is the job's result; the view log records its size.
  RETURN_IF_ERROR(job.view_log->Append(round, kViewReleasedRows, "", false, {rows.size()}));
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows.size()));
  const std::vector<std::string_view> header_views(header.begin(), header.end());
  return StoreResultOnce(job.job_id, [&](const JobStore::ResultWriter& write) {
    return WriteTableBuffered(
        common::CsvLine(header_views), perm.size(),
        [&](size_t i) -> std::string_view { return rows[perm[i]]; }, write);
  });
}

absl::Status Leader::RunVertical(const JobRun& job) {
  const fedanon::v1::SubmitJobRequest& request = job.request;
  VerticalJobOptions options;
  options.job_id = job.job_id;
  options.run_id = job.run_id;
  options.ring = job.ring;
  options.recipient = job.recipient;
  options.leader_name = options_.name;
  options.leader_seal_key_pem = options_.seal_key_pem;
  options.ca_pem = options_.ca_pem;
  for (const auto& a : request.spec().attributes()) {
    if (a.role() != fedanon::v1::ROLE_ID) options.header.push_back(a.name());
  }
  options.timeout = job.timeout;
  options.id_matching_timeout = std::max(job.timeout * 20, absl::Minutes(20));
  // ID matching in batches; a batch travels inline: its points (65 bytes and 2 of framing each)
  // fit half the message limit.
  options.id_batch_ids = static_cast<uint32_t>(std::min<uint64_t>(
      options_.id_batch_ids == 0 ? LeaderOptions::kDefaultIdBatchIds : options_.id_batch_ids,
      std::max<uint64_t>(1, common::ChunkBytesForLimit(options_.max_message_bytes) / (2 * 67))));
  options.check_cancelled = [this, id = job.job_id] { return CheckCancelled(id); };
  options.view_log = job.view_log.get();
  options.observer = observer_;
  options.local_recoding = request.spec().recoding() == fedanon::v1::RECODING_LOCAL;
  options.local_judges = common::VerticalLocalJudges(request.spec());
  std::vector<std::string> qid_names;  // QID attributes in spec order (the engine's indices)
  for (const auto& a : request.spec().attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID) qid_names.push_back(a.name());
    if (a.role() == fedanon::v1::ROLE_QID) options.qid_names.push_back(a.name());
    if (a.role() == fedanon::v1::ROLE_QID) options.attribute_party[a.name()] = a.party();
  }
  options.on_step = [&](uint32_t round, const std::string& owner, uint32_t attr) {
    const std::string what =
        absl::StrCat(attr < qid_names.size() ? qid_names[attr] : "?", " (", owner, ")");
    WarnIfError(store_->SetProgress(job.job_id, round, what, job.elapsed()), job.job_id,
                "cannot record progress");
    spdlog::info("job={} round={} specialized {}", job.job_id, round, what);
    observer_->RoundDone();
    Notify();
  };
  options.on_wave = [&](uint32_t wave, size_t groups_split) {
    WarnIfError(store_->SetProgress(
                    job.job_id, wave,
                    absl::StrCat("local wave ", wave, ": ", groups_split, " group(s) split"),
                    job.elapsed()),
                job.job_id, "cannot record progress");
    observer_->RoundDone();
    Notify();
  };
  // Durable: every reply recorded before it is used; after a restart, replayed without the
  // network up to where the job stopped (leader/vertical_job.h). A party whose connection drops
  // is waited for and asked the same request again.
  options.record_reply = [this, id = job.job_id](uint64_t index, const std::string& key,
                                                 const std::string& reply) {
    return store_->RecordVerticalReply(id, index, key, reply);
  };
  if (job.resume) {
    ASSIGN_OR_RETURN(const std::vector<RecordedCollect> recorded, store_->Collects(job.job_id));
    for (const RecordedCollect& r : recorded) options.recorded.emplace_back(r.digest, r.sum);
    ASSIGN_OR_RETURN(const std::string logged, ViewLog::Read(options_.data_dir, job.job_id));
    for (absl::string_view line : absl::StrSplit(logged, '\n', absl::SkipEmpty())) {
      options.logged_before.emplace_back(line);
    }
    spdlog::info("job={} replaying {} recorded vertical repl(ies) without the network", job.job_id,
                 options.recorded.size());
  }
  RejoiningChannel channel(channel_, options_.resume_timeout,
                           [this, id = job.job_id] { return CheckCancelled(id); });
  const double rounds_start = job.elapsed();
  if (job.recipient == options_.name) {
    // The joined table goes to the result file piece by piece, never whole in memory.
    options.store_result =
        [this, id = job.job_id](
            const std::function<absl::Status(const JobStore::ResultWriter&)>& produce) {
          return StoreResultOnce(id, produce);
        };
  }
  ASSIGN_OR_RETURN(VerticalJobResult result, RunVerticalJob(&channel, options));
  fedanon::v1::Report report = result.report;
  if (std::find(job.ring.begin(), job.ring.end(), job.recipient) != job.ring.end()) {
    report.add_warnings(absl::StrCat(
        "recipient '", job.recipient,
        "' holds data of this job (release: allow_data_holding_recipient): it knows the secret "
        "release order, so it can link every released row to its own identified record, and "
        "thereby see the other parties' released values of its own people"));
  }
  if (job.resumes > 0) {
    report.add_warnings(absl::StrCat(
        "resumed ", job.resumes, " time(s) after a leader restart (", result.replayed_calls,
        " recorded repl(ies) replayed from the job store this time; timings count from the last "
        "resume; the job's audit trail names each resume and its round)"));
  }
  report.set_job_name(request.spec().name());
  report.set_version(common::VersionLine("fedanon-leader"));
  report.set_records_in(result.common_records);
  report.set_records_out(result.common_records);
  (*report.mutable_timings_seconds())["validate"] = rounds_start;
  (*report.mutable_timings_seconds())["id_matching"] = result.id_matching_seconds;
  (*report.mutable_timings_seconds())["rounds"] = result.rounds_seconds;
  (*report.mutable_timings_seconds())["union"] = result.release_seconds;
  (*report.mutable_timings_seconds())["total"] = job.elapsed();
  RETURN_IF_ERROR(store_->SetReport(job.job_id, report));
  RETURN_IF_ERROR(store_->SetProgress(job.job_id, result.rounds, "done", job.elapsed()));
  EndJobAtParties(job);
  return absl::OkStatus();
}

std::vector<std::string> Leader::EndJobAtParties(const JobRun& job, bool success,
                                                 const std::string& reason) {
  // Best effort: the job's outcome is recorded already; a party that misses EndJob is logged (it
  // drops the job when it holds too many, party/party_agent.h).
  std::vector<std::string> away;
  for (const auto& party : job.ring) {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job.job_id);
    msg.mutable_end_job()->set_success(success);
    msg.mutable_end_job()->set_reason(reason);
    const absl::Status told = channel_->Call(party, msg, job.timeout).status();
    WarnIfError(told, job.job_id,
                absl::StrCat("party '", party, "' did not acknowledge the end of the job"));
    if (absl::IsUnavailable(told)) away.push_back(party);
  }
  return away;
}

absl::Status Leader::FinishJob(const JobRun& job, uint64_t total_records,
                               const std::function<void(fedanon::v1::Report*)>& fill_result,
                               const SecureSumCountSource& source, uint32_t round,
                               double rounds_start, double union_start,
                               const std::string& final_check) {
  fedanon::v1::Report report;
  report.set_job_name(job.request.spec().name());
  report.set_version(common::VersionLine("fedanon-leader"));
  report.set_records_in(total_records);
  report.set_records_out(total_records);
  fill_result(&report);
  (*report.mutable_timings_seconds())["validate"] = rounds_start;
  (*report.mutable_timings_seconds())["rounds"] = union_start - rounds_start;
  (*report.mutable_timings_seconds())["union"] = job.elapsed() - union_start;
  (*report.mutable_timings_seconds())["total"] = job.elapsed();
  report.set_secure_sums(source.stats().collects);
  report.set_bytes_to_parties(source.stats().bytes_sent);
  report.set_bytes_from_parties(source.stats().bytes_received);
  report.set_final_check(final_check);
  if (absl::StartsWith(final_check, "skipped")) {
    report.add_warnings(absl::StrCat("final check ", final_check));
  }
  if (job.resumes > 0) {
    report.add_warnings(absl::StrCat(
        "resumed ", job.resumes, " time(s) after a leader restart (", source.replayed(),
        " secure sum(s) replayed from the job store this time; timings count from the last "
        "resume; the job's audit trail names each resume and its round)"));
  }
  RETURN_IF_ERROR(store_->SetReport(job.job_id, report));
  RETURN_IF_ERROR(store_->SetProgress(job.job_id, round, "done", job.elapsed()));
  // From here on (the report stored) a restarted leader records the job done and tells the
  // parties again instead of resuming it (JobStore::RecoverForResume).
  EndJobAtParties(job);
  return absl::OkStatus();
}

}  // namespace fedanon::leader
