// The leader's gRPC server: PartyLink (party streams), Admin and the standard health service
// (grpc.health.v1; "" , "fedanon.v1.PartyLink" and "fedanon.v1.Admin" report SERVING while up)
// on one mTLS port. See docs/federation-runtime.md. With a `store_check`, the server ("") and
// fedanon.v1.Admin report NOT_SERVING while the check fails (the job store is unavailable; run
// every `store_check_interval`, the change logged); fedanon.v1.PartyLink stays SERVING, since
// parties may stay connected meanwhile.
//
// Lifecycle: Start() binds and serves; Shutdown(deadline) marks the health service NOT_SERVING,
// ends WatchJob streams and party streams, stops accepting, waits up to `deadline` for unary calls
// in flight and cancels what remains. The destructor shuts down with a zero deadline.
// Thread-safe.
#pragma once

#include <grpcpp/server.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/admin/admin_service.h"
#include "server/leader/guarded_listener.h"
#include "server/leader/party_connections.h"
#include "server/leader/party_link_service.h"
#include "server/runtime/revocation.h"
#include "server/runtime/tls.h"

namespace fedanon::leader_daemon {

struct LeaderServerOptions {
  std::string name = "leader";  // announced in HelloAck
  std::string listen;           // host:port; port 0 picks a free port (see port())
  server::TlsMaterial tls;
  // With tls_reload_seconds > 0 the TLS files are re-read that often and new handshakes use
  // what they hold (MakeReloadingServerCredentials); 0: `tls` as read at start.
  server::TlsPaths tls_paths;
  int tls_reload_seconds = 0;
  std::string crl_path;  // a CRL file (fedanonctl revoke); "": no revocation check
  // Admins that may act on every job (AdminService::set_all_jobs_admins); others: own jobs only.
  std::vector<std::string> all_jobs_admins;
  // Whether the job store works (leader::Leader::CheckStore); empty: not checked.
  std::function<absl::Status()> store_check;
  absl::Duration store_check_interval = absl::Seconds(5);
};

class LeaderServer {
 public:
  // `connections` and `admin` are not owned and must outlive the server; `admin` may be null
  // (Admin calls then answer UNAVAILABLE after the role check). Errors: InvalidArgument for a
  // malformed address, Unavailable "cannot listen on X (address in use or not local?)".
  static absl::StatusOr<std::unique_ptr<LeaderServer>> Start(LeaderServerOptions options,
                                                             PartyConnections* connections,
                                                             admin::AdminBackend* admin);
  ~LeaderServer();
  LeaderServer(const LeaderServer&) = delete;
  LeaderServer& operator=(const LeaderServer&) = delete;

  int port() const { return port_; }

  // Idempotent.
  void Shutdown(absl::Duration deadline);

  // Settings re-read without a restart (server/runtime/config_reload.h): the CA bundle that
  // verifies the sealing certificates in parties' hellos and announcements and the CRL's signature,
  // and leader.yaml's all_jobs_admins. Calls and streams already running finish with the old ones.
  void UpdateSettings(const std::string& ca_pem, const std::vector<std::string>& all_jobs_admins);

  // The last store check's outcome (true before the first and without a check).
  bool store_available() const;

 private:
  LeaderServer(LeaderServerOptions options, PartyConnections* connections,
               admin::AdminBackend* admin);

  LeaderServerOptions options_;
  PartyConnections* connections_;  // not owned
  PartyLinkService party_link_;
  admin::AdminService admin_;
  server::RevocationCheck revocation_;
  std::unique_ptr<GuardedListener> listener_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool stopped_ = false;

  // Runs store_check every store_check_interval until Shutdown, flipping the health status.
  void CheckStoreLoop();
  mutable absl::Mutex check_mu_;
  bool check_stopping_ ABSL_GUARDED_BY(check_mu_) = false;
  bool store_available_ ABSL_GUARDED_BY(check_mu_) = true;
  std::thread check_thread_;
};

}  // namespace fedanon::leader_daemon
