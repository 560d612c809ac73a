#include "leader/vertical_driver.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/payload_chunks.h"
#include "leader/call_recorder.h"
#include "leader/rejoining_channel.h"
#include "leader/vertical_job.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

// The protocol's options from the signed job: ring, recipient, keys, released header, QID owners,
// timeouts, the ID batches' size, local recoding's judges, progress reported to the host, and
// every reply recorded through `recorder`.
VerticalJobOptions OptionsFor(const JobHost& host, const JobRun& job,
                              const CallRecorder& recorder) {
  const LeaderOptions& leader = *host.options;
  const fedanon::v1::JobSpec& spec = job.request.spec();
  VerticalJobOptions options;
  options.job_id = job.job_id;
  options.run_id = job.run_id;
  options.ring = job.ring;
  options.recipient = job.recipient;
  options.leader_name = leader.name;
  options.leader_seal_key_pem = leader.seal_key_pem;
  options.ca_pem = leader.ca_pem;
  for (const auto& a : spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_ID) options.header.push_back(a.name());
    if (a.role() != fedanon::v1::ROLE_QID) continue;
    options.qid_names.push_back(a.name());  // spec order: the engine's attribute indices
    options.attribute_party[a.name()] = a.party();
  }
  options.timeout = job.timeout;
  options.id_matching_timeout = std::max(job.timeout * 20, absl::Minutes(20));
  // ID matching in batches; a batch travels inline: its points (65 bytes and 2 of framing each)
  // fit half the message limit.
  options.id_batch_ids = static_cast<uint32_t>(std::min<uint64_t>(
      leader.id_batch_ids == 0 ? LeaderOptions::kDefaultIdBatchIds : leader.id_batch_ids,
      std::max<uint64_t>(1,
                         wire::ChunkBytesForLimit(leader.max_message_bytes) / (uint64_t{2} * 67))));
  options.max_records_per_party = spec::MaxRecordsPerParty(spec);
  options.check_cancelled = host.CancelCheck(job.job_id);
  options.view_log = job.view_log.get();
  options.observer = host.observer;
  options.local_recoding = spec.recoding() == fedanon::v1::RECODING_LOCAL;
  options.local_judges = spec::VerticalLocalJudges(spec);
  options.on_step = [&host, &job, qid_names = options.qid_names](
                        uint32_t round, const std::string& owner, uint32_t attr) {
    const std::string what =
        absl::StrCat(attr < qid_names.size() ? qid_names[attr] : "?", " (", owner, ")");
    host.RoundDone(job, round, what);
    spdlog::info("job={} round={} specialized {}", job.job_id, round, what);
  };
  options.on_wave = [&host, &job](uint32_t wave, size_t groups_split) {
    host.RoundDone(job, wave,
                   absl::StrCat("local wave ", wave, ": ", groups_split, " group(s) split"));
  };
  // Durable: every reply recorded before it is used (leader/vertical_job.h).
  options.record_reply = recorder.CompleteCallRecorder();
  if (job.recipient == leader.name) {
    // The joined table goes to the result file piece by piece, never whole in memory.
    options.store_result =
        [&host, id = job.job_id](
            const std::function<absl::Status(const JobStore::ResultWriter&)>& produce) {
          return host.StoreResultOnce(id, produce);
        };
  }
  return options;
}

// After a restart: the recorded replies, replayed without the network up to where the job
// stopped, and the view log's lines written before (not logged twice).
absl::Status AddReplay(const JobHost& host, const JobRun& job, const CallRecorder& recorder,
                       VerticalJobOptions* options) {
  ASSIGN_OR_RETURN(options->recorded, recorder.Load());
  ASSIGN_OR_RETURN(const std::string logged, ViewLog::Read(host.options->data_dir, job.job_id));
  for (absl::string_view line : absl::StrSplit(logged, '\n', absl::SkipEmpty())) {
    options->logged_before.emplace_back(line);
  }
  spdlog::info("job={} replaying {} recorded vertical repl(ies) without the network", job.job_id,
               options->recorded.size());
  return absl::OkStatus();
}

fedanon::v1::Report ReportOf(const JobRun& job, const VerticalJobResult& result,
                             double rounds_start) {
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
  report.set_job_name(job.request.spec().name());
  report.set_version(base::VersionLine("fedanon-leader"));
  report.set_records_in(result.common_records);
  report.set_records_out(result.common_records);
  (*report.mutable_timings_seconds())["validate"] = rounds_start;
  (*report.mutable_timings_seconds())["id_matching"] = result.id_matching_seconds;
  (*report.mutable_timings_seconds())["rounds"] = result.rounds_seconds;
  (*report.mutable_timings_seconds())["union"] = result.release_seconds;
  (*report.mutable_timings_seconds())["total"] = job.elapsed();
  return report;
}

}  // namespace

absl::Status RunVerticalDriver(const JobHost& host, const JobRun& job) {
  const CallRecorder recorder(host.store, job.job_id);
  VerticalJobOptions options = OptionsFor(host, job, recorder);
  if (job.resume) RETURN_IF_ERROR(AddReplay(host, job, recorder, &options));
  // A party whose connection drops is waited for and asked the same request again.
  RejoiningChannel channel(host.channel, host.options->resume_timeout,
                           host.CancelCheck(job.job_id));
  channel.set_waiting_observer(host.WaitingObserver(job.job_id));
  const double rounds_start = job.elapsed();
  ASSIGN_OR_RETURN(const VerticalJobResult result, RunVerticalJob(&channel, options));
  RETURN_IF_ERROR(host.store->SetReport(job.job_id, ReportOf(job, result, rounds_start)));
  RETURN_IF_ERROR(host.store->SetProgress(job.job_id, result.rounds, "done", job.elapsed()));
  host.EndJobAtParties(job);
  return absl::OkStatus();
}

}  // namespace fedanon::leader
