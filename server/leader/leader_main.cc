// fedanon-leader: the leader daemon. Listens for party streams and admin calls (mTLS), drives
// federated jobs, stops gracefully on SIGTERM / SIGINT. Re-reads all_jobs_admins and its CA bundle
// every reload_seconds and on SIGHUP (server/runtime/config_reload.h).
// Exit codes: 0 clean stop, 1 startup error (bad config, unreadable certificate, port in use),
// 2 usage error.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/program_main.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/wire/protocol_version.h"
#include "leader/leader.h"
#include "leader/retention.h"
#include "server/leader/guarded_listener.h"
#include "server/leader/leader_admin_backend.h"
#include "server/leader/leader_metrics.h"
#include "server/leader/leader_server.h"
#include "server/leader/party_connections.h"
#include "server/runtime/config.h"
#include "server/runtime/config_reload.h"
#include "server/runtime/daemon_main.h"
#include "server/runtime/logging.h"
#include "server/runtime/metrics.h"
#include "server/runtime/periodic_reloader.h"
#include "server/runtime/tls.h"

namespace fedanon::leader_daemon {
namespace {

constexpr char kProgram[] = "fedanon-leader";
constexpr absl::Duration kShutdownGrace = absl::Seconds(4);  // + leader teardown: within 5 s

struct Flags {
  std::string config;
  std::string listen;
  std::string data_dir;
  std::string log_format;
  std::string metrics_listen;
};

// leader.yaml with the command line's overrides applied to `config` (the file as loaded).
absl::StatusOr<server::LeaderConfig> ApplyFlags(const Flags& flags, server::LeaderConfig config) {
  if (!flags.listen.empty()) {
    RETURN_IF_ERROR(server::ValidateHostPort(flags.listen, "--listen"));
    config.listen = flags.listen;
  }
  if (!flags.data_dir.empty()) {
    config.data_dir = server::ResolvePath(std::filesystem::current_path().string(), flags.data_dir);
  }
  if (!flags.log_format.empty()) {
    ASSIGN_OR_RETURN(config.log_format, server::ParseLogFormat(flags.log_format));
  }
  if (!flags.metrics_listen.empty()) {
    // The same rule as the config's: loopback, unless leader.yaml opts in.
    RETURN_IF_ERROR(server::ValidateMetricsAddress(
        flags.metrics_listen, config.metrics_allow_non_loopback, "--metrics-listen"));
    config.metrics_listen = flags.metrics_listen;
  }
  return config;
}

// The leader's options from leader.yaml (with the command line's overrides) and its TLS files.
absl::StatusOr<leader::LeaderOptions> LeaderOptionsOf(const server::LeaderConfig& config,
                                                      const server::TlsMaterial& tls) {
  leader::LeaderOptions options;
  options.name = config.name;
  options.data_dir = config.data_dir;
  options.round_timeout = absl::Seconds(config.round_timeout_seconds);
  options.max_concurrent_jobs = config.max_concurrent_jobs;
  options.max_queued_jobs = config.max_queued_jobs;
  options.resume_timeout = absl::Seconds(config.resume_timeout_seconds);
  options.max_resumes = config.max_resumes;
  options.party_wait = absl::Seconds(config.party_wait_seconds);
  options.max_message_bytes = static_cast<uint64_t>(config.max_message_bytes);
  options.id_batch_ids = static_cast<uint32_t>(config.id_batch_ids);
  options.ca_pem = tls.ca_pem;
  ASSIGN_OR_RETURN(options.seal_cert_pem,
                   server::ReadCertificateFile(config.seal.cert, "seal certificate"));
  ASSIGN_OR_RETURN(options.seal_key_pem, server::ReadPrivateKeyFile(config.seal.key, "seal key"));
  return options;
}

// leader.yaml `retention_seconds`: finished jobs' outputs deleted after that long; null when 0.
std::unique_ptr<leader::PeriodicRetention> StartRetention(const server::LeaderConfig& config,
                                                          leader::JobStore* store) {
  if (config.retention_seconds <= 0) return nullptr;
  const absl::Duration period = absl::Seconds(config.retention_seconds);
  spdlog::info(
      "retention: finished jobs' results, reports and view logs are deleted {} after "
      "the job ended (sweep now and every {})",
      absl::FormatDuration(period), absl::FormatDuration(leader::RetentionSweepInterval(period)));
  return std::make_unique<leader::PeriodicRetention>(
      store, leader::RetentionOptions{.period = period}, leader::RetentionSweepInterval(period));
}

LeaderServerOptions ServerOptionsOf(const server::LeaderConfig& config,
                                    const server::TlsMaterial& tls, leader::Leader* leader) {
  LeaderServerOptions server_options;
  server_options.name = config.name;
  server_options.listen = config.listen;
  server_options.tls = tls;
  server_options.tls_paths = config.tls;
  server_options.tls_reload_seconds = config.tls_reload_seconds;
  server_options.crl_path = config.crl;
  server_options.all_jobs_admins = config.all_jobs_admins;
  server_options.store_check = [leader] { return leader->CheckStore(); };
  return server_options;
}

// Without a restart: all_jobs_admins and the CA bundle of the sealing-certificate and CRL
// checks. A file that does not load changes nothing (logged as an error).
class LeaderReloader {
 public:
  LeaderReloader(const server::LeaderConfig& config, const server::LeaderConfig& file_config,
                 const std::string& ca_pem, LeaderServer* server)
      : file_config_(file_config),
        server_(server),
        applied_ca_(ca_pem),
        applied_admins_(config.all_jobs_admins),
        log_(config.path, "the leader keeps the all_jobs_admins list and CA bundle it uses now",
             "all_jobs_admins, the CA bundle") {}

  void Reload(const std::string& why) {
    absl::StatusOr<server::LeaderReload> loaded = server::ReloadLeaderSettings(file_config_);
    if (!loaded.ok()) {
      log_.Failed(why, loaded.status().message());
      return;
    }
    log_.Loaded(loaded->restart_needed);
    if (loaded->ca_pem == applied_ca_ && loaded->all_jobs_admins == applied_admins_) {
      log_.NothingChanged(why);
      return;
    }
    server_->UpdateSettings(loaded->ca_pem, loaded->all_jobs_admins);
    spdlog::warn("reload ({}): all_jobs_admins [{}]{}", why,
                 absl::StrJoin(loaded->all_jobs_admins, ", "),
                 loaded->ca_pem == applied_ca_ ? "" : "; CA bundle replaced");
    applied_ca_ = loaded->ca_pem;
    applied_admins_ = loaded->all_jobs_admins;
  }

 private:
  const server::LeaderConfig& file_config_;
  LeaderServer* server_;
  std::string applied_ca_;
  std::vector<std::string> applied_admins_;
  server::ReloadLog log_;
};

// Runs until a termination signal; returns the startup error if there is one.
// `file_config`: leader.yaml as loaded at start, before the command line's overrides.
absl::Status Run(const server::LeaderConfig& config, const server::LeaderConfig& file_config) {
  // Every connection takes a descriptor: use all the hard limit allows (guarded_listener.h).
  const uint64_t descriptors = RaiseDescriptorLimit();
  ASSIGN_OR_RETURN(const server::TlsMaterial tls, server::LoadTlsMaterial(config.tls));
  RETURN_IF_ERROR(
      server::CheckOwnCertificate(tls, crypto::Identity{crypto::Role::kLeader, config.name}));
  ASSIGN_OR_RETURN(leader::LeaderOptions options, LeaderOptionsOf(config, tls));

  // Destroyed in reverse order: metrics endpoint, server (no more calls), backend, leader,
  // connections, metrics.
  server::MetricsRegistry registry;
  PartyConnections connections;
  leader::Leader* leader_for_metrics = nullptr;  // set below, before the endpoint starts
  LeaderMetricsSources sources;
  // One GROUP BY query per scrape (not the job list) and the in-memory queue length.
  sources.job_counts =
      [&leader_for_metrics]() -> absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>> {
    if (absl::Status st = leader_for_metrics->CheckStore(); !st.ok()) return st;
    return leader_for_metrics->store()->CountByState();
  };
  sources.queued_jobs = [&leader_for_metrics] { return leader_for_metrics->Queue().queued; };
  sources.connected_parties = [&connections] { return connections.size(); };
  LeaderMetrics metrics(&registry, std::move(sources));
  connections.set_traffic(&metrics);
  options.observer = &metrics;
  ASSIGN_OR_RETURN(std::unique_ptr<leader::Leader> leader,
                   leader::Leader::Create(std::move(options), &connections));
  leader_for_metrics = leader.get();
  // Results and view logs at rest: the leader's user only (also for files an older release or an
  // operator left with wider modes).
  ASSIGN_OR_RETURN(const int tightened, leader::SecureLeaderDataDir(config.data_dir));
  if (tightened > 0)
    spdlog::warn("{} modes in {} tightened to 0700/0600", tightened, config.data_dir);
  std::unique_ptr<leader::PeriodicRetention> retention = StartRetention(config, leader->store());
  std::unique_ptr<admin::AdminBackend> backend = NewLeaderAdminBackend(leader.get());
  ASSIGN_OR_RETURN(
      std::unique_ptr<LeaderServer> server,
      LeaderServer::Start(ServerOptionsOf(config, tls, leader.get()), &connections, backend.get()));
  std::unique_ptr<server::MetricsEndpoint> metrics_endpoint;
  if (!config.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_endpoint,
                     server::MetricsEndpoint::Start(config.metrics_listen, registry));
    spdlog::info("metrics on http://{}/metrics (port {})", config.metrics_listen,
                 metrics_endpoint->port());
  }
  spdlog::info(
      "{} ready (config {}, data dir {}, {} descriptors, protocol {}, up to {} jobs at once and {} "
      "queued, payload chunks under {} bytes)",
      base::VersionLine(kProgram), config.path, config.data_dir, descriptors,
      wire::ProtocolVersionText(wire::kProtocolVersion), config.max_concurrent_jobs,
      config.max_queued_jobs, config.max_message_bytes);

  LeaderReloader reload(config, file_config, tls.ca_pem, server.get());
  auto reloader = std::make_unique<server::PeriodicReloader>(
      absl::Seconds(config.reload_seconds),
      [&reload](const std::string& why) { reload.Reload(why); });
  server::WaitForStop(*reloader);
  reloader.reset();
  metrics_endpoint.reset();
  server->Shutdown(kShutdownGrace);
  server.reset();
  retention.reset();
  backend.reset();
  leader.reset();
  spdlog::info("stopped");
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"fedanon-leader: the leader daemon of a fedanon federation"};
  Flags flags;
  app.add_option("--config", flags.config, "Leader config file (YAML)")->required();
  app.add_option("--listen", flags.listen, "Override 'listen' (host:port)");
  app.add_option("--data-dir", flags.data_dir, "Override 'data_dir'");
  app.add_option("--log-format", flags.log_format, "Override 'log_format'")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "Override 'metrics_listen' (host:port; loopback unless leader.yaml sets "
                 "metrics_allow_non_loopback: true)");
  std::optional<server::LeaderConfig> file_config;  // leader.yaml as loaded
  std::optional<server::LeaderConfig> config;       // with the command line's overrides
  return server::DaemonMain(
      app,
      server::DaemonProgram{.name = kProgram,
                            .configure = [&]() -> absl::StatusOr<server::LogFormat> {
                              ASSIGN_OR_RETURN(file_config, server::LoadLeaderConfig(flags.config));
                              ASSIGN_OR_RETURN(config, ApplyFlags(flags, *file_config));
                              return config->log_format;
                            },
                            .run = [&] { return Run(*config, *file_config); }},
      argc, argv);
}

}  // namespace
}  // namespace fedanon::leader_daemon

int main(int argc, char** argv) {
  return fedanon::base::RunProgram("fedanon-leader", fedanon::leader_daemon::Main, argc, argv);
}
