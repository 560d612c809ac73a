#include "leader/job_run.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/certificates.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

std::function<absl::Status()> JobHost::CancelCheck(const std::string& job_id) const {
  return [check = check_cancelled, job_id] { return check(job_id); };
}

std::function<void(const std::string&, bool)> JobHost::WaitingObserver(
    const std::string& job_id) const {
  return [tell = waiting, job_id](const std::string& party, bool is_waiting) {
    if (tell) tell(job_id, party, is_waiting);
  };
}

void JobHost::RoundDone(const JobRun& job, uint32_t round, const std::string& what) const {
  WarnIfError(store->SetProgress(job.job_id, round, what, job.elapsed()), job.job_id,
              "cannot record progress");
  observer->RoundDone();
  notify();
}

absl::Status JobHost::StoreResultOnce(
    const std::string& job_id,
    const std::function<absl::Status(const JobStore::ResultWriter&)>& produce) const {
  ASSIGN_OR_RETURN(const bool stored, store->HasResult(job_id));
  if (stored) {
    spdlog::info("job={} its released table was stored before the restart; kept as it is", job_id);
    return absl::OkStatus();
  }
  return store->StoreResultStreamed(job_id, produce);
}

absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> JobHost::PartySealKey(
    const std::string& party) const {
  for (const auto& p : channel->Parties()) {
    if (p.name == party) {
      return crypto::VerifiedSealKey(p.seal_cert_pem, options->ca_pem,
                                     {crypto::Role::kParty, party});
    }
  }
  return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
}

void JobHost::EndJobAtParties(const JobRun& job, bool success, const std::string& reason) const {
  std::vector<std::string> away;
  for (const auto& party : job.ring) {
    const absl::Status told =
        TellJobEnded(channel, party, job.job_id, success, reason, job.timeout);
    if (absl::IsUnavailable(told) || absl::IsDeadlineExceeded(told)) away.push_back(party);
  }
  if (!away.empty() && tell_later) tell_later(job.job_id, away, success, reason);
}

absl::Status TellJobEnded(wire::PartyChannel* channel, const std::string& party,
                          const std::string& job_id, bool success, const std::string& reason,
                          absl::Duration timeout) {
  fedanon::v1::LeaderMessage msg;
  msg.set_job_id(job_id);
  msg.mutable_end_job()->set_success(success);
  msg.mutable_end_job()->set_reason(reason);
  absl::Status told = channel->Call(party, msg, timeout).status();
  WarnIfError(told, job_id,
              absl::StrCat("party '", party, "' did not acknowledge the end of the job"));
  return told;
}

void WarnIfError(const absl::Status& status, const std::string& job_id, std::string_view what) {
  if (!status.ok()) spdlog::warn("job={} {}: {}", job_id, what, status.ToString());
}

}  // namespace fedanon::leader
