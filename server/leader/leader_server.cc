#include "server/leader/leader_server.h"

#include <grpc/grpc.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/leader/guarded_listener.h"
#include "server/runtime/config.h"
#include "server/runtime/transport.h"

namespace fedanon::leader_daemon {
namespace {

constexpr const char* kServiceNames[] = {"", "fedanon.v1.PartyLink", "fedanon.v1.Admin"};
// What a leader without its job store cannot do (PartyLink streams need no store).
constexpr const char* kStoreDependentServices[] = {"", "fedanon.v1.Admin"};

// Descriptors kept free below the process's limit for established connections and files: new
// connections beyond that are shed (guarded_listener.h).
constexpr int kDescriptorHeadroom = 16;

}  // namespace

LeaderServer::LeaderServer(LeaderServerOptions options, PartyConnections* connections,
                           admin::AdminBackend* admin)
    : options_(std::move(options)),
      connections_(connections),
      party_link_(options_.name, options_.tls.ca_pem, connections),
      admin_(admin),
      revocation_(options_.crl_path, options_.tls.ca_pem) {
  party_link_.set_revocation(&revocation_);
  admin_.set_revocation(&revocation_);
  admin_.set_all_jobs_admins(
      std::set<std::string>(options_.all_jobs_admins.begin(), options_.all_jobs_admins.end()));
}

void LeaderServer::UpdateSettings(const std::string& ca_pem,
                                  const std::vector<std::string>& all_jobs_admins) {
  party_link_.set_ca_pem(ca_pem);
  revocation_.SetCaPem(ca_pem);
  admin_.set_all_jobs_admins(std::set<std::string>(all_jobs_admins.begin(), all_jobs_admins.end()));
}

absl::StatusOr<std::unique_ptr<LeaderServer>> LeaderServer::Start(LeaderServerOptions options,
                                                                  PartyConnections* connections,
                                                                  admin::AdminBackend* admin) {
  if (absl::Status st = server::ValidateHostPort(options.listen, "listen address"); !st.ok())
    return st;
  std::unique_ptr<LeaderServer> server(new LeaderServer(std::move(options), connections, admin));

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  server::ApplyServerTransportSettings(builder);
  // Without this gRPC sets SO_REUSEPORT and a second leader on the same port would silently
  // share it instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // The listening socket is fedanon's (guarded_listener.h: gRPC's own stops accepting for good
  // after one EMFILE); gRPC gets each accepted connection and runs the mTLS handshake on it.
  absl::StatusOr<std::unique_ptr<GuardedListener>> listener =
      GuardedListener::Bind(server->options_.listen);
  if (!listener.ok()) {
    server->stopped_ = true;
    return listener.status();
  }
  server->listener_ = *std::move(listener);
  server->port_ = server->listener_->port();
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor =
      builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
          server->options_.tls_reload_seconds > 0
              ? server::MakeReloadingServerCredentials(server->options_.tls_paths,
                                                       server->options_.tls_reload_seconds)
              : server::MakeServerCredentials(server->options_.tls));
  builder.RegisterService(&server->party_link_);
  builder.RegisterService(&server->admin_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) {
    server->stopped_ = true;
    return absl::UnavailableError(
        absl::StrCat("cannot start the gRPC server on ", server->options_.listen));
  }
  server->listener_->Start(std::move(acceptor), kDescriptorHeadroom);
  if (grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService()) {
    for (const char* name : kServiceNames) health->SetServingStatus(name, true);
  }
  if (server->options_.store_check) {
    LeaderServer* raw = server.get();
    server->check_thread_ = std::thread([raw] { raw->CheckStoreLoop(); });
  }
  spdlog::info("leader '{}' listening on {} (port {})", server->options_.name,
               server->options_.listen, server->port_);
  // From now on name the bound port (the configured one may be 0).
  server->options_.listen = absl::StrCat(
      server->options_.listen.substr(0, server->options_.listen.rfind(':') + 1), server->port_);
  return server;
}

LeaderServer::~LeaderServer() { Shutdown(absl::ZeroDuration()); }

void LeaderServer::Shutdown(absl::Duration deadline) {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock lock(&check_mu_);
    check_stopping_ = true;
  }
  if (check_thread_.joinable()) check_thread_.join();
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->Shutdown();  // NOT_SERVING for every service, further changes ignored
  }
  admin_.BeginShutdown();
  // Party streams never end on their own; cancel them so that Shutdown need not wait out the
  // deadline. Parties reconnect after their backoff (to the next leader process).
  connections_->CancelAll();
  listener_->Stop();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + deadline));
  server_->Wait();
  spdlog::info("leader '{}' stopped listening on {}", options_.name, options_.listen);
}

bool LeaderServer::store_available() const {
  absl::MutexLock lock(&check_mu_);
  return store_available_;
}

void LeaderServer::CheckStoreLoop() {
  while (true) {
    const absl::Status status = options_.store_check();
    absl::MutexLock lock(&check_mu_);
    if (check_stopping_) return;  // Shutdown owns the health service from now on
    if (status.ok() != store_available_) {
      store_available_ = status.ok();
      if (store_available_) {
        spdlog::info("job store available again: health SERVING");
      } else {
        spdlog::error("job store unavailable, health NOT_SERVING until it answers: {}",
                      std::string(status.message()));
      }
      if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
        for (const char* name : kStoreDependentServices) {
          health->SetServingStatus(name, store_available_);
        }
      }
    }
    check_mu_.AwaitWithTimeout(absl::Condition(&check_stopping_), options_.store_check_interval);
    if (check_stopping_) return;
  }
}

}  // namespace fedanon::leader_daemon
