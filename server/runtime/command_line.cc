#include "server/runtime/command_line.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "absl/strings/cord.h"
#include "common/base/string_views.h"

namespace fedanon::server {
namespace {

// Status payloads that ExitCode reads (their values are unused).
constexpr char kUsagePayload[] = "type.fedanon/exit.usage";
constexpr char kReportedPayload[] = "type.fedanon/exit.reported";

}  // namespace

std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints --help and --version on stdout (code 0) and any other parse error with its
    // message on stderr (codes 100+), which is a usage error here.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

absl::Status UsageError(std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(base::Av(message));
  status.SetPayload(kUsagePayload, absl::Cord());
  return status;
}

absl::Status AlreadyReported(absl::Status status) {
  status.SetPayload(kReportedPayload, absl::Cord());
  return status;
}

int ExitCode(const absl::Status& status, std::string_view prefix) {
  if (status.ok()) return kExitOk;
  if (!status.GetPayload(kReportedPayload).has_value()) {
    std::cerr << prefix << ": " << status.message() << "\n";
  }
  return status.GetPayload(kUsagePayload).has_value() ? kExitUsage : kExitFailure;
}

CLI::App* CommandTree::Add(const std::string& name, const std::string& description,
                           const CommandDeclaration& declare) {
  CLI::App* command = app_.add_subcommand(name, description);
  commands_.emplace_back(command, declare(command));
  return command;
}

int CommandTree::RunSelected(const CommandAction& otherwise) const {
  for (const auto& [command, action] : commands_) {
    if (command->parsed()) return action();
  }
  return otherwise();
}

}  // namespace fedanon::server
