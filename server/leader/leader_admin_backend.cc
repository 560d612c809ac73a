#include "server/leader/leader_admin_backend.h"

#include <string>
#include <vector>

namespace fedanon::leader_daemon {
namespace {

class LeaderAdminBackend final : public admin::AdminBackend {
 public:
  explicit LeaderAdminBackend(leader::Leader* leader) : leader_(leader) {}

  absl::StatusOr<fedanon::v1::JobInfo> Submit(const fedanon::v1::SubmitJobRequest& request,
                                              const std::string& admin) override {
    return leader_->Submit(request, admin);
  }
  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) override {
    return leader_->Get(job_id);
  }
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() override { return leader_->List(); }
  absl::StatusOr<fedanon::v1::JobInfo> Cancel(const std::string& job_id, const std::string& admin,
                                              const std::string& reason) override {
    return leader_->Cancel(job_id, admin, reason);
  }
  absl::StatusOr<fedanon::v1::JobInfo> WaitForChange(const std::string& job_id,
                                                     const fedanon::v1::JobInfo& last,
                                                     absl::Duration timeout) override {
    return leader_->WaitForChange(job_id, last, timeout);
  }
  absl::Status StreamResult(const std::string& job_id, size_t piece_bytes,
                            const std::function<absl::Status(std::string_view)>& sink) override {
    return leader_->StreamResult(job_id, piece_bytes, sink);
  }
  absl::Status StreamViewLog(const std::string& job_id, size_t piece_bytes,
                             const std::function<absl::Status(std::string_view)>& sink) override {
    return leader_->StreamViewLog(job_id, piece_bytes, sink);
  }
  std::vector<wire::ConnectedParty> Parties() override { return leader_->Parties(); }

 private:
  leader::Leader* leader_;  // not owned
};

}  // namespace

std::unique_ptr<admin::AdminBackend> NewLeaderAdminBackend(leader::Leader* leader) {
  return std::make_unique<LeaderAdminBackend>(leader);
}

}  // namespace fedanon::leader_daemon
