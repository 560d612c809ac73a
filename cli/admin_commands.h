// fedanonctl's subcommands (see cli/fedanonctl_main.cc for the tree): provisioning a federation's
// startup kits, and the admin calls to a running leader (parties, submit, status, list, watch,
// cancel, result, view-log, health; `report` in cli/report_command.h) through
// admin::AdminClient. Each Declare...Command declares
// one subcommand's options and returns its action; output goes to stdout (JSON with --json), errors
// to stderr as "fedanonctl: <why>" with exit code 1 (watch: 1 for a failed or cancelled job).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/admin/admin_client.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

// The options every fedanonctl subcommand reads (given before or after the subcommand).
struct AdminGlobals {
  std::string config;  // the admin config; empty: $FEDANON_ADMIN_CONFIG or ./admin.yaml
  bool json = false;   // machine-readable output
};

// The admin client of the config `globals` names (--config, $FEDANON_ADMIN_CONFIG or
// ./admin.yaml).
absl::StatusOr<std::unique_ptr<admin::AdminClient>> ConnectToLeader(const AdminGlobals& globals);

// Each declares its options on `command` and returns its action, which reads `globals` (not
// owned; must outlive the action) once the command line is parsed.
server::CommandAction DeclareProvisionCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareRevokeCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclarePartiesCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareSubmitCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareStatusCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareListCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareWatchCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareCancelCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareResultCommand(const AdminGlobals* globals, CLI::App* command);
// Prints the leader's view log of a job: every statistic it decoded, one JSON object per line
// (the same with or without --json).
server::CommandAction DeclareViewLogCommand(const AdminGlobals* globals, CLI::App* command);
server::CommandAction DeclareHealthCommand(const AdminGlobals* globals, CLI::App* command);

}  // namespace fedanon::cli
