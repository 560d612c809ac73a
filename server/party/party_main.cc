// fedanon-party: the party daemon (one per institution). Dials out to the leader over mTLS, holds
// one stream and answers the leader's requests from the local table; stops on SIGTERM / SIGINT.
// Re-reads its admins list, CA bundle and sealing key pair every reload_seconds and on SIGHUP
// (server/runtime/config_reload.h; docs/operations.md "Rotating keys and certificates").
// Exit codes: 0 clean stop, 1 startup error (bad config, unreadable certificate or data dir),
// 2 usage error.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/program_main.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "party/party_agent.h"
#include "party/party_deviation.h"
#include "server/party/party_client.h"
#include "server/party/party_link_reporter.h"
#include "server/party/party_metrics.h"
#include "server/runtime/config.h"
#include "server/runtime/config_reload.h"
#include "server/runtime/daemon_main.h"
#include "server/runtime/logging.h"
#include "server/runtime/metrics.h"
#include "server/runtime/periodic_reloader.h"
#include "server/runtime/revocation.h"
#include "server/runtime/tls.h"
#include "server/runtime/unix_metrics_endpoint.h"

namespace fedanon::party_daemon {
namespace {

constexpr char kProgram[] = "fedanon-party";

struct Flags {
  std::string config;
  std::string leader;
  std::string data_dir;
  std::string output_dir;
  std::string log_format;
  std::string misbehave;  // tests and demonstrations of mohammed2011 §6 only
};

// party.yaml with the command line's overrides applied to `config` (the file as loaded).
absl::StatusOr<server::PartyConfig> ApplyFlags(const Flags& flags, server::PartyConfig config) {
  if (!flags.leader.empty()) {
    RETURN_IF_ERROR(server::ValidateHostPort(flags.leader, "--leader"));
    config.leader = flags.leader;
  }
  if (!flags.data_dir.empty()) {
    config.data_dir = server::ResolvePath(std::filesystem::current_path().string(), flags.data_dir);
  }
  if (!flags.output_dir.empty()) {
    config.output_dir =
        server::ResolvePath(std::filesystem::current_path().string(), flags.output_dir);
  }
  if (config.output_dir.empty()) config.output_dir = server::ResolvePath(config.data_dir, "output");
  if (!flags.log_format.empty()) {
    ASSIGN_OR_RETURN(config.log_format, server::ParseLogFormat(flags.log_format));
  }
  return config;
}

bool SameSettings(const party::PartyLiveSettings& a, const party::PartyLiveSettings& b) {
  return a.ca_pem == b.ca_pem && a.admins == b.admins && a.seal_cert_pem == b.seal_cert_pem &&
         a.seal_key_pem == b.seal_key_pem && a.sign_cert_pem == b.sign_cert_pem &&
         a.sign_key_pem == b.sign_key_pem;
}

// The agent's options from party.yaml (with the command line's overrides) and its TLS files.
absl::StatusOr<party::PartyAgentOptions> AgentOptionsOf(const server::PartyConfig& config,
                                                        const server::TlsMaterial& tls,
                                                        const std::string& misbehave) {
  party::PartyAgentOptions options;
  options.name = config.name;
  options.data_dir = config.data_dir;
  options.default_data_path = config.data;
  options.output_dir = config.output_dir;
  options.max_input_bytes = config.max_input_bytes;
  options.postgres_tables = config.postgres_tables;
  options.postgres_sink = config.postgres_sink;
  if (!misbehave.empty()) {
    ASSIGN_OR_RETURN(const party::MaliciousVerticalParty deviation,
                     party::MaliciousVerticalParty::Named(misbehave));
    options.deviation = std::make_shared<const party::MaliciousVerticalParty>(deviation);
  }
  options.admins = config.admins;
  options.policy = config.policy;
  options.ca_pem = tls.ca_pem;
  ASSIGN_OR_RETURN(options.seal_cert_pem,
                   server::ReadCertificateFile(config.seal.cert, "seal certificate"));
  ASSIGN_OR_RETURN(options.seal_key_pem, server::ReadPrivateKeyFile(config.seal.key, "seal key"));
  RETURN_IF_ERROR(server::ReadStatementSigner(config, tls.ca_pem, &options.sign_cert_pem,
                                              &options.sign_key_pem));
  if (options.sign_cert_pem.empty()) {
    spdlog::warn(
        "{} has no `sign:` (the statement-signing certificate and key): this party takes part "
        "in horizontal jobs only and a vertical job naming it fails; its kit predates "
        "statement-signing certificates: issue it one from the federation CA "
        "(docs/operations.md, Upgrades)",
        config.path);
  }
  return options;
}

// The link's options; `revocation` checks the leader's certificate at each connection.
PartyClientOptions ClientOptionsOf(const server::PartyConfig& config,
                                   const server::TlsMaterial& tls,
                                   server::RevocationCheck* revocation) {
  PartyClientOptions client_options;
  client_options.revocation = revocation;
  client_options.name = config.name;
  client_options.leader_address = config.leader;
  client_options.tls = tls;
  // Each connection re-reads the TLS files: a renewed certificate (or CA bundle) is used from
  // the next connection on, e.g. when the leader closes the stream as the old one expires.
  client_options.reload_tls = [paths = config.tls,
                               name = config.name]() -> absl::StatusOr<server::TlsMaterial> {
    ASSIGN_OR_RETURN(server::TlsMaterial fresh, server::LoadTlsMaterial(paths));
    RETURN_IF_ERROR(
        server::CheckOwnCertificate(fresh, crypto::Identity{crypto::Role::kParty, name}));
    return fresh;
  };
  return client_options;
}

// Rotation without a restart: admins, CA bundle, sealing and statement-signing key pairs. A file
// that does not load or fit changes nothing (logged as an error); the settings in use stay.
class PartyReloader {
 public:
  PartyReloader(const server::PartyConfig& config, const server::PartyConfig& file_config,
                party::PartyLiveSettings at_start, party::PartyAgent* agent, PartyClient* client,
                server::RevocationCheck* revocation)
      : file_config_(file_config),
        agent_(agent),
        client_(client),
        revocation_(revocation),
        applied_(std::move(at_start)),
        log_(config.path, "this party keeps the admins list, CA bundle and sealing key it uses now",
             "admins, the CA bundle, the sealing key pair") {}

  void Reload(const std::string& why) {
    absl::StatusOr<server::PartyReload> loaded = server::ReloadPartySettings(file_config_);
    absl::Status st = loaded.status();
    absl::StatusOr<bool> rotated = false;
    if (st.ok() && !SameSettings(loaded->settings, applied_)) {
      rotated = agent_->UpdateSettings(loaded->settings);
      st = rotated.status();
    }
    if (!st.ok()) {
      log_.Failed(why, st.message());
      return;
    }
    log_.Loaded(loaded->restart_needed);
    if (SameSettings(loaded->settings, applied_)) {
      log_.NothingChanged(why);
      return;
    }
    revocation_->SetCaPem(loaded->settings.ca_pem);
    spdlog::warn("reload ({}): {}{}{}", why, AdminsChange(loaded->settings),
                 loaded->settings.ca_pem == applied_.ca_pem ? "" : "CA bundle replaced; ",
                 *rotated ? "sealing key rotated: new jobs use the new key, running jobs keep "
                            "theirs"
                          : "");
    if (*rotated &&
        !client_->AnnounceSealCertificate(agent_->seal_cert_pem(), agent_->sign_cert_pem())) {
      spdlog::info("the new sealing certificate goes to the leader with the next hello");
    }
    applied_ = loaded->settings;
  }

 private:
  std::string AdminsChange(const party::PartyLiveSettings& loaded) const {
    if (loaded.admins == applied_.admins) return "";
    return absl::StrCat("admins now ",
                        loaded.admins ? absl::StrCat("[", absl::StrJoin(*loaded.admins, ", "), "]")
                                      : std::string("every admin the CA certified"),
                        "; ");
  }

  const server::PartyConfig& file_config_;
  party::PartyAgent* agent_;
  PartyClient* client_;
  server::RevocationCheck* revocation_;
  party::PartyLiveSettings applied_;
  server::ReloadLog log_;
};

// `file_config`: party.yaml as loaded at start, before the command line's overrides.
absl::Status Run(const server::PartyConfig& config, const server::PartyConfig& file_config,
                 const std::string& misbehave) {
  ASSIGN_OR_RETURN(const server::TlsMaterial tls, server::LoadTlsMaterial(config.tls));
  RETURN_IF_ERROR(
      server::CheckOwnCertificate(tls, crypto::Identity{crypto::Role::kParty, config.name}));
  ASSIGN_OR_RETURN(party::PartyAgentOptions options, AgentOptionsOf(config, tls, misbehave));
  const party::PartyLiveSettings at_start{
      tls.ca_pem,           config.admins,         options.seal_cert_pem,
      options.seal_key_pem, options.sign_cert_pem, options.sign_key_pem};
  // party.yaml `crl:`: the leader's certificate at each connection, every participant's sealing
  // certificate at each Prepare (re-read each time; fails closed).
  server::RevocationCheck revocation(config.crl, tls.ca_pem, "the party");
  if (revocation.enabled()) {
    options.revocation_check = [&revocation](const std::string& cert_pem) {
      return revocation.Check(cert_pem);
    };
  }

  PartyClientOptions client_options = ClientOptionsOf(config, tls, &revocation);
  client_options.seal_cert_pem = options.seal_cert_pem;
  client_options.sign_cert_pem = options.sign_cert_pem;
  ASSIGN_OR_RETURN(std::unique_ptr<party::PartyAgent> agent,
                   party::PartyAgent::Create(std::move(options)));

  // Metrics (loopback only, config.h) and the local status: systemd and party.status.
  server::MetricsRegistry registry;
  PartyMetrics metrics(&registry);
  std::unique_ptr<server::MetricsEndpoint> metrics_endpoint;
  const std::string metrics_socket = server::UnixSocketPath(config.metrics_listen);
  if (!config.metrics_listen.empty() && metrics_socket.empty()) {
    ASSIGN_OR_RETURN(metrics_endpoint,
                     server::MetricsEndpoint::Start(config.metrics_listen, registry));
    spdlog::info("metrics on http://{}/metrics (port {}, loopback only)", config.metrics_listen,
                 metrics_endpoint->port());
  }
  PartyLinkReporter reporter(PartyLinkReporterOptions{
      .output_dir = config.output_dir, .name = config.name, .leader = config.leader});
  client_options.observers = {&metrics, &reporter};
  client_options.leader_identity = [&agent](const std::string& leader) {
    agent->SetLinkedLeader(leader);
  };

  PartyClient client(
      std::move(client_options),
      [&agent](const fedanon::v1::LeaderMessage& request) { return agent->Handle(request); });
  // Metrics and health on a unix socket (mode 0660): after the client exists, for /health.
  std::unique_ptr<server::UnixMetricsEndpoint> socket_endpoint;
  if (!metrics_socket.empty()) {
    ASSIGN_OR_RETURN(
        socket_endpoint,
        server::UnixMetricsEndpoint::Start(
            metrics_socket, registry, [&client, leader = config.leader] {
              return client.connected()
                         ? std::make_pair(true, "linked: connected to the leader at " + leader)
                         : std::make_pair(false, "running, not linked to the leader at " + leader);
            }));
    spdlog::info("metrics and health on unix socket {} (/metrics, /health, /live; mode 0660)",
                 metrics_socket);
  }
  spdlog::info("{} '{}' starting (config {}, leader {})", base::VersionLine(kProgram), config.name,
               config.path, config.leader);
  if (!misbehave.empty()) {
    spdlog::warn(
        "MISBEHAVIOUR MODE '{}' IS ON: this party deviates from the protocol (for tests and "
        "demonstrations of what the other roles refuse only)",
        misbehave);
  }
  // The local start-up has passed (config, keys, data directory): ready, before the leader is
  // dialled, so that a leader that is down never makes systemd restart the party.
  RETURN_IF_ERROR(reporter.Ready());
  client.Start();

  PartyReloader reload(config, file_config, at_start, agent.get(), &client, &revocation);
  server::PeriodicReloader reloader(absl::Seconds(config.reload_seconds),
                                    [&reload](const std::string& why) { reload.Reload(why); });
  server::WaitForStop(reloader);
  socket_endpoint.reset();
  client.Stop();
  reporter.Stop();
  spdlog::info("stopped");
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"fedanon-party: the party daemon of a fedanon federation"};
  Flags flags;
  app.add_option("--config", flags.config, "Party config file (YAML)")->required();
  app.add_option("--leader", flags.leader, "Override 'leader' (host:port)");
  app.add_option("--data-dir", flags.data_dir, "Override 'data_dir'");
  app.add_option("--output-dir", flags.output_dir,
                 "Override 'output_dir' (a provisioned party.yaml says 'output', next to the "
                 "config file, which a read-only /etc/fedanon cannot hold)");
  app.add_option("--log-format", flags.log_format, "Override 'log_format'")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--misbehave", flags.misbehave,
                 "Tests/demonstrations only: deviate in vertical jobs (never-participate sends "
                 "Not-participate every round; under-declare sends score 0)")
      ->check(CLI::IsMember({"never-participate", "under-declare"}));
  std::optional<server::PartyConfig> file_config;  // party.yaml as loaded
  std::optional<server::PartyConfig> config;       // with the command line's overrides
  return server::DaemonMain(
      app,
      server::DaemonProgram{.name = kProgram,
                            .configure = [&]() -> absl::StatusOr<server::LogFormat> {
                              ASSIGN_OR_RETURN(file_config, server::LoadPartyConfig(flags.config));
                              ASSIGN_OR_RETURN(config, ApplyFlags(flags, *file_config));
                              return config->log_format;
                            },
                            .run = [&] { return Run(*config, *file_config, flags.misbehave); }},
      argc, argv);
}

}  // namespace
}  // namespace fedanon::party_daemon

int main(int argc, char** argv) {
  return fedanon::base::RunProgram("fedanon-party", fedanon::party_daemon::Main, argc, argv);
}
