// fedanon: the local tool. Its command tree: centralized anonymization, utility evaluation and
// sweeps, random anonymization, synthetic data, and `federation up` (a throwaway local
// federation). Each subcommand is declared next to the work it runs
// (server/runtime/command_line.h).
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli/anonymize.h"
#include "cli/evaluate.h"
#include "cli/federation_up.h"
#include "cli/gen_data.h"
#include "cli/hierarchy_command.h"
#include "cli/party_audit.h"
#include "cli/randomize_command.h"
#include "cli/risk_command.h"
#include "cli/sweep.h"
#include "common/base/program_main.h"
#include "common/base/version.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {
namespace {

using server::CommandTree;

int Main(int argc, char** argv) {
  CLI::App app{"fedanon: anonymize tables for publication (LKC-privacy, templates, TDS)"};
  app.require_subcommand(0, 1);
  app.footer(
      "Also: fedanon federation up --party-data a.csv,b.csv[,...] [--spec JOB.yaml --wait "
      "--result OUT.csv]\n  runs a local federation (leader + one party daemon per table) on "
      "loopback; see docs/operations.md.");
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version and git revision");

  CommandTree tree(app);
  tree.Add("anonymize", "Anonymize one table with top-down specialization (centralized)",
           cli::DeclareAnonymizeCommand);
  tree.Add("gen-data", "Write a synthetic table with Adult's schema, taxonomies and a job spec",
           cli::DeclareGenDataCommand);
  tree.Add("evaluate",
           "Utility of an anonymized table: classification errors BE/CE/UE (and SE per party of a "
           "vertical job) of a C4.5-style tree, and the discernibility ratio DR",
           cli::DeclareEvaluateCommand);
  tree.Add("sweep",
           "Anonymize over a grid of L, K, C and report CE and DR against K (HTML with SVG charts, "
           "and CSV)",
           cli::DeclareSweepCommand);
  tree.Add("hierarchy",
           "Build a generalization hierarchy (ARX CSV): interval, masking, date, ordered, or "
           "every one a spec's hierarchy section defines",
           cli::DeclareHierarchyCommand);
  tree.Add("risk",
           "Re-identification risk of a table (raw or released): prosecutor, journalist and "
           "marketer risk, sample and population uniques (Pitman, Zayatz, SNB, Dankar), QID "
           "combinations' distinction and separation",
           cli::DeclareRiskCommand);
  tree.Add("randomize",
           "Random anonymization (yang2010): replace QID values by draws from their distributions",
           cli::DeclareRandomizeCommand);
  tree.Add("party",
           "A party's own records: `party audit JOB_ID` prints what this party sent in a job; "
           "`party status` whether the party daemon runs and is linked to the leader; `party "
           "risk` the re-identification risk of its own table",
           cli::DeclarePartyCommand);
  // Not listed among the subcommands (the footer names it).
  tree.Add("federation", "", cli::DeclareFederationCommand);

  if (std::optional<int> code = server::ParseCommandLine(app, argc, argv)) return *code;
  if (show_version) {
    std::cout << base::VersionLine("fedanon") << "\n";
    return server::kExitOk;
  }
  return tree.RunSelected([&app] {
    std::cout << app.help();
    return server::kExitUsage;
  });
}

}  // namespace
}  // namespace fedanon::cli

int main(int argc, char** argv) {
  return fedanon::base::RunProgram("fedanon", fedanon::cli::Main, argc, argv);
}
