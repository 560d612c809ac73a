#include "cli/party_status.h"

#include <errno.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/status_macros.h"
#include "server/runtime/config.h"

namespace fedanon::cli {
namespace {

struct StatusFlags {
  std::string config;
  std::string state_dir;
  int64_t max_age_seconds = 30;
  bool allow_unlinked = false;
};

absl::StatusOr<std::string> StateDir(const StatusFlags& flags) {
  if (!flags.state_dir.empty()) return flags.state_dir;
  ASSIGN_OR_RETURN(const server::PartyConfig config, server::LoadPartyConfig(flags.config));
  // As fedanon-party: the status file sits in output_dir, beside the run ledger.
  return config.output_dir.empty() ? server::ResolvePath(config.data_dir, "output")
                                   : config.output_dir;
}

// Whether `pid` runs and, where /proc tells, is a fedanon-party (not a reused pid).
bool ProcessAlive(int64_t pid) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0) {
    if (errno != EPERM) return false;
  }
  std::ifstream comm(absl::StrCat("/proc/", pid, "/comm"));
  std::string name;
  if (!comm || !std::getline(comm, name)) return true;  // no /proc: trust kill()
  return name == "fedanon-party";
}

std::string Ago(int64_t seconds) { return absl::StrCat(seconds < 0 ? 0 : seconds, " s ago"); }

int Run(const StatusFlags& flags) {
  if (flags.config.empty() == flags.state_dir.empty()) {
    return server::ExitCode(server::UsageError("give exactly one of --config and --state-dir"),
                            "fedanon party status");
  }
  if (flags.max_age_seconds <= 0) {
    return server::ExitCode(server::UsageError("--max-age must be a positive number of seconds"),
                            "fedanon party status");
  }
  absl::StatusOr<std::string> dir = StateDir(flags);
  if (!dir.ok()) return server::ExitCode(dir.status(), "fedanon party status");
  absl::StatusOr<party_daemon::PartyStatus> status = party_daemon::ReadPartyStatus(*dir);
  if (absl::IsNotFound(status.status())) {
    std::cout << "not running: no status file in " << *dir
              << " (the party daemon has not started, or uses another --output-dir)\n";
    return server::kExitFailure;
  }
  if (!status.ok()) return server::ExitCode(status.status(), "fedanon party status");
  const PartyStatusVerdict verdict =
      JudgePartyStatus(*status, absl::ToUnixSeconds(absl::Now()), flags.max_age_seconds,
                       ProcessAlive(status->pid), flags.allow_unlinked);
  std::cout << verdict.line << "\n";
  return verdict.exit_code;
}

}  // namespace

PartyStatusVerdict JudgePartyStatus(const party_daemon::PartyStatus& status, int64_t now_unix,
                                    int64_t max_age_seconds, bool process_alive,
                                    bool allow_unlinked) {
  const std::string who = absl::StrCat("party '", status.name, "' (pid ", status.pid, ")");
  if (status.link == party_daemon::PartyLinkState::kStopped) {
    return {server::kExitFailure,
            absl::StrCat("not running: ", who, " stopped ", Ago(now_unix - status.since_unix))};
  }
  if (!process_alive) {
    return {server::kExitFailure,
            absl::StrCat("not running: ", who, " is gone (its status was written ",
                         Ago(now_unix - status.updated_unix), ")")};
  }
  if (now_unix - status.updated_unix > max_age_seconds) {
    return {server::kExitFailure,
            absl::StrCat("not responding: ", who, " last wrote its status ",
                         Ago(now_unix - status.updated_unix), " (more than ", max_age_seconds,
                         " s: the daemon is stuck or its state directory is not writable)")};
  }
  const std::string since = Ago(now_unix - status.since_unix);
  if (status.link == party_daemon::PartyLinkState::kUp) {
    return {server::kExitOk,
            absl::StrCat("linked: ", who, " ", status.detail, " (since ", since, ")")};
  }
  return {allow_unlinked ? server::kExitOk : kExitPartyUnlinked,
          absl::StrCat("running, not linked: ", who, " ", status.detail, " (since ", since, ")")};
}

server::CommandAction DeclarePartyStatusCommand(CLI::App* party) {
  CLI::App* status = party->add_subcommand(
      "status",
      "Whether this host's party daemon runs and is linked to the leader (from party.status in "
      "its state directory; exit 0 linked, 3 running but not linked, 1 not running)");
  auto flags = std::make_shared<StatusFlags>();
  status->add_option("--config", flags->config,
                     "The party's config (party.yaml): its output_dir holds party.status");
  status->add_option("--state-dir", flags->state_dir,
                     "The party's state directory (output_dir) instead of --config");
  status->add_option("--max-age", flags->max_age_seconds,
                     "Seconds after which the status file counts as stale (default 30)");
  status->add_flag("--allow-unlinked", flags->allow_unlinked,
                   "Exit 0 also while the daemon runs without a link to the leader (a "
                   "healthcheck of the process, not of the federation)");
  return [flags] { return Run(*flags); };
}

}  // namespace fedanon::cli
