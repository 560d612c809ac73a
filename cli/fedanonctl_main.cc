// fedanonctl: the admin CLI of a fedanon federation (see docs/operations.md).
//
//   fedanonctl [--config admin.yaml] [--json] COMMAND ...
//     provision FEDERATION.yaml [--out DIR]     write the startup kits (no leader needed)
//     revoke --ca DIR CERT... [--days N]         revoke certificates (writes DIR/crl.pem)
//     parties                                    connected parties
//     submit JOB.yaml [--parties a,b] [--recipient P] [--leader-party P] [--data P=PATH ...]
//                     [--round-timeout S]        submit a job, print its id
//     status JOB | list | watch JOB [--expect-rounds N] | cancel JOB [--reason TEXT]
//     result JOB -o FILE [--force]
//     view-log JOB                               what the leader decoded (JSON lines)
//     report JOB --html PAGE.html [--spec JOB.yaml] [--result RELEASE.csv]
//                [--party-risk PARTY=FILE.json ...] [--report REPORT.json]
//                                                the job's page (cli/report_command.h)
//     health [--service NAME] [--bundle DIR --leader HOST:PORT]
//                                                the leader's gRPC health service (probes)
//
// Exit codes: 0 ok (watch: the job is done), 1 failure (watch: failed or cancelled), 2 usage.
// The subcommands are declared in cli/admin_commands.h; this file only builds the tree.
#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "cli/admin_commands.h"
#include "cli/report_command.h"
#include "common/base/program_main.h"
#include "common/base/version.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {
namespace {

constexpr char kProgram[] = "fedanonctl";

int Main(int argc, char** argv) {
  // gRPC's own error log repeats what our messages already say (e.g. a failed TLS handshake);
  // keep it unless GRPC_VERBOSITY asks for it.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  CLI::App app{"fedanonctl: administer a fedanon federation (provision, submit, watch, results)"};
  app.set_version_flag("--version", std::string(base::VersionLine(kProgram)));
  app.require_subcommand(1);
  app.fallthrough();
  cli::AdminGlobals g;
  app.add_option("--config", g.config,
                 "Admin config (admin.yaml); default $FEDANON_ADMIN_CONFIG or ./admin.yaml");
  app.add_flag("--json", g.json, "Machine-readable JSON output");

  server::CommandTree tree(app);
  using std::bind_front;
  tree.Add("provision", "Create the federation's CA and every participant's startup kit",
           bind_front(cli::DeclareProvisionCommand, &g));
  tree.Add("revoke", "Revoke certificates: rewrite the CA's revocation list (crl.pem)",
           bind_front(cli::DeclareRevokeCommand, &g));
  tree.Add("parties", "List the parties connected to the leader",
           bind_front(cli::DeclarePartiesCommand, &g));
  tree.Add("submit", "Submit a job; prints its id", bind_front(cli::DeclareSubmitCommand, &g));
  tree.Add("status", "Show a job", bind_front(cli::DeclareStatusCommand, &g));
  tree.Add("list", "List the jobs", bind_front(cli::DeclareListCommand, &g));
  tree.Add("watch", "Follow a job until it ends (exit 0 if done, 1 if failed or cancelled)",
           bind_front(cli::DeclareWatchCommand, &g));
  tree.Add("cancel", "Cancel a job", bind_front(cli::DeclareCancelCommand, &g));
  tree.Add("result", "Download the integrated table of a done job",
           bind_front(cli::DeclareResultCommand, &g));
  tree.Add("view-log", "Print what the leader decoded during a job (JSON lines)",
           bind_front(cli::DeclareViewLogCommand, &g));
  tree.Add("report",
           "Write a done job's page (HTML): its report, what the leader decoded, and with "
           "--spec/--result/--party-risk the cut on its taxonomies, the release's risk and loss, "
           "each party's own risk",
           bind_front(cli::DeclareReportCommand, &g));
  tree.Add("health", "Check the leader's gRPC health service (exit 0 if SERVING, 1 otherwise)",
           bind_front(cli::DeclareHealthCommand, &g));

  if (std::optional<int> code = server::ParseCommandLine(app, argc, argv)) return *code;
  return tree.RunSelected([&app] {
    std::cerr << app.help();
    return server::kExitUsage;
  });
}

}  // namespace
}  // namespace fedanon::cli

int main(int argc, char** argv) {
  return fedanon::base::RunProgram("fedanonctl", fedanon::cli::Main, argc, argv);
}
