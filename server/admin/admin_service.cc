#include "server/admin/admin_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/runtime/status_convert.h"
#include "server/runtime/tls.h"

namespace fedanon::admin {
namespace {

bool IsFinal(fedanon::v1::JobState state) {
  return state == fedanon::v1::JOB_STATE_DONE || state == fedanon::v1::JOB_STATE_FAILED ||
         state == fedanon::v1::JOB_STATE_CANCELLED;
}

bool Changed(const fedanon::v1::JobInfo& a, const fedanon::v1::JobInfo& b) {
  return a.state() != b.state() || a.round() != b.round() ||
         a.failure_reason() != b.failure_reason() || a.current_best() != b.current_best() ||
         a.queue_position() != b.queue_position() ||
         !std::equal(a.waiting_for_parties().begin(), a.waiting_for_parties().end(),
                     b.waiting_for_parties().begin(), b.waiting_for_parties().end());
}

const grpc::Status kNoBackend(grpc::StatusCode::UNAVAILABLE,
                              "this server runs no leader (transport only)");

constexpr absl::Duration kWatchPoll = absl::Milliseconds(500);

// A sink that writes each piece it is handed as one ResultChunk, counting the bytes; Cancelled
// once the admin stops reading.
std::function<absl::Status(std::string_view)> ChunkWriter(
    grpc::ServerWriter<fedanon::v1::ResultChunk>* writer, uint64_t* bytes) {
  return [writer, bytes, chunk = fedanon::v1::ResultChunk()](std::string_view piece) mutable {
    chunk.set_data(piece.data(), piece.size());
    if (!writer->Write(chunk)) return absl::CancelledError("the admin stopped reading");
    *bytes += piece.size();
    return absl::OkStatus();
  };
}

}  // namespace

absl::StatusOr<crypto::Identity> AdminService::Authorize(const grpc::ServerContext& context,
                                                         const char* method) const {
  absl::StatusOr<crypto::Identity> identity = server::PeerIdentity(context);
  if (!identity.ok()) return identity.status();
  if (revocation_ != nullptr && revocation_->enabled()) {
    if (absl::Status st = revocation_->Check(server::PeerCertificatePem(context)); !st.ok()) {
      spdlog::warn("Admin.{}: rejected {} from {}: {}", method, server::IdentityString(*identity),
                   context.peer(), std::string(st.message()));
      return st;
    }
  }
  if (identity->role != crypto::Role::kAdmin) {
    spdlog::warn("Admin.{}: rejected {} from {}: not an admin certificate", method,
                 server::IdentityString(*identity), context.peer());
    return absl::PermissionDeniedError(absl::StrCat("only admins may call Admin.", method,
                                                    "; this certificate is for ",
                                                    server::IdentityString(*identity)));
  }
  return identity;
}

absl::Status AdminService::CheckOwnJob(const crypto::Identity& admin, const std::string& job_id,
                                       const char* method) const {
  if (ActsOnAllJobs(admin)) return absl::OkStatus();
  absl::StatusOr<fedanon::v1::JobInfo> job = backend_->Get(job_id);
  if (!job.ok()) return job.status();
  if (job->submitted_by() == admin.name) return absl::OkStatus();
  spdlog::warn("job={} Admin.{}: refused admin '{}': not the job's submitter", job_id, method,
               admin.name);
  return absl::PermissionDeniedError(
      absl::StrCat("admin '", admin.name, "' may call Admin.", method,
                   " only for the jobs it submitted itself (this job is another admin's; the "
                   "leader's all_jobs_admins setting grants more)"));
}

grpc::Status AdminService::ListParties(grpc::ServerContext* context,
                                       const fedanon::v1::ListPartiesRequest*,
                                       fedanon::v1::ListPartiesResponse* response) {
  if (auto id = Authorize(*context, "ListParties"); !id.ok())
    return server::ToGrpcStatus(id.status());
  if (backend_ == nullptr) return kNoBackend;
  for (const wire::ConnectedParty& p : backend_->Parties()) {
    fedanon::v1::ConnectedParty* out = response->add_parties();
    out->set_name(p.name);
    out->set_connected_since_unix(p.connected_since_unix);
    out->set_peer(p.peer);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListJobs(grpc::ServerContext* context,
                                    const fedanon::v1::ListJobsRequest*,
                                    fedanon::v1::ListJobsResponse* response) {
  absl::StatusOr<crypto::Identity> id = Authorize(*context, "ListJobs");
  if (!id.ok()) return server::ToGrpcStatus(id.status());
  if (backend_ == nullptr) return kNoBackend;
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> jobs = backend_->List();
  if (!jobs.ok()) return server::ToGrpcStatus(jobs.status());
  for (fedanon::v1::JobInfo& job : *jobs) {
    if (ActsOnAllJobs(*id) || job.submitted_by() == id->name) {
      *response->add_jobs() = std::move(job);
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::SubmitJob(grpc::ServerContext* context,
                                     const fedanon::v1::SubmitJobRequest* request,
                                     fedanon::v1::JobInfo* response) {
  absl::StatusOr<crypto::Identity> admin = Authorize(*context, "SubmitJob");
  if (!admin.ok()) return server::ToGrpcStatus(admin.status());
  if (backend_ == nullptr) return kNoBackend;
  absl::StatusOr<fedanon::v1::JobInfo> job = backend_->Submit(*request, admin->name);
  if (!job.ok()) {
    spdlog::warn("admin '{}': job submission refused: {}", admin->name, job.status().ToString());
    return server::ToGrpcStatus(job.status());
  }
  spdlog::info("job={} admin '{}' submitted the job (parties: {})", job->job_id(), admin->name,
               job->parties_size());
  *response = std::move(job).value();
  return grpc::Status::OK;
}

grpc::Status AdminService::GetJob(grpc::ServerContext* context,
                                  const fedanon::v1::GetJobRequest* request,
                                  fedanon::v1::JobInfo* response) {
  absl::StatusOr<crypto::Identity> id = Authorize(*context, "GetJob");
  if (!id.ok()) return server::ToGrpcStatus(id.status());
  if (backend_ == nullptr) return kNoBackend;
  if (absl::Status st = CheckOwnJob(*id, request->job_id(), "GetJob"); !st.ok()) {
    return server::ToGrpcStatus(st);
  }
  absl::StatusOr<fedanon::v1::JobInfo> job = backend_->Get(request->job_id());
  if (!job.ok()) return server::ToGrpcStatus(job.status());
  *response = std::move(job).value();
  return grpc::Status::OK;
}

grpc::Status AdminService::WatchJob(grpc::ServerContext* context,
                                    const fedanon::v1::GetJobRequest* request,
                                    grpc::ServerWriter<fedanon::v1::JobInfo>* writer) {
  absl::StatusOr<crypto::Identity> id = Authorize(*context, "WatchJob");
  if (!id.ok()) return server::ToGrpcStatus(id.status());
  if (backend_ == nullptr) return kNoBackend;
  if (absl::Status st = CheckOwnJob(*id, request->job_id(), "WatchJob"); !st.ok()) {
    return server::ToGrpcStatus(st);
  }
  absl::StatusOr<fedanon::v1::JobInfo> last = backend_->Get(request->job_id());
  if (!last.ok()) return server::ToGrpcStatus(last.status());
  if (!writer->Write(*last)) return grpc::Status::CANCELLED;
  while (!IsFinal(last->state())) {
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
    if (shutting_down_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "leader shutting down");
    }
    absl::StatusOr<fedanon::v1::JobInfo> next =
        backend_->WaitForChange(request->job_id(), *last, kWatchPoll);
    if (!next.ok()) return server::ToGrpcStatus(next.status());
    if (Changed(*next, *last)) {
      if (!writer->Write(*next)) return grpc::Status::CANCELLED;
      last = std::move(next);
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::CancelJob(grpc::ServerContext* context,
                                     const fedanon::v1::CancelJobRequest* request,
                                     fedanon::v1::JobInfo* response) {
  absl::StatusOr<crypto::Identity> admin = Authorize(*context, "CancelJob");
  if (!admin.ok()) return server::ToGrpcStatus(admin.status());
  if (backend_ == nullptr) return kNoBackend;
  if (absl::Status st = CheckOwnJob(*admin, request->job_id(), "CancelJob"); !st.ok()) {
    return server::ToGrpcStatus(st);
  }
  absl::StatusOr<fedanon::v1::JobInfo> job =
      backend_->Cancel(request->job_id(), admin->name, request->reason());
  if (!job.ok()) return server::ToGrpcStatus(job.status());
  spdlog::info("job={} admin '{}' cancelled the job", request->job_id(), admin->name);
  *response = std::move(job).value();
  return grpc::Status::OK;
}

grpc::Status AdminService::GetResult(grpc::ServerContext* context,
                                     const fedanon::v1::GetResultRequest* request,
                                     grpc::ServerWriter<fedanon::v1::ResultChunk>* writer) {
  absl::StatusOr<crypto::Identity> admin = Authorize(*context, "GetResult");
  if (!admin.ok()) return server::ToGrpcStatus(admin.status());
  if (backend_ == nullptr) return kNoBackend;
  if (absl::Status st = CheckOwnJob(*admin, request->job_id(), "GetResult"); !st.ok()) {
    return server::ToGrpcStatus(st);
  }
  // Piece by piece from the stored file: the leader holds one chunk whatever the table's size.
  uint64_t bytes = 0;
  const absl::Status streamed =
      backend_->StreamResult(request->job_id(), kResultChunkBytes, ChunkWriter(writer, &bytes));
  if (!streamed.ok()) return server::ToGrpcStatus(streamed);
  spdlog::info("job={} admin '{}' fetched the result ({} bytes)", request->job_id(), admin->name,
               bytes);
  return grpc::Status::OK;
}

grpc::Status AdminService::GetViewLog(grpc::ServerContext* context,
                                      const fedanon::v1::GetResultRequest* request,
                                      grpc::ServerWriter<fedanon::v1::ResultChunk>* writer) {
  absl::StatusOr<crypto::Identity> admin = Authorize(*context, "GetViewLog");
  if (!admin.ok()) return server::ToGrpcStatus(admin.status());
  if (backend_ == nullptr) return kNoBackend;
  if (absl::Status st = CheckOwnJob(*admin, request->job_id(), "GetViewLog"); !st.ok()) {
    return server::ToGrpcStatus(st);
  }
  uint64_t bytes = 0;
  const absl::Status streamed =
      backend_->StreamViewLog(request->job_id(), kResultChunkBytes, ChunkWriter(writer, &bytes));
  if (!streamed.ok()) return server::ToGrpcStatus(streamed);
  spdlog::info("job={} admin '{}' fetched the view log ({} bytes)", request->job_id(), admin->name,
               bytes);
  return grpc::Status::OK;
}

}  // namespace fedanon::admin
