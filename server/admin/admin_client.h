// The admin's side of the Admin service, shared by `fedanonctl` and `fedanon federation up`: a
// client over one mTLS channel to the leader whose errors are already phrased for people, plus
// the helpers both commands need (building a SubmitJobRequest from a spec file, JSON and
// one-line renderings of jobs and reports, atomic output files).
//
// Errors of every call (absl::Status, code of the gRPC status):
//   UNAVAILABLE        "cannot reach the leader at HOST:PORT: <reason>" (nothing listens, no
//                      answer within 5 s, connection lost), or "TLS handshake with the leader at
//                      HOST:PORT failed (...): <reason>";
//   PERMISSION_DENIED  "the leader rejected this certificate: <leader's message>" (e.g. a party
//   UNAUTHENTICATED     certificate used as admin);
//   DEADLINE_EXCEEDED  "the leader at HOST:PORT did not answer within 30 s";
//   anything else      the leader's message unchanged (NOT_FOUND "unknown job job-...", ...).
// Thread-safe (gRPC stubs are); Cancel() may be called from any thread.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/file_io.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/runtime/tls.h"

namespace fedanon::admin {

inline constexpr absl::Duration kAdminCallTimeout = absl::Seconds(30);
inline constexpr absl::Duration kAdminConnectTimeout = absl::Seconds(5);

// Turns the status of a failed Admin call into the messages listed above.
absl::Status DescribeAdminError(const grpc::Status& status, const std::string& leader_address);

class AdminClient {
 public:
  // Loads admin.yaml (server/runtime/config.h) and its TLS material and checks the material locally
  // (the certificate chains to the CA, is valid now and matches the key). A certificate of another
  // role is not refused here: the leader refuses it (PERMISSION_DENIED), which is the authoritative
  // answer. Connects lazily (on the first call).
  static absl::StatusOr<std::unique_ptr<AdminClient>> FromConfig(const std::string& admin_yaml);
  // The same with a bundle directory from `fedanonctl provision` (DIR/ca.crt, DIR/tls.crt,
  // DIR/tls.key) of any role, dialling `leader_address`: for health probes, where a leader or a
  // party checks the leader with its own certificate (the health service needs no admin).
  static absl::StatusOr<std::unique_ptr<AdminClient>> FromBundle(const std::string& dir,
                                                                 const std::string& leader_address);
  AdminClient(std::string leader_address, const server::TlsMaterial& tls);

  const std::string& leader_address() const { return leader_address_; }

  absl::StatusOr<std::vector<fedanon::v1::ConnectedParty>> ListParties();  // sorted by name
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> ListJobs();
  // Signs `request` as it stands (spec and taxonomies, parties in ring order, recipient,
  // leader_party, data_paths) with this admin's TLS key under a fresh run id, valid for
  // `validity`, and stores the signature in request->authorization (docs/threat-model.md, "Job
  // authorization"). FailedPrecondition when the certificate is not an admin's. Call it last,
  // after every field of the request is set: parties refuse a job that differs from what was
  // signed.
  absl::Status AuthorizeJob(fedanon::v1::SubmitJobRequest* request,
                            absl::Duration validity = absl::Hours(24)) const;
  absl::StatusOr<fedanon::v1::JobInfo> SubmitJob(const fedanon::v1::SubmitJobRequest& request);
  absl::StatusOr<fedanon::v1::JobInfo> GetJob(const std::string& job_id);
  absl::StatusOr<fedanon::v1::JobInfo> CancelJob(const std::string& job_id,
                                                 const std::string& reason);
  // Streams WatchJob: `on_update` sees every JobInfo the leader sends (first the current one, then
  // one per change). Returns the last JobInfo once the job is in a final state, or the error that
  // ended the stream (CANCELLED "watch interrupted" after Cancel()).
  absl::StatusOr<fedanon::v1::JobInfo> WatchJob(
      const std::string& job_id, const std::function<void(const fedanon::v1::JobInfo&)>& on_update);
  // Streams GetResult, handing each chunk to `sink` (an error from `sink` cancels the stream and
  // is returned). Returns the number of bytes received.
  absl::StatusOr<uint64_t> GetResult(const std::string& job_id,
                                     const std::function<absl::Status(std::string_view)>& sink);
  // Streams GetViewLog (the leader's view log of the job, JSON lines) the same way.
  absl::StatusOr<uint64_t> GetViewLog(const std::string& job_id,
                                      const std::function<absl::Status(std::string_view)>& sink);

  // grpc.health.v1.Health/Check for `service` ("" = the server as a whole, or
  // "fedanon.v1.PartyLink" / "fedanon.v1.Admin"). OK when the leader answers SERVING;
  // UNAVAILABLE "the leader at HOST:PORT reports NOT_SERVING ..." when it answers anything else
  // (e.g. while shutting down); the errors listed above otherwise (NOT_FOUND for an unknown
  // service name). Any certificate of the federation may call it.
  absl::Status CheckHealth(const std::string& service);

  // Interrupts the streaming call in progress (WatchJob / GetResult) and every later one; for
  // signal handling. Idempotent.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // GetResult (`view_log` false) or GetViewLog streamed into `sink`.
  absl::StatusOr<uint64_t> Download(const std::string& job_id, bool view_log,
                                    const std::function<absl::Status(std::string_view)>& sink);
  // Connects (at most kAdminConnectTimeout) unless already connected; Unavailable otherwise.
  absl::Status EnsureConnected();
  // A context with wait_for_ready(false) and, for unary calls, the 30 s deadline.
  void Prepare(grpc::ClientContext* context, bool unary) const;
  absl::Status Error(const grpc::Status& status) const;

  const std::string leader_address_;
  const std::string cert_pem_;  // this admin's TLS certificate and key: they sign jobs
  const std::string key_pem_;   // never logged
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<fedanon::v1::Admin::Stub> stub_;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* streaming_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// The job in `spec_path` as a SubmitJobRequest: the spec parsed with spec::ParseJobSpecYaml
// (taxonomy paths kept as written: each party resolves them against its own data dir) and checked
// with spec::ValidateJobSpec, and the content of every referenced taxonomy file (resolved
// against the spec file's directory) in `taxonomies[attribute]`. Parties etc. are left empty.
struct TaxonomyFile {
  std::string attribute;
  std::string spec_path;   // as written in the spec
  std::string local_path;  // where it was read from
};
absl::StatusOr<fedanon::v1::SubmitJobRequest> LoadSubmitRequest(
    const std::string& spec_path, std::vector<TaxonomyFile>* taxonomy_files = nullptr);

// "submitted", "validating", "running", "done", "failed", "cancelled".
std::string JobStateName(fedanon::v1::JobState state);
bool IsFinalState(fedanon::v1::JobState state);
// "2024-05-01T12:00:00Z"
std::string FormatUnixTime(int64_t unix_seconds);
// "job-0123456789ab running: round 3, best 'Job Blue-collar', 1.2 s"
std::string ProgressLine(const fedanon::v1::JobInfo& job);
// A few lines (records, specializations, groups, timings, stop reason), each ending in '\n'.
std::string ReportSummary(const fedanon::v1::Report& report);

// An output file of `fedanonctl result` and `fedanon federation up` (the integrated table, the
// report): base::AtomicFileWriter (common/base/file_io.h), so the content goes to a temporary
// file in the same directory, which is synced and renamed into place (removed on any error),
// with the mode of any file a command creates (0666 less the umask). Without `overwrite` an
// existing `path` is an AlreadyExists error ("... exists; use --force to overwrite it") and is
// never replaced.
class AtomicFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                                bool overwrite);

  absl::Status Write(std::string_view data) { return file_->Write(data); }
  absl::Status Commit();

 private:
  explicit AtomicFileWriter(std::unique_ptr<base::AtomicFileWriter> file)
      : file_(std::move(file)) {}
  std::unique_ptr<base::AtomicFileWriter> file_;  // removes the temporary file unless committed
};

}  // namespace fedanon::admin
