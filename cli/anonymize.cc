#include "cli/anonymize.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "app/anonymize.h"
#include "cli/risk_command.h"
#include "common/base/status_macros.h"

namespace fedanon::cli {
namespace {

struct AnonymizeFlags {
  app::AnonymizeOptions options;
  bool quiet = false;
};

absl::Status RunAnonymizeCommand(AnonymizeFlags flags) {
  if (!flags.quiet) {
    flags.options.progress = [](const std::string& msg) { std::cerr << msg << "\n"; };
  }
  flags.options.warn = [](const std::string& msg) {
    std::cerr << "fedanon anonymize: warning: " << msg << "\n";
  };
  ASSIGN_OR_RETURN(const fedanon::v1::Report report, app::Anonymize(flags.options));
  if (!flags.quiet) {
    std::cerr << "fedanon anonymize: " << report.records_out() << " records, "
              << report.steps_size() << " specializations, " << report.groups()
              << " groups, smallest group " << report.smallest_group() << ", "
              << report.timings_seconds().at("total") << " s\n";
  }
  return absl::OkStatus();
}

}  // namespace

server::CommandAction DeclareAnonymizeCommand(CLI::App* command) {
  auto flags = std::make_shared<AnonymizeFlags>();
  app::AnonymizeOptions& o = flags->options;
  command->add_option("--spec", o.spec_path, "Job spec (YAML)")->required();
  command->add_option("--input", o.input_path, "Input table (CSV with header; - for stdin)")
      ->required();
  command->add_option("--output", o.output_path, "Anonymized table to write (CSV)")->required();
  command->add_option("--report", o.report_path, "JSON report to write");
  command->add_option("--max-rounds", o.max_rounds,
                      "Stop after this many specializations (anytime result; 0 = run to the end)");
  command
      ->add_option("--previous-release", o.previous_release_paths,
                   "Earlier published table (CSV) the output must stay private joined with "
                   "(spec section `sequential`); repeat for several (previous1, previous2, ...)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      ->add_option("--max-input-bytes", o.max_input_bytes,
                   "Refuse an input table larger than this many bytes (default 64 GiB)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--assess", o.assess,
                    "Add the steward's figures to the report: risk before and after, per-attribute "
                    "loss, the model measured on the release, BE/CE/UE (docs/steward-guide.md)");
  command->add_option("--html", o.html_path,
                      "Write the job's page here (one self-contained HTML file; implies --assess)");
  AddRiskOptions(command, &o.risk);
  command->add_flag("--quiet", flags->quiet, "No progress messages on stderr");
  return [flags] { return server::ExitCode(RunAnonymizeCommand(*flags), "fedanon anonymize"); };
}

}  // namespace fedanon::cli
