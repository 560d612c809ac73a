// fedanon-party: the party daemon (one per institution). Dials out to the leader over mTLS, holds
// one stream and answers the leader's requests from the local table; stops on SIGTERM / SIGINT.
// Re-reads its admins list, CA bundle and sealing key pair every reload_seconds and on SIGHUP
// (server/config_reload.h; docs/operations.md "Rotating keys and certificates").
// Exit codes: 0 clean stop, 1 startup error (bad config, unreadable certificate or data dir),
// 2 usage error.
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "crypto/secret_bytes.h"
#include "party/party_agent.h"
#include "server/command_line.h"
#include "server/config.h"
#include "server/config_reload.h"
#include "server/logging.h"
#include "server/metrics.h"
#include "server/party_client.h"
#include "server/party_link_reporter.h"
#include "server/party_metrics.h"
#include "server/periodic_reloader.h"
#include "server/revocation.h"
#include "server/signals.h"
#include "server/tls.h"
#include "server/unix_metrics_endpoint.h"

namespace fedanon::server {
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
absl::StatusOr<PartyConfig> ApplyFlags(const Flags& flags, PartyConfig config) {
  if (!flags.leader.empty()) {
    RETURN_IF_ERROR(ValidateHostPort(flags.leader, "--leader"));
    config.leader = flags.leader;
  }
  if (!flags.data_dir.empty()) {
    config.data_dir = ResolvePath(std::filesystem::current_path().string(), flags.data_dir);
  }
  if (!flags.output_dir.empty()) {
    config.output_dir = ResolvePath(std::filesystem::current_path().string(), flags.output_dir);
  }
  if (config.output_dir.empty()) config.output_dir = ResolvePath(config.data_dir, "output");
  if (!flags.log_format.empty()) {
    ASSIGN_OR_RETURN(config.log_format, ParseLogFormat(flags.log_format));
  }
  return config;
}

// What the reloader last applied and said, so that a periodic check logs only news.
struct ReloadState {
  party::PartyLiveSettings applied;
  std::vector<std::string> restart_needed;
  std::string last_error;
};

bool SameSettings(const party::PartyLiveSettings& a, const party::PartyLiveSettings& b) {
  return a.ca_pem == b.ca_pem && a.admins == b.admins && a.seal_cert_pem == b.seal_cert_pem &&
         a.seal_key_pem == b.seal_key_pem && a.sign_cert_pem == b.sign_cert_pem &&
         a.sign_key_pem == b.sign_key_pem;
}

// `file_config`: party.yaml as loaded at start, before the command line's overrides.
absl::Status Run(const PartyConfig& config, const PartyConfig& file_config,
                 const std::string& misbehave) {
  ASSIGN_OR_RETURN(const TlsMaterial tls, LoadTlsMaterial(config.tls));
  RETURN_IF_ERROR(CheckOwnCertificate(tls, crypto::Identity{crypto::Role::kParty, config.name}));
  party::PartyAgentOptions options;
  options.name = config.name;
  options.data_dir = config.data_dir;
  options.default_data_path = config.data;
  options.output_dir = config.output_dir;
  options.max_input_bytes = config.max_input_bytes;
  options.postgres_tables = config.postgres_tables;
  options.postgres_sink = config.postgres_sink;
  options.misbehave = misbehave;
  options.admins = config.admins;
  options.policy = config.policy;
  options.ca_pem = tls.ca_pem;
  ASSIGN_OR_RETURN(options.seal_cert_pem,
                   ReadCertificateFile(config.seal.cert, "seal certificate"));
  ASSIGN_OR_RETURN(options.seal_key_pem, ReadPrivateKeyFile(config.seal.key, "seal key"));
  RETURN_IF_ERROR(
      ReadStatementSigner(config, tls.ca_pem, &options.sign_cert_pem, &options.sign_key_pem));
  if (options.sign_cert_pem.empty()) {
    spdlog::warn(
        "{} has no `sign:` (the statement-signing certificate and key): this party takes part "
        "in horizontal jobs only and a vertical job naming it fails; its kit predates "
        "statement-signing certificates: issue it one from the federation CA "
        "(docs/operations.md, Upgrades)",
        config.path);
  }
  const party::PartyLiveSettings at_start{
      tls.ca_pem,           config.admins,         options.seal_cert_pem,
      options.seal_key_pem, options.sign_cert_pem, options.sign_key_pem};
  // party.yaml `crl:`: the leader's certificate at each connection, every participant's sealing
  // certificate at each Prepare (re-read each time; fails closed).
  RevocationCheck revocation(config.crl, tls.ca_pem, "the party");
  if (revocation.enabled()) {
    options.revocation_check = [&revocation](const std::string& cert_pem) {
      return revocation.Check(cert_pem);
    };
  }

  PartyClientOptions client_options;
  client_options.revocation = &revocation;
  client_options.name = config.name;
  client_options.leader_address = config.leader;
  client_options.tls = tls;
  // Each connection re-reads the TLS files: a renewed certificate (or CA bundle) is used from
  // the next connection on, e.g. when the leader closes the stream as the old one expires.
  client_options.reload_tls = [paths = config.tls,
                               name = config.name]() -> absl::StatusOr<TlsMaterial> {
    ASSIGN_OR_RETURN(TlsMaterial fresh, LoadTlsMaterial(paths));
    RETURN_IF_ERROR(CheckOwnCertificate(fresh, crypto::Identity{crypto::Role::kParty, name}));
    return fresh;
  };
  client_options.seal_cert_pem = options.seal_cert_pem;
  client_options.sign_cert_pem = options.sign_cert_pem;
  ASSIGN_OR_RETURN(std::unique_ptr<party::PartyAgent> agent,
                   party::PartyAgent::Create(std::move(options)));

  // Metrics (loopback only, config.h) and the local status: systemd and party.status.
  MetricsRegistry registry;
  PartyMetrics metrics(&registry);
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  const std::string metrics_socket = UnixSocketPath(config.metrics_listen);
  if (!config.metrics_listen.empty() && metrics_socket.empty()) {
    ASSIGN_OR_RETURN(metrics_endpoint, MetricsEndpoint::Start(config.metrics_listen, registry));
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
  std::unique_ptr<UnixMetricsEndpoint> socket_endpoint;
  if (!metrics_socket.empty()) {
    ASSIGN_OR_RETURN(
        socket_endpoint,
        UnixMetricsEndpoint::Start(metrics_socket, registry, [&client, leader = config.leader] {
          return client.connected()
                     ? std::make_pair(true, "linked: connected to the leader at " + leader)
                     : std::make_pair(false, "running, not linked to the leader at " + leader);
        }));
    spdlog::info("metrics and health on unix socket {} (/metrics, /health, /live; mode 0660)",
                 metrics_socket);
  }
  spdlog::info("{} '{}' starting (config {}, leader {})", common::VersionLine(kProgram),
               config.name, config.path, config.leader);
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

  // Rotation without a restart: admins, CA bundle, sealing key pair. A file that does not load
  // or fit changes nothing (logged as an error); the settings in use stay.
  ReloadState state;
  state.applied = at_start;
  auto reload = [&](const std::string& why) {
    absl::StatusOr<PartyReload> loaded = ReloadPartySettings(file_config);
    absl::Status st = loaded.status();
    absl::StatusOr<bool> rotated = false;
    if (st.ok() && !SameSettings(loaded->settings, state.applied)) {
      rotated = agent->UpdateSettings(loaded->settings);
      st = rotated.status();
    }
    if (!st.ok()) {
      const std::string message(st.message());
      if (why != "periodic check" || message != state.last_error) {
        spdlog::error(
            "RELOAD FAILED ({}): {}; this party keeps the admins list, CA bundle and sealing key "
            "it uses now",
            why, message);
      }
      state.last_error = message;
      return;
    }
    state.last_error.clear();
    if (loaded->restart_needed != state.restart_needed && !loaded->restart_needed.empty()) {
      spdlog::warn(
          "{} changed in {}: it takes effect at the next restart (reloaded now: admins, "
          "the CA bundle, the sealing key pair)",
          absl::StrJoin(loaded->restart_needed, ", "), config.path);
    }
    state.restart_needed = loaded->restart_needed;
    if (SameSettings(loaded->settings, state.applied)) {
      if (why != "periodic check") spdlog::info("reload ({}): nothing changed", why);
      return;
    }
    revocation.SetCaPem(loaded->settings.ca_pem);
    spdlog::warn(
        "reload ({}): {}{}{}", why,
        loaded->settings.admins == state.applied.admins
            ? ""
            : absl::StrCat(
                  "admins now ",
                  loaded->settings.admins
                      ? absl::StrCat("[", absl::StrJoin(*loaded->settings.admins, ", "), "]")
                      : std::string("every admin the CA certified"),
                  "; "),
        loaded->settings.ca_pem == state.applied.ca_pem ? "" : "CA bundle replaced; ",
        *rotated ? "sealing key rotated: new jobs use the new key, running jobs keep "
                   "theirs"
                 : "");
    if (*rotated &&
        !client.AnnounceSealCertificate(agent->seal_cert_pem(), agent->sign_cert_pem())) {
      spdlog::info("the new sealing certificate goes to the leader with the next hello");
    }
    state.applied = loaded->settings;
  };
  PeriodicReloader reloader(absl::Seconds(config.reload_seconds), reload);
  const int signal = WaitForTerminationSignal([&reloader] { reloader.Trigger("SIGHUP"); });
  spdlog::info("received signal {}, stopping", signal);
  socket_endpoint.reset();
  client.Stop();
  reporter.Stop();
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
  CLI::App app{"fedanon-party: the party daemon of a fedanon federation"};
  Flags flags;
  app.set_version_flag("--version", std::string(common::VersionLine(kProgram)));
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
  if (std::optional<int> code = ParseCommandLine(app, argc, argv)) return *code;

  absl::StatusOr<PartyConfig> file_config = LoadPartyConfig(flags.config);
  if (!file_config.ok()) return ExitCode(file_config.status(), kProgram);
  absl::StatusOr<PartyConfig> config = ApplyFlags(flags, *file_config);
  if (!config.ok()) return ExitCode(config.status(), kProgram);
  InitLogging(kProgram, config->log_format);
  if (absl::Status st = Run(*config, *file_config, flags.misbehave); !st.ok()) {
    spdlog::critical("cannot start: {}", std::string(st.message()));
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace
}  // namespace fedanon::server

int main(int argc, char** argv) { return fedanon::server::Main(argc, argv); }
