// The Admin gRPC service: every method requires a caller certificate with role `admin`
// (PERMISSION_DENIED otherwise, e.g. for a party certificate) and is a thin adaptor onto an
// AdminBackend — in the daemon the leader::Leader (see leader_admin_backend.h), in transport
// tests a fake, so the server/ tests do not need the whole leader.
//
// WatchJob streams the job's JobInfo once and then on every change of state, round or failure
// reason until a final state (done, failed, cancelled), the client's cancellation or the server's
// shutdown. GetResult streams the integrated table in 1 MiB ResultChunks, GetViewLog the job's view
// log (what the leader decoded) likewise. Thread-safe.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/sync_stream.h>

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/runtime/revocation.h"

namespace fedanon::admin {

// The leader operations the Admin service exposes (same contract as leader::Leader's methods).
class AdminBackend {
 public:
  virtual ~AdminBackend() = default;
  virtual absl::StatusOr<fedanon::v1::JobInfo> Submit(const fedanon::v1::SubmitJobRequest& request,
                                                      const std::string& admin) = 0;
  virtual absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) = 0;
  virtual absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() = 0;
  virtual absl::StatusOr<fedanon::v1::JobInfo> Cancel(const std::string& job_id,
                                                      const std::string& admin,
                                                      const std::string& reason) = 0;
  virtual absl::StatusOr<fedanon::v1::JobInfo> WaitForChange(const std::string& job_id,
                                                             const fedanon::v1::JobInfo& last,
                                                             absl::Duration timeout) = 0;
  // The integrated table of a done job handed to `sink` in pieces of at most `piece_bytes` (the
  // backend holds one piece at a time); an error of `sink` stops it.
  virtual absl::Status StreamResult(const std::string& job_id, size_t piece_bytes,
                                    const std::function<absl::Status(std::string_view)>& sink) = 0;
  // The job's view log (JSON lines) handed to `sink` in pieces of at most `piece_bytes`;
  // backends without one answer Unimplemented.
  virtual absl::Status StreamViewLog(
      const std::string& /*job_id*/, size_t /*piece_bytes*/,
      const std::function<absl::Status(std::string_view)>& /*sink*/) {
    return absl::UnimplementedError("this leader keeps no view log");
  }
  virtual std::vector<wire::ConnectedParty> Parties() = 0;
};

inline constexpr size_t kResultChunkBytes = size_t{1024} * 1024;

class AdminService final : public fedanon::v1::Admin::Service {
 public:
  // `backend` is not owned; null: every authorized call answers UNAVAILABLE (transport-only
  // servers in tests and benchmarks).
  explicit AdminService(AdminBackend* backend) : backend_(backend) {}
  // Refuse admins whose certificates it revokes (not owned; may stay unset).
  void set_revocation(const server::RevocationCheck* revocation) { revocation_ = revocation; }

  // Admins (identities from their verified certificates) that may act on every job; any other
  // admin sees, watches, cancels and fetches the result or view log only of the jobs it
  // submitted itself (PERMISSION_DENIED otherwise). From leader.yaml `all_jobs_admins:`; may be
  // replaced while calls run (a reloaded leader.yaml): each call sees one list.
  void set_all_jobs_admins(std::set<std::string> admins) ABSL_LOCKS_EXCLUDED(admins_mu_) {
    absl::MutexLock lock(&admins_mu_);
    all_jobs_admins_ = std::move(admins);
  }

  // Ends WatchJob streams (within ~0.5 s) with UNAVAILABLE "leader shutting down".
  void BeginShutdown() { shutting_down_ = true; }

  grpc::Status ListParties(grpc::ServerContext* context,
                           const fedanon::v1::ListPartiesRequest* request,
                           fedanon::v1::ListPartiesResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const fedanon::v1::ListJobsRequest* request,
                        fedanon::v1::ListJobsResponse* response) override;
  grpc::Status SubmitJob(grpc::ServerContext* context, const fedanon::v1::SubmitJobRequest* request,
                         fedanon::v1::JobInfo* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const fedanon::v1::GetJobRequest* request,
                      fedanon::v1::JobInfo* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const fedanon::v1::GetJobRequest* request,
                        grpc::ServerWriter<fedanon::v1::JobInfo>* writer) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const fedanon::v1::CancelJobRequest* request,
                         fedanon::v1::JobInfo* response) override;
  grpc::Status GetResult(grpc::ServerContext* context, const fedanon::v1::GetResultRequest* request,
                         grpc::ServerWriter<fedanon::v1::ResultChunk>* writer) override;
  grpc::Status GetViewLog(grpc::ServerContext* context,
                          const fedanon::v1::GetResultRequest* request,
                          grpc::ServerWriter<fedanon::v1::ResultChunk>* writer) override;

 private:
  // The caller's admin identity; PermissionDenied for any other role.
  absl::StatusOr<crypto::Identity> Authorize(const grpc::ServerContext& context,
                                             const char* method) const;

  // OK if `admin` may act on job `job_id` (its submitter, or an all-jobs admin); the backend's
  // NotFound for an unknown job; PermissionDenied naming the admin and the method otherwise.
  absl::Status CheckOwnJob(const crypto::Identity& admin, const std::string& job_id,
                           const char* method) const;
  bool ActsOnAllJobs(const crypto::Identity& admin) const ABSL_LOCKS_EXCLUDED(admins_mu_) {
    absl::MutexLock lock(&admins_mu_);
    return all_jobs_admins_.count(admin.name) > 0;
  }

  AdminBackend* backend_;  // not owned, may be null
  mutable absl::Mutex admins_mu_;
  std::set<std::string> all_jobs_admins_ ABSL_GUARDED_BY(admins_mu_);
  const server::RevocationCheck* revocation_ = nullptr;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace fedanon::admin
