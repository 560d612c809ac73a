// fedanon-leader: the leader daemon. Listens for party streams and admin calls (mTLS), drives
// federated jobs, stops gracefully on SIGTERM / SIGINT. Re-reads all_jobs_admins and its CA bundle
// every reload_seconds and on SIGHUP (server/config_reload.h).
// Exit codes: 0 clean stop, 1 startup error (bad config, unreadable certificate, port in use),
// 2 usage error.
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/wire/protocol_version.h"
#include "crypto/secret_bytes.h"
#include "leader/leader.h"
#include "leader/retention.h"
#include "server/command_line.h"
#include "server/config.h"
#include "server/config_reload.h"
#include "server/guarded_listener.h"
#include "server/leader_admin_backend.h"
#include "server/leader_metrics.h"
#include "server/leader_server.h"
#include "server/logging.h"
#include "server/metrics.h"
#include "server/party_connections.h"
#include "server/periodic_reloader.h"
#include "server/signals.h"
#include "server/tls.h"

namespace fedanon::server {
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
absl::StatusOr<LeaderConfig> ApplyFlags(const Flags& flags, LeaderConfig config) {
  if (!flags.listen.empty()) {
    RETURN_IF_ERROR(ValidateHostPort(flags.listen, "--listen"));
    config.listen = flags.listen;
  }
  if (!flags.data_dir.empty()) {
    config.data_dir = ResolvePath(std::filesystem::current_path().string(), flags.data_dir);
  }
  if (!flags.log_format.empty()) {
    ASSIGN_OR_RETURN(config.log_format, ParseLogFormat(flags.log_format));
  }
  if (!flags.metrics_listen.empty()) {
    // The same rule as the config's: loopback, unless leader.yaml opts in.
    RETURN_IF_ERROR(ValidateMetricsAddress(flags.metrics_listen, config.metrics_allow_non_loopback,
                                           "--metrics-listen"));
    config.metrics_listen = flags.metrics_listen;
  }
  return config;
}

// Runs until a termination signal; returns the startup error if there is one.
// `file_config`: leader.yaml as loaded at start, before the command line's overrides.
absl::Status Run(const LeaderConfig& config, const LeaderConfig& file_config) {
  ASSIGN_OR_RETURN(const TlsMaterial tls, LoadTlsMaterial(config.tls));
  RETURN_IF_ERROR(CheckOwnCertificate(tls, crypto::Identity{crypto::Role::kLeader, config.name}));
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
                   ReadCertificateFile(config.seal.cert, "seal certificate"));
  ASSIGN_OR_RETURN(options.seal_key_pem, ReadPrivateKeyFile(config.seal.key, "seal key"));

  // Destroyed in reverse order: metrics endpoint, server (no more calls), backend, leader,
  // connections, metrics.
  MetricsRegistry registry;
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
  std::unique_ptr<leader::PeriodicRetention> retention;
  if (config.retention_seconds > 0) {
    const absl::Duration period = absl::Seconds(config.retention_seconds);
    spdlog::info(
        "retention: finished jobs' results, reports and view logs are deleted {} after "
        "the job ended (sweep now and every {})",
        absl::FormatDuration(period), absl::FormatDuration(leader::RetentionSweepInterval(period)));
    retention = std::make_unique<leader::PeriodicRetention>(
        leader->store(), leader::RetentionOptions{.period = period},
        leader::RetentionSweepInterval(period));
  }
  std::unique_ptr<AdminBackend> backend = NewLeaderAdminBackend(leader.get());
  LeaderServerOptions server_options;
  server_options.name = config.name;
  server_options.listen = config.listen;
  server_options.tls = tls;
  server_options.tls_paths = config.tls;
  server_options.tls_reload_seconds = config.tls_reload_seconds;
  server_options.crl_path = config.crl;
  server_options.all_jobs_admins = config.all_jobs_admins;
  server_options.store_check = [&leader] { return leader->CheckStore(); };
  ASSIGN_OR_RETURN(std::unique_ptr<LeaderServer> server,
                   LeaderServer::Start(std::move(server_options), &connections, backend.get()));
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  if (!config.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_endpoint, MetricsEndpoint::Start(config.metrics_listen, registry));
    spdlog::info("metrics on http://{}/metrics (port {})", config.metrics_listen,
                 metrics_endpoint->port());
  }
  spdlog::info(
      "{} ready (config {}, data dir {}, {} descriptors, protocol {}, up to {} jobs at once and {} "
      "queued, payload chunks under {} bytes)",
      common::VersionLine(kProgram), config.path, config.data_dir, RaiseDescriptorLimit(),
      common::ProtocolVersionText(common::kProtocolVersion), config.max_concurrent_jobs,
      config.max_queued_jobs, config.max_message_bytes);

  // Without a restart: all_jobs_admins and the CA bundle of the sealing-certificate and CRL
  // checks. A file that does not load changes nothing (logged as an error).
  std::string applied_ca = tls.ca_pem;
  std::vector<std::string> applied_admins = config.all_jobs_admins;
  std::vector<std::string> restart_needed;
  std::string last_error;
  auto reload = [&](const std::string& why) {
    absl::StatusOr<LeaderReload> loaded = ReloadLeaderSettings(file_config);
    if (!loaded.ok()) {
      const std::string message(loaded.status().message());
      if (why != "periodic check" || message != last_error) {
        spdlog::error(
            "RELOAD FAILED ({}): {}; the leader keeps the all_jobs_admins list and CA bundle it "
            "uses now",
            why, message);
      }
      last_error = message;
      return;
    }
    last_error.clear();
    if (loaded->restart_needed != restart_needed && !loaded->restart_needed.empty()) {
      spdlog::warn(
          "{} changed in {}: it takes effect at the next restart (reloaded now: all_jobs_admins, "
          "the CA bundle)",
          absl::StrJoin(loaded->restart_needed, ", "), config.path);
    }
    restart_needed = loaded->restart_needed;
    if (loaded->ca_pem == applied_ca && loaded->all_jobs_admins == applied_admins) {
      if (why != "periodic check") spdlog::info("reload ({}): nothing changed", why);
      return;
    }
    server->UpdateSettings(loaded->ca_pem, loaded->all_jobs_admins);
    spdlog::warn("reload ({}): all_jobs_admins [{}]{}", why,
                 absl::StrJoin(loaded->all_jobs_admins, ", "),
                 loaded->ca_pem == applied_ca ? "" : "; CA bundle replaced");
    applied_ca = loaded->ca_pem;
    applied_admins = loaded->all_jobs_admins;
  };
  auto reloader = std::make_unique<PeriodicReloader>(absl::Seconds(config.reload_seconds), reload);
  const int signal = WaitForTerminationSignal([&reloader] { reloader->Trigger("SIGHUP"); });
  spdlog::info("received signal {}, shutting down", signal);
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
  // No core dumps, no ptrace by other users' processes: the daemon's memory holds private keys
  // and table values.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) spdlog::warn("cannot turn core dumps off");
  BlockTerminationSignals();  // before any thread exists
  // Secret scalars (BN_secure_new) in OpenSSL's locked arena, before any thread uses OpenSSL.
  std::string secure_heap_warning;
  if (absl::Status st = crypto::InitSecureHeap(&secure_heap_warning); !st.ok()) {
    spdlog::warn("{}: secret scalars use the ordinary heap", std::string(st.message()));
  } else if (!secure_heap_warning.empty()) {
    spdlog::warn("{}", secure_heap_warning);
  }
  // Every connection takes a descriptor: use all the hard limit allows (guarded_listener.h).
  RaiseDescriptorLimit();
  CLI::App app{"fedanon-leader: the leader daemon of a fedanon federation"};
  Flags flags;
  app.set_version_flag("--version", std::string(common::VersionLine(kProgram)));
  app.add_option("--config", flags.config, "Leader config file (YAML)")->required();
  app.add_option("--listen", flags.listen, "Override 'listen' (host:port)");
  app.add_option("--data-dir", flags.data_dir, "Override 'data_dir'");
  app.add_option("--log-format", flags.log_format, "Override 'log_format'")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "Override 'metrics_listen' (host:port; loopback unless leader.yaml sets "
                 "metrics_allow_non_loopback: true)");
  if (std::optional<int> code = ParseCommandLine(app, argc, argv)) return *code;

  absl::StatusOr<LeaderConfig> file_config = LoadLeaderConfig(flags.config);
  if (!file_config.ok()) return ExitCode(file_config.status(), kProgram);
  absl::StatusOr<LeaderConfig> config = ApplyFlags(flags, *file_config);
  if (!config.ok()) return ExitCode(config.status(), kProgram);
  InitLogging(kProgram, config->log_format);
  if (absl::Status st = Run(*config, *file_config); !st.ok()) {
    spdlog::critical("cannot start: {}", std::string(st.message()));
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace
}  // namespace fedanon::server

int main(int argc, char** argv) { return fedanon::server::Main(argc, argv); }
