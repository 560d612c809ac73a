#include "server/admin/admin_client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "server/runtime/config.h"
#include "server/runtime/status_convert.h"
#include "server/runtime/transport.h"

namespace fedanon::admin {
namespace {

namespace fs = std::filesystem;
using fedanon::v1::JobInfo;

bool LooksLikeTlsFailure(const std::string& message) {
  const std::string lower = absl::AsciiStrToLower(message);
  return absl::StrContains(lower, "ssl") || absl::StrContains(lower, "handshake") ||
         absl::StrContains(lower, "certificate") || absl::StrContains(lower, "tlsv1") ||
         absl::StrContains(lower, "tls ");
}

std::string FormatSeconds(double seconds) {
  if (seconds < 10) return absl::StrFormat("%.2f s", seconds);
  if (seconds < 600) return absl::StrFormat("%.1f s", seconds);
  return absl::StrFormat("%.0f min", seconds / 60);
}

}  // namespace

absl::Status DescribeAdminError(const grpc::Status& status, const std::string& leader_address) {
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      if (message == "leader shutting down") {
        return absl::UnavailableError(
            absl::StrCat("the leader at ", leader_address, " is shutting down"));
      }
      if (LooksLikeTlsFailure(message)) {
        return absl::UnavailableError(absl::StrCat(
            "TLS handshake with the leader at ", leader_address,
            " failed (the leader rejected this certificate, or the leader's certificate is not "
            "from this federation's CA or does not name ",
            leader_address, "): ", message));
      }
      return absl::UnavailableError(
          absl::StrCat("cannot reach the leader at ", leader_address, ": ", message));
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      if (absl::StrContains(message, "certificate") || absl::StrContains(message, "only admins") ||
          status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
        return absl::Status(server::FromGrpcStatus(status).code(),
                            absl::StrCat("the leader rejected this certificate: ", message));
      }
      return absl::PermissionDeniedError(absl::StrCat("permission denied: ", message));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(
          absl::StrCat("the leader at ", leader_address, " did not answer within ",
                       absl::FormatDuration(kAdminCallTimeout), message.empty() ? "" : " (",
                       message, message.empty() ? "" : ")"));
    default:
      return server::FromGrpcStatus(status);
  }
}

// ---------------------------------------------------------------------------------------------
// AdminClient

absl::StatusOr<std::unique_ptr<AdminClient>> AdminClient::FromConfig(
    const std::string& admin_yaml) {
  ASSIGN_OR_RETURN(const server::AdminConfig config, server::LoadAdminConfig(admin_yaml));
  ASSIGN_OR_RETURN(server::TlsMaterial tls, server::LoadTlsMaterial(config.tls));
  // Check the material locally (chain, validity, key match); the role is the leader's to judge.
  ASSIGN_OR_RETURN(const crypto::Identity identity, crypto::IdentityOfCertificate(tls.cert_pem));
  if (identity.role == crypto::Role::kAdmin) {
    RETURN_IF_ERROR(
        server::CheckOwnCertificate(tls, crypto::Identity{crypto::Role::kAdmin, config.name}));
  } else {
    RETURN_IF_ERROR(server::CheckOwnCertificate(tls, identity));
  }
  return std::make_unique<AdminClient>(config.leader, std::move(tls));
}

absl::StatusOr<std::unique_ptr<AdminClient>> AdminClient::FromBundle(
    const std::string& dir, const std::string& leader_address) {
  RETURN_IF_ERROR(server::ValidateHostPort(leader_address, "leader address"));
  const std::filesystem::path bundle(dir);
  server::TlsPaths paths;
  paths.ca = (bundle / "ca.crt").string();
  paths.cert = (bundle / "tls.crt").string();
  paths.key = (bundle / "tls.key").string();
  ASSIGN_OR_RETURN(server::TlsMaterial tls, server::LoadTlsMaterial(paths));
  ASSIGN_OR_RETURN(const crypto::Identity identity, crypto::IdentityOfCertificate(tls.cert_pem));
  RETURN_IF_ERROR(server::CheckOwnCertificate(tls, identity));
  return std::make_unique<AdminClient>(leader_address, tls);
}

AdminClient::AdminClient(std::string leader_address, const server::TlsMaterial& tls)
    : leader_address_(std::move(leader_address)),
      cert_pem_(tls.cert_pem),
      key_pem_(tls.key_pem),
      channel_(server::DialLeader(leader_address_, tls)),
      stub_(fedanon::v1::Admin::NewStub(channel_)) {}

absl::Status AdminClient::EnsureConnected() {
  const auto deadline =
      std::chrono::system_clock::now() + absl::ToChronoMilliseconds(kAdminConnectTimeout);
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    // A failed attempt: the call itself fails at once (wait_for_ready false) and says why.
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::OkStatus();
    }
    if (!channel_->WaitForStateChange(state, deadline)) {
      return absl::UnavailableError(absl::StrCat("cannot reach the leader at ", leader_address_,
                                                 ": no connection within ",
                                                 absl::FormatDuration(kAdminConnectTimeout)));
    }
    state = channel_->GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

void AdminClient::Prepare(grpc::ClientContext* context, bool unary) const {
  context->set_wait_for_ready(false);
  if (unary) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(kAdminCallTimeout));
  }
}

absl::Status AdminClient::Error(const grpc::Status& status) const {
  return DescribeAdminError(status, leader_address_);
}

absl::Status AdminClient::CheckHealth(const std::string& service) {
  RETURN_IF_ERROR(EnsureConnected());
  // grpc.health.v1.HealthCheckRequest{string service = 1}, encoded by hand: Debian's gRPC ships
  // no generated C++ for health.proto.
  if (service.size() > 127) return absl::InvalidArgumentError("service name too long");
  std::string encoded;
  if (!service.empty()) {
    encoded = absl::StrCat("\x0a", std::string(1, static_cast<char>(service.size())), service);
  }
  grpc::Slice slice(encoded);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  Prepare(&context, true);
  grpc::GenericStub stub(channel_);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return Error(status);
  // HealthCheckResponse{ServingStatus status = 1}: 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING,
  // 3 SERVICE_UNKNOWN. Field 1 is a varint; other fields are skipped.
  grpc::Slice out;
  if (!response.DumpToSingleSlice(&out).ok()) return absl::InternalError("empty health response");
  const std::string bytes(reinterpret_cast<const char*>(out.begin()), out.size());
  uint64_t serving_status = 0;  // absent field = UNKNOWN
  size_t i = 0;
  const auto varint = [&bytes, &i](uint64_t* v) {
    *v = 0;
    for (int shift = 0; i < bytes.size() && shift < 64; shift += 7) {
      const auto b = static_cast<uint8_t>(bytes[i++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  while (i < bytes.size()) {
    uint64_t tag = 0, value = 0;
    if (!varint(&tag)) break;
    const uint64_t wire = tag & 7;
    if (wire == 0) {
      if (!varint(&value)) break;
      if ((tag >> 3) == 1) serving_status = value;
    } else if (wire == 2) {
      if (!varint(&value) || value > bytes.size() - i) break;
      i += value;
    } else if (wire == 1 || wire == 5) {
      i += wire == 1 ? 8 : 4;
    } else {
      break;
    }
  }
  if (serving_status == 1) return absl::OkStatus();
  static constexpr const char* kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
  return absl::UnavailableError(absl::StrCat(
      "the leader at ", leader_address_, " reports ",
      serving_status < 4 ? kNames[serving_status] : absl::StrCat("status ", serving_status),
      " for ", service.empty() ? "the server" : absl::StrCat("service '", service, "'")));
}

absl::StatusOr<std::vector<fedanon::v1::ConnectedParty>> AdminClient::ListParties() {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, true);
  fedanon::v1::ListPartiesResponse response;
  const grpc::Status status =
      stub_->ListParties(&context, fedanon::v1::ListPartiesRequest(), &response);
  if (!status.ok()) return Error(status);
  std::vector<fedanon::v1::ConnectedParty> parties(response.parties().begin(),
                                                   response.parties().end());
  std::sort(parties.begin(), parties.end(),
            [](const auto& a, const auto& b) { return a.name() < b.name(); });
  return parties;
}

absl::StatusOr<std::vector<JobInfo>> AdminClient::ListJobs() {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, true);
  fedanon::v1::ListJobsResponse response;
  const grpc::Status status = stub_->ListJobs(&context, fedanon::v1::ListJobsRequest(), &response);
  if (!status.ok()) return Error(status);
  return std::vector<JobInfo>(response.jobs().begin(), response.jobs().end());
}

absl::Status AdminClient::AuthorizeJob(fedanon::v1::SubmitJobRequest* request,
                                       absl::Duration validity) const {
  absl::StatusOr<crypto::Identity> identity = crypto::IdentityOfCertificate(cert_pem_);
  if (!identity.ok() || identity->role != crypto::Role::kAdmin) {
    return absl::FailedPreconditionError(
        "only an admin certificate can authorize a job (this client's certificate is not an "
        "admin's)");
  }
  std::map<std::string, std::string> texts(request->taxonomies().begin(),
                                           request->taxonomies().end());
  request->clear_authorization();
  ASSIGN_OR_RETURN(
      *request->mutable_authorization(),
      wire::AuthorizeSubmission(*request, spec::CanonicalJobBytes(request->spec(), texts),
                                {cert_pem_, key_pem_}, absl::Now(), validity));
  return absl::OkStatus();
}

absl::StatusOr<JobInfo> AdminClient::SubmitJob(const fedanon::v1::SubmitJobRequest& request) {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, true);
  JobInfo response;
  const grpc::Status status = stub_->SubmitJob(&context, request, &response);
  if (!status.ok()) return Error(status);
  return response;
}

absl::StatusOr<JobInfo> AdminClient::GetJob(const std::string& job_id) {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, true);
  fedanon::v1::GetJobRequest request;
  request.set_job_id(job_id);
  JobInfo response;
  const grpc::Status status = stub_->GetJob(&context, request, &response);
  if (!status.ok()) return Error(status);
  return response;
}

absl::StatusOr<JobInfo> AdminClient::CancelJob(const std::string& job_id,
                                               const std::string& reason) {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, true);
  fedanon::v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  JobInfo response;
  const grpc::Status status = stub_->CancelJob(&context, request, &response);
  if (!status.ok()) return Error(status);
  return response;
}

absl::StatusOr<JobInfo> AdminClient::WatchJob(
    const std::string& job_id, const std::function<void(const JobInfo&)>& on_update) {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, false);
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("watch interrupted");
    streaming_ = &context;
  }
  fedanon::v1::GetJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<JobInfo>> reader = stub_->WatchJob(&context, request);
  JobInfo info;
  bool any = false;
  JobInfo last;
  while (reader->Read(&info)) {
    any = true;
    on_update(info);
    last = info;
  }
  const grpc::Status status = reader->Finish();
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    streaming_ = nullptr;
    cancelled = cancelled_;
  }
  if (cancelled) return absl::CancelledError("watch interrupted");
  if (!status.ok()) return Error(status);
  if (!any || !IsFinalState(last.state())) {
    return absl::UnavailableError(absl::StrCat("the leader at ", leader_address_,
                                               " ended the watch of ", job_id,
                                               " before the job ended"));
  }
  return last;
}

absl::StatusOr<uint64_t> AdminClient::GetResult(
    const std::string& job_id, const std::function<absl::Status(std::string_view)>& sink) {
  return Download(job_id, /*view_log=*/false, sink);
}

absl::StatusOr<uint64_t> AdminClient::GetViewLog(
    const std::string& job_id, const std::function<absl::Status(std::string_view)>& sink) {
  return Download(job_id, /*view_log=*/true, sink);
}

absl::StatusOr<uint64_t> AdminClient::Download(
    const std::string& job_id, bool view_log,
    const std::function<absl::Status(std::string_view)>& sink) {
  RETURN_IF_ERROR(EnsureConnected());
  grpc::ClientContext context;
  Prepare(&context, false);
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("download interrupted");
    streaming_ = &context;
  }
  fedanon::v1::GetResultRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<fedanon::v1::ResultChunk>> reader =
      view_log ? stub_->GetViewLog(&context, request) : stub_->GetResult(&context, request);
  fedanon::v1::ResultChunk chunk;
  uint64_t bytes = 0;
  absl::Status sink_status;
  while (reader->Read(&chunk)) {
    sink_status = sink(chunk.data());
    if (!sink_status.ok()) {
      context.TryCancel();
      break;
    }
    bytes += chunk.data().size();
  }
  const grpc::Status status = reader->Finish();
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    streaming_ = nullptr;
    cancelled = cancelled_;
  }
  if (!sink_status.ok()) return sink_status;
  if (cancelled) return absl::CancelledError("download interrupted");
  if (!status.ok()) return Error(status);
  return bytes;
}

void AdminClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (streaming_ != nullptr) streaming_->TryCancel();
}

// ---------------------------------------------------------------------------------------------
// Helpers

absl::StatusOr<fedanon::v1::SubmitJobRequest> LoadSubmitRequest(
    const std::string& spec_path, std::vector<TaxonomyFile>* taxonomy_files) {
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(spec_path));
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(text, spec_path));
  if (absl::Status st = spec::ValidateJobSpec(spec); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat(spec_path, ": ", std::string(st.message())));
  }
  fedanon::v1::SubmitJobRequest request;
  const fs::path spec_dir = fs::absolute(fs::path(spec_path)).parent_path();
  for (const fedanon::v1::Attribute& a : spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    const fs::path written(a.taxonomy());
    const fs::path local =
        (written.is_absolute() ? written : spec_dir / written).lexically_normal();
    absl::StatusOr<std::string> content = base::ReadFile(local.string());
    if (!content.ok()) {
      return absl::Status(content.status().code(),
                          absl::StrCat("taxonomy of attribute '", a.name(),
                                       "': ", std::string(content.status().message())));
    }
    (*request.mutable_taxonomies())[a.name()] = *std::move(content);
    if (taxonomy_files != nullptr) {
      taxonomy_files->push_back({a.name(), a.taxonomy(), local.string()});
    }
  }
  *request.mutable_spec() = std::move(spec);
  return request;
}

std::string JobStateName(fedanon::v1::JobState state) {
  switch (state) {
    case fedanon::v1::JOB_STATE_SUBMITTED:
      return "submitted";
    case fedanon::v1::JOB_STATE_VALIDATING:
      return "validating";
    case fedanon::v1::JOB_STATE_RUNNING:
      return "running";
    case fedanon::v1::JOB_STATE_DONE:
      return "done";
    case fedanon::v1::JOB_STATE_FAILED:
      return "failed";
    case fedanon::v1::JOB_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unknown";
  }
}

bool IsFinalState(fedanon::v1::JobState state) {
  return state == fedanon::v1::JOB_STATE_DONE || state == fedanon::v1::JOB_STATE_FAILED ||
         state == fedanon::v1::JOB_STATE_CANCELLED;
}

std::string FormatUnixTime(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_seconds),
                          absl::UTCTimeZone());
}

std::string ProgressLine(const JobInfo& job) {
  std::string line = absl::StrCat(job.job_id(), " ", JobStateName(job.state()));
  std::vector<std::string> parts;
  if (job.queue_position() > 0) parts.push_back(absl::StrCat("queued #", job.queue_position()));
  for (const std::string& party : job.waiting_for_parties()) {
    parts.push_back(absl::StrCat("waiting for party ", party));
  }
  if (job.round() > 0) parts.push_back(absl::StrCat("round ", job.round()));
  if (!job.current_best().empty() && !IsFinalState(job.state()))
    parts.push_back(absl::StrCat("best '", job.current_best(), "'"));
  if (job.elapsed_seconds() > 0) parts.push_back(FormatSeconds(job.elapsed_seconds()));
  if (!job.failure_reason().empty()) parts.push_back(job.failure_reason());
  if (!parts.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(parts, ", "));
  return line;
}

std::string ReportSummary(const fedanon::v1::Report& report) {
  std::string out;
  absl::StrAppend(&out, "records:          ", report.records_in(), " in, ",
                  report.records_dropped(), " dropped, ", report.records_out(), " out\n");
  absl::StrAppend(&out, "specializations:  ", report.steps_size());
  if (!report.stop_reason().empty())
    absl::StrAppend(&out, " (stopped: ", report.stop_reason(), ")");
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "groups:           ", report.groups(), ", smallest ",
                  report.smallest_group(), ", ", report.constraints_checked(),
                  " constraints checked\n");
  if (report.largest_confidence() > 0) {
    absl::StrAppend(&out, "confidence:       largest ",
                    absl::StrFormat("%.3f", report.largest_confidence()), "\n");
  }
  std::vector<std::string> cut;
  for (const fedanon::v1::AttributeCut& c : report.cut()) {
    cut.push_back(absl::StrCat(c.attribute(), " ", c.values_size()));
  }
  if (!cut.empty()) {
    absl::StrAppend(&out, "values per QID:   ", absl::StrJoin(cut, ", "), "\n");
  }
  // Vertical jobs: what each party contributed and why it declined rounds (mohammed2011 §6).
  for (const fedanon::v1::PartyParticipation& p : report.participation()) {
    std::vector<std::string> declined;
    for (const auto& [reason, rounds] : p.declined_because()) {
      declined.push_back(absl::StrCat(rounds, " x ", reason));
    }
    std::sort(declined.begin(), declined.end());
    absl::StrAppend(&out, "party ", p.party(), ":", p.misbehaving() ? " (MISBEHAVING)" : "",
                    " contribution ", absl::StrFormat("%.4f", p.contribution()), ", won ",
                    p.rounds_won(), ", declined ", p.rounds_declined());
    if (!declined.empty()) absl::StrAppend(&out, " (", absl::StrJoin(declined, "; "), ")");
    absl::StrAppend(&out, "\n");
  }
  if (auto it = report.timings_seconds().find("total"); it != report.timings_seconds().end()) {
    absl::StrAppend(&out, "time:             ", FormatSeconds(it->second), "\n");
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// AtomicFileWriter

namespace {

// The refusal of base::AtomicFileWriter to replace a file, phrased for the command line.
absl::Status WithForceHint(absl::Status status, const std::string& path) {
  if (!absl::IsAlreadyExists(status)) return status;
  return absl::AlreadyExistsError(absl::StrCat(path, " exists; use --force to overwrite it"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                         bool overwrite) {
  if (path.empty()) return absl::InvalidArgumentError("no output file given");
  std::error_code ec;
  // Without `overwrite` base::AtomicFileWriter refuses any existing path, directories included.
  if (overwrite && fs::is_directory(path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
  }
  // The mode of any file a command creates.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  absl::StatusOr<std::unique_ptr<base::AtomicFileWriter>> file = base::AtomicFileWriter::Open(
      path, {.mode = static_cast<mode_t>(0666 & ~mask), .replace_existing = overwrite});
  if (!file.ok()) return WithForceHint(file.status(), path);
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(*std::move(file)));
}

absl::Status AtomicFileWriter::Commit() { return WithForceHint(file_->Commit(), file_->path()); }

}  // namespace fedanon::admin
