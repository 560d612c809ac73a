#include "party/party_agent.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/printable.h"
#include "common/base/status_macros.h"
#include "common/spec/job_spec_loader.h"
#include "crypto/certificates.h"
#include "party/job_journal.h"
#include "party/job_state.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

absl::StatusOr<std::unique_ptr<PartyAgent>> PartyAgent::Create(PartyAgentOptions options) {
  RETURN_IF_ERROR(crypto::ValidateParticipantName(options.name));
  if (options.seal_key_pem.empty() || options.seal_cert_pem.empty() || options.ca_pem.empty()) {
    return absl::InvalidArgumentError("a party needs the CA certificate and its sealing key pair");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const SealKeyRing::Entry> seal,
                   SealKeyRing::MakeEntry(options.seal_cert_pem, options.seal_key_pem,
                                          options.sign_cert_pem, options.sign_key_pem));
  if (options.ledger_path.empty() && !options.output_dir.empty()) {
    options.ledger_path = (std::filesystem::path(options.output_dir) / "runs.ledger").string();
  }
  if (options.audit_dir.empty() && !options.ledger_path.empty()) {
    options.audit_dir = std::filesystem::path(options.ledger_path).parent_path().string();
  }
  if (options.state_dir.empty() && !options.ledger_path.empty()) {
    options.state_dir = std::filesystem::path(options.ledger_path).parent_path().string();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RunLedger> ledger, RunLedger::Open(options.ledger_path));
  return std::unique_ptr<PartyAgent>(
      new PartyAgent(std::move(options), std::move(seal), std::move(ledger)));
}

PartyAgent::PartyAgent(PartyAgentOptions options, std::shared_ptr<const SealKeyRing::Entry> seal,
                       std::unique_ptr<RunLedger> ledger)
    : options_(std::move(options)),
      seal_ring_(std::move(seal), options_.retired_seal_grace),
      authorizer_(AuthorizationOptions{options_.name, options_.ca_pem, options_.admins,
                                       options_.revocation_check}),
      ledger_(std::move(ledger)),
      audit_(options_.audit_dir) {}
PartyAgent::~PartyAgent() = default;

std::string PartyAgent::seal_cert_pem() const { return seal_ring_.current()->cert_pem; }
std::string PartyAgent::sign_cert_pem() const { return seal_ring_.current()->sign_cert_pem; }

absl::StatusOr<bool> PartyAgent::UpdateSettings(const PartyLiveSettings& settings) {
  if (settings.ca_pem.empty()) return absl::InvalidArgumentError("an empty CA bundle");
  ASSIGN_OR_RETURN(std::shared_ptr<const SealKeyRing::Entry> seal,
                   SealKeyRing::MakeEntry(settings.seal_cert_pem, settings.seal_key_pem,
                                          settings.sign_cert_pem, settings.sign_key_pem));
  RETURN_IF_ERROR(crypto::VerifiedSealKey(seal->cert_pem, settings.ca_pem,
                                          {crypto::Role::kParty, options_.name})
                      .status());
  if (!seal->sign_cert_pem.empty()) {
    RETURN_IF_ERROR(crypto::VerifiedStatementKey(seal->sign_cert_pem, settings.ca_pem,
                                                 {crypto::Role::kParty, options_.name})
                        .status());
  }
  authorizer_.Update(settings.ca_pem, settings.admins);
  return seal_ring_.Rotate(std::move(seal), absl::Now());
}

std::shared_ptr<PartyAgent::JobSlot> PartyAgent::AcquireSlot(const std::string& job_id) {
  std::shared_ptr<JobSlot> dropped;  // destroyed (with its tables) after the lock is released
  absl::MutexLock lock(&jobs_mu_);
  std::shared_ptr<JobSlot>& slot = jobs_[job_id];
  if (slot == nullptr) slot = std::make_shared<JobSlot>();
  ++slot->users;
  slot->last_used = ++use_counter_;
  std::shared_ptr<JobSlot> result = slot;
  if (jobs_.size() > kMaxHeldJobs) {
    // A job the leader never ended (it failed or restarted before EndJob): the least recently
    // used one that no request is using goes.
    auto oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->second->users == 0 &&
          (oldest == jobs_.end() || it->second->last_used < oldest->second->last_used)) {
        oldest = it;
      }
    }
    if (oldest != jobs_.end()) {
      spdlog::warn(
          "job={} dropped: the party holds more than {} jobs and the leader used this "
          "one least recently",
          oldest->first, kMaxHeldJobs);
      dropped = std::move(oldest->second);
      jobs_.erase(oldest);
    }
  }
  return result;
}

void PartyAgent::ReleaseSlot(const std::string& job_id, JobSlot& slot) {
  absl::MutexLock lock(&jobs_mu_);
  --slot.users;
  auto it = jobs_.find(job_id);
  if (slot.users == 0 && slot.job == nullptr && it != jobs_.end() && it->second.get() == &slot) {
    jobs_.erase(it);
  }
}

size_t PartyAgent::held_jobs() const {
  absl::MutexLock lock(&jobs_mu_);
  return jobs_.size();
}

PartyMessage PartyAgent::Handle(const LeaderMessage& request) {
  const std::shared_ptr<JobSlot> held = AcquireSlot(request.job_id());
  JobSlot& slot = *held;
  absl::MutexLock lock(&slot.mu);
  PartyMessage out = HandleLocked(slot, request);
  ReleaseSlot(request.job_id(), slot);
  return out;
}

PartyMessage PartyAgent::HandleLocked(JobSlot& slot, const LeaderMessage& request) {
  absl::StatusOr<PartyMessage> reply = Dispatch(slot, request);
  if (!reply.ok() && slot.job) {
    // Nothing of a failed step is recorded (nor left for the next answer's record).
    slot.job->fresh_answer = false;
    slot.job->journal_extra.clear();
  }
  if (!reply.ok()) {
    PartyMessage error;
    error.set_request_id(request.request_id());
    error.mutable_error()->set_code(static_cast<int>(reply.status().code()));
    error.mutable_error()->set_message(std::string(reply.status().message()));
    spdlog::warn("job={} round={} request failed: {}", request.job_id(), request.round(),
                 std::string(reply.status().message()));
    // The refusal leaves too: recorded for a job whose start was recorded.
    if (audit_.Exists(request.job_id())) {
      absl::Status st = audit_.Append(
          request.job_id(),
          {.round = request.round(),
           .kind = kAuditError,
           .form = kAuditPlaintext,
           .to = {slot.job && slot.job->job_id == request.job_id() ? slot.job->leader : "leader"},
           .texts = {{"error", std::string(reply.status().message())}}});
      if (!st.ok()) {
        spdlog::error("job={} cannot record an error: {}", request.job_id(),
                      std::string(st.message()));
      }
    }
    return error;
  }
  if (slot.job && slot.job->job_id == request.job_id() && slot.job->fresh_answer) {
    // Durable before it leaves: a restarted party answers this request again with these bytes.
    slot.job->fresh_answer = false;
    const std::string extra = std::exchange(slot.job->journal_extra, "");
    if (slot.job->journal) {
      const absl::Status recorded = slot.job->journal->Append(
          {request.SerializeAsString(), reply->SerializeAsString(), extra});
      if (!recorded.ok()) {
        // An answer that could not be made durable does not leave, and the party stops taking
        // part in the job (it could not keep "one request, one answer" across a restart).
        spdlog::error(
            "job={} round={} cannot record the job's durable state: {}; the party "
            "leaves the job",
            request.job_id(), request.round(), std::string(recorded.message()));
        slot.job.reset();
        PartyMessage error;
        error.set_request_id(request.request_id());
        error.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kDataLoss));
        error.mutable_error()->set_message(
            absl::StrCat("cannot record the job's durable state: ", recorded.message()));
        return error;
      }
    }
  }
  reply->set_request_id(request.request_id());
  return *std::move(reply);
}

namespace {

// A step of a job the slot holds: the job, of the partitioning the step is for.
absl::Status RequireJob(const std::unique_ptr<JobState>& job, const LeaderMessage& request) {
  if (!job || job->job_id != request.job_id()) {
    // Also a party restarted without the job's state file: it cannot resume (named reason).
    return absl::FailedPreconditionError(kNoJobState);
  }
  return absl::OkStatus();
}
absl::Status RequireHorizontal(const std::unique_ptr<JobState>& job, const LeaderMessage& request) {
  RETURN_IF_ERROR(RequireJob(job, request));
  if (!job->horizontal || !job->horizontal->tables.loaded()) {
    return absl::FailedPreconditionError("no prepared horizontal job with this id");
  }
  return absl::OkStatus();
}
absl::Status RequireVertical(const std::unique_ptr<JobState>& job, const LeaderMessage& request) {
  RETURN_IF_ERROR(RequireJob(job, request));
  if (!job->vertical) return absl::FailedPreconditionError("no prepared vertical job with this id");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PartyMessage> PartyAgent::Dispatch(JobSlot& slot, const LeaderMessage& request) {
  PartyMessage reply;
  const bool job_step = request.body_case() == LeaderMessage::kSumStep ||
                        request.body_case() == LeaderMessage::kSumUnmask ||
                        request.body_case() == LeaderMessage::kSumBinCheck ||
                        request.body_case() == LeaderMessage::kUnionStep ||
                        request.body_case() == LeaderMessage::kFinalCheck ||
                        request.body_case() == LeaderMessage::kVertical ||
                        request.body_case() == LeaderMessage::kChunkGet ||
                        request.body_case() == LeaderMessage::kChunkPut;
  if (job_step && !slot.job) {
    // After a restart of this party: the job goes on from its durable state, if it has one.
    RETURN_IF_ERROR(ReloadJob(slot, request.job_id()));
  }
  // From the first answer computed from its data on, the run counts as a release of this party's
  // table whatever the leader later says (a released table may be rebuilt from sums, rows or
  // columns); only a job that fails before that frees its release (party policy max_releases).
  const bool data_step = request.body_case() == LeaderMessage::kSumStep ||
                         request.body_case() == LeaderMessage::kSumUnmask ||
                         request.body_case() == LeaderMessage::kSumBinCheck ||
                         request.body_case() == LeaderMessage::kUnionStep ||
                         request.body_case() == LeaderMessage::kVertical ||
                         request.body_case() == LeaderMessage::kFinalCheck;
  if (data_step && slot.job && slot.job->job_id == request.job_id() && !slot.job->released) {
    RETURN_IF_ERROR(ledger_->MarkReleased(slot.job->job_id));
    slot.job->released = true;
  }
  switch (request.body_case()) {
    case LeaderMessage::kPing:
      reply.mutable_pong()->set_echoed_unix_nanos(request.ping().sent_unix_nanos());
      return reply;
    case LeaderMessage::kPrepare:
      return HandlePrepare(slot, request);
    case LeaderMessage::kSumStep:
      RETURN_IF_ERROR(RequireHorizontal(slot.job, request));
      return slot.job->horizontal->sum.Step(request);
    case LeaderMessage::kSumUnmask:
      RETURN_IF_ERROR(RequireHorizontal(slot.job, request));
      return slot.job->horizontal->sum.Unmask(request);
    case LeaderMessage::kSumBinCheck:
      RETURN_IF_ERROR(RequireHorizontal(slot.job, request));
      return slot.job->horizontal->sum.BinCheck(request);
    case LeaderMessage::kUnionStep:
      RETURN_IF_ERROR(RequireHorizontal(slot.job, request));
      return slot.job->horizontal->secure_union.Step(request);
    case LeaderMessage::kFinalCheck:
      RETURN_IF_ERROR(RequireHorizontal(slot.job, request));
      return slot.job->horizontal->final_check.Step(request);
    case LeaderMessage::kVertical:
      RETURN_IF_ERROR(RequireVertical(slot.job, request));
      return slot.job->vertical->Handle(request);
    case LeaderMessage::kChunkGet:
      RETURN_IF_ERROR(RequireJob(slot.job, request));
      return slot.job->transfer.ChunkGet(request);
    case LeaderMessage::kChunkPut:
      RETURN_IF_ERROR(RequireJob(slot.job, request));
      // Durable for every job: a restarted party still has the chunks when the step naming them
      // comes (a vertical step, or a hop or delivery of the secure union).
      return slot.job->transfer.ChunkPut(request, /*durable=*/true);
    case LeaderMessage::kEndJob:
      return HandleEndJob(slot, request);
    default:
      return absl::InvalidArgumentError("unknown request");
  }
}

absl::StatusOr<PartyMessage> PartyAgent::HandleEndJob(JobSlot& slot, const LeaderMessage& request) {
  PartyMessage reply;
  if (audit_.Exists(request.job_id())) {
    RETURN_IF_ERROR(audit_.Append(
        request.job_id(),
        {.round = request.round(),
         .kind = kAuditJobEnd,
         .form = kAuditPlaintext,
         .to = {slot.job && slot.job->job_id == request.job_id() ? slot.job->leader : "leader"},
         .texts = {{"success", request.end_job().success() ? "true" : "false"},
                   {"reason", request.end_job().reason()}}}));
  }
  if (slot.job && slot.job->job_id == request.job_id()) {
    spdlog::info("job={} ended: {}", slot.job->job_id, base::Printable(request.end_job().reason()));
    slot.job.reset();
  }
  // Its durable state goes with it (also when this party restarted and never reloaded it).
  if (!options_.state_dir.empty() && base::ValidateJobId(request.job_id()).ok()) {
    RETURN_IF_ERROR(JobJournal::Remove(options_.state_dir, request.job_id()));
  }
  // A failed run no longer counts as a release of the table (party policy max_releases),
  // unless this party already let its rows go (the ledger remembers; RunLedger::Finish).
  RETURN_IF_ERROR(ledger_->Finish(request.job_id(), request.end_job().success()));
  reply.mutable_pong();
  return reply;
}

}  // namespace fedanon::party
