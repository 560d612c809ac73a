#include "server/runtime/daemon_main.h"

#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <utility>

#include "absl/strings/str_join.h"
#include "common/base/version.h"
#include "crypto/secret_bytes.h"
#include "server/runtime/command_line.h"
#include "server/runtime/signals.h"

namespace fedanon::server {
namespace {

constexpr char kPeriodicCheck[] = "periodic check";

void HardenProcess() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) spdlog::warn("cannot turn core dumps off");
  BlockTerminationSignals();
  // Secret scalars (BN_secure_new) in OpenSSL's locked arena, before any thread uses OpenSSL.
  std::string secure_heap_warning;
  if (absl::Status st = crypto::InitSecureHeap(&secure_heap_warning); !st.ok()) {
    spdlog::warn("{}: secret scalars use the ordinary heap", std::string(st.message()));
  } else if (!secure_heap_warning.empty()) {
    spdlog::warn("{}", secure_heap_warning);
  }
}

}  // namespace

int DaemonMain(CLI::App& app, const DaemonProgram& program, int argc, char** argv) {
  HardenProcess();
  app.set_version_flag("--version", std::string(base::VersionLine(program.name)));
  if (std::optional<int> code = ParseCommandLine(app, argc, argv)) return *code;
  absl::StatusOr<LogFormat> log_format = program.configure();
  if (!log_format.ok()) return ExitCode(log_format.status(), program.name);
  InitLogging(program.name, *log_format);
  if (absl::Status st = program.run(); !st.ok()) {
    spdlog::critical("cannot start: {}", std::string(st.message()));
    return kExitFailure;
  }
  return kExitOk;
}

void WaitForStop(PeriodicReloader& reloader) {
  const int signal = WaitForTerminationSignal([&reloader] { reloader.Trigger("SIGHUP"); });
  spdlog::info("received signal {}, stopping", signal);
}

ReloadLog::ReloadLog(std::string config_path, std::string kept, std::string reloaded_now)
    : config_path_(std::move(config_path)),
      kept_(std::move(kept)),
      reloaded_now_(std::move(reloaded_now)) {}

void ReloadLog::Failed(const std::string& why, absl::string_view message) {
  std::string text(message);
  if (why != kPeriodicCheck || text != last_error_) {
    spdlog::error("RELOAD FAILED ({}): {}; {}", why, text, kept_);
  }
  last_error_ = std::move(text);
}

void ReloadLog::Loaded(const std::vector<std::string>& restart_needed) {
  last_error_.clear();
  if (restart_needed != restart_needed_ && !restart_needed.empty()) {
    spdlog::warn("{} changed in {}: it takes effect at the next restart (reloaded now: {})",
                 absl::StrJoin(restart_needed, ", "), config_path_, reloaded_now_);
  }
  restart_needed_ = restart_needed;
}

void ReloadLog::NothingChanged(const std::string& why) const {
  if (why != kPeriodicCheck) spdlog::info("reload ({}): nothing changed", why);
}

}  // namespace fedanon::server
