// The command line of every fedanon program (fedanon, fedanonctl and the daemons fedanon-party
// and fedanon-leader): the one place that parses with CLI11 and picks the exit code, and the one
// way to declare a subcommand. Exit codes: 0 done (also after --help and --version), 1 a failed
// command ("<program>: <why>" on stderr), 2 a usage error. CLI11 is header-only; this header
// only forward-declares it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace fedanon::server {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Parses `argv` into `app`. Returns nullopt when the program should go on, otherwise its exit
// code: 0 after --help or --version (printed on stdout), 2 after a usage error (a missing or
// unknown option, a bad value: CLI11's message on stderr; CLI11's own codes are 100+).
std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv);

// A usage error found after parsing (options CLI11 cannot check, or only together): ExitCode
// prints it like any failure and returns 2.
absl::Status UsageError(std::string_view message);

// `status`, marked as already shown to the user (e.g. in the command's JSON output on stdout):
// ExitCode returns 1 for it without repeating it on stderr.
absl::Status AlreadyReported(absl::Status status);

// The exit code of a command's outcome: 0 when `status` is OK; otherwise "<prefix>: <message>"
// on stderr (not for AlreadyReported) and 2 for a UsageError, 1 for any other failure.
int ExitCode(const absl::Status& status, std::string_view prefix);

// What a subcommand runs once the command line has selected it; returns the exit code.
using CommandAction = std::function<int()>;

// Declares a subcommand's options on `command`, bound to storage the returned action owns, and
// returns that action. Each subcommand of fedanon and fedanonctl has one, next to the work it
// runs (e.g. DeclareAnonymizeCommand in cli/anonymize.h); main only names them in a CommandTree.
using CommandDeclaration = std::function<CommandAction(CLI::App* command)>;

// A program's subcommands. Built in main, then: ParseCommandLine, RunSelected.
class CommandTree {
 public:
  // `app` (not owned) must outlive the tree.
  explicit CommandTree(CLI::App& app) : app_(app) {}

  // Adds the subcommand `name` to the app and declares its options with `declare`; returns it.
  CLI::App* Add(const std::string& name, const std::string& description,
                const CommandDeclaration& declare);

  // After parsing: runs the action of the subcommand the command line selected, or `otherwise`
  // when it selected none. Returns the exit code.
  int RunSelected(const CommandAction& otherwise) const;

 private:
  CLI::App& app_;
  std::vector<std::pair<CLI::App*, CommandAction>> commands_;
};

}  // namespace fedanon::server
