// The start-up and shutdown both daemons (fedanon-party, fedanon-leader) share: the process
// hardened before any thread exists, the command line parsed, the config loaded and logging set
// up, the daemon served until a termination signal, and one convention of exit codes (0 clean
// stop, 1 start-up error such as a bad config or an unreadable certificate, 2 usage error). Also
// the log lines of a settings reload, which both daemons write the same way.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/runtime/logging.h"
#include "server/runtime/periodic_reloader.h"

namespace CLI {
class App;
}

namespace fedanon::server {

struct DaemonProgram {
  std::string_view name;  // "fedanon-leader": the version line, the log lines, error prefixes
  // Loads the config file and applies the command line's overrides (after the command line is
  // parsed); returns the log format to use. An error ends the program (exit code by ExitCode).
  std::function<absl::StatusOr<LogFormat>()> configure;
  // Starts the daemon, serves until WaitForStop returns, shuts it down. An error is a start-up
  // failure (logged, exit code 1).
  std::function<absl::Status()> run;
};

// main() of a daemon: `app` holds the daemon's own options; DaemonMain adds --version. Before the
// command line is read: no core dumps and no ptrace by other users (the process holds private
// keys and table values), the termination signals blocked before any thread exists
// (server/runtime/signals.h), OpenSSL's secure heap for secret scalars.
int DaemonMain(CLI::App& app, const DaemonProgram& program, int argc, char** argv);

// Serves until SIGTERM or SIGINT (each SIGHUP meanwhile triggers `reloader`); logs the signal.
void WaitForStop(PeriodicReloader& reloader);

// What a daemon logs about its settings reloads, so that the periodic check logs only news: a
// failure is logged unless a periodic check repeats the last one; the settings that need a
// restart are named when they change; "nothing changed" only when someone asked (SIGHUP).
class ReloadLog {
 public:
  // `config_path`: the file re-read. `kept`: what the daemon keeps when a reload fails ("the
  // admins list, CA bundle and sealing key"). `reloaded_now`: what a reload applies.
  ReloadLog(std::string config_path, std::string kept, std::string reloaded_now);

  void Failed(const std::string& why, absl::string_view message);
  // A reload that loaded: `restart_needed` names the changed settings that a reload cannot apply.
  void Loaded(const std::vector<std::string>& restart_needed);
  void NothingChanged(const std::string& why) const;

 private:
  const std::string config_path_;
  const std::string kept_;
  const std::string reloaded_now_;
  std::vector<std::string> restart_needed_;
  std::string last_error_;
};

}  // namespace fedanon::server
