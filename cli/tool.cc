#include "cli/tool.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/anonymize.h"
#include "cli/evaluate_commands.h"
#include "cli/randomize_cli.h"
#include "common/base/version.h"
#include "common/datagen/datagen.h"

namespace fedanon::common {

int RunTool(int argc, char** argv) {
  CLI::App app{"fedanon: anonymize tables for publication (LKC-privacy, templates, TDS)"};
  app.require_subcommand(0, 1);
  app.footer(
      "Also: fedanon federation up --party-data a.csv,b.csv[,...] [--spec JOB.yaml --wait "
      "--result OUT.csv]\n  runs a local federation (leader + one party daemon per table) on "
      "loopback; see docs/operations.md.");
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version and git revision");

  AnonymizeOptions anon;
  bool quiet = false;
  CLI::App* anonymize = app.add_subcommand(
      "anonymize", "Anonymize one table with top-down specialization (centralized)");
  anonymize->add_option("--spec", anon.spec_path, "Job spec (YAML)")->required();
  anonymize->add_option("--input", anon.input_path, "Input table (CSV with header)")->required();
  anonymize->add_option("--output", anon.output_path, "Anonymized table to write (CSV)")
      ->required();
  anonymize->add_option("--report", anon.report_path, "JSON report to write");
  anonymize->add_option(
      "--max-rounds", anon.max_rounds,
      "Stop after this many specializations (anytime result; 0 = run to the end)");
  anonymize->add_option("--previous-release", anon.previous_release_path,
                        "Earlier published table (CSV) the output must stay private joined with "
                        "(spec section `sequential`)");
  anonymize->add_flag("--quiet", quiet, "No progress messages on stderr");

  DatagenOptions gen;
  std::string partition = "horizontal";
  CLI::App* gen_data = app.add_subcommand(
      "gen-data", "Write a synthetic table with Adult's schema, taxonomies and a job spec");
  gen_data->add_option("--rows", gen.rows, "Number of records")->check(CLI::PositiveNumber);
  gen_data->add_option("--seed", gen.seed, "Random seed (same seed, same files)");
  gen_data->add_option("--out", gen.out_dir, "Output directory (created if missing)")->required();
  gen_data->add_option("--parties", gen.parties, "Also write one file per party")
      ->check(CLI::Range(1, 256));
  gen_data->add_option("--partition", partition, "horizontal | vertical")
      ->check(CLI::IsMember({"horizontal", "vertical"}));

  EvaluateCommands evaluate_commands(app);
  RandomizeSubcommand randomize(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error (missing or unknown option, bad value) is
    // a usage error: CLI11's message on stderr, exit code 2 (CLI11's own codes are 100+).
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (show_version) {
    std::cout << VersionLine("fedanon") << "\n";
    return 0;
  }
  if (std::optional<int> code = evaluate_commands.RunIfParsed()) return *code;
  if (anonymize->parsed()) {
    if (!quiet) anon.progress = [](const std::string& msg) { std::cerr << msg << "\n"; };
    auto report = Anonymize(anon);
    if (!report.ok()) {
      std::cerr << "fedanon anonymize: " << report.status().message() << "\n";
      return 1;
    }
    if (!quiet) {
      std::cerr << "fedanon anonymize: " << report->records_out() << " records, "
                << report->steps_size() << " specializations, " << report->groups()
                << " groups, smallest group " << report->smallest_group() << ", "
                << report->timings_seconds().at("total") << " s\n";
    }
    return 0;
  }
  if (gen_data->parsed()) {
    gen.partition = partition == "vertical" ? DatagenOptions::Partition::kVertical
                                            : DatagenOptions::Partition::kHorizontal;
    auto summary = GenerateDataset(gen);
    if (!summary.ok()) {
      std::cerr << "fedanon gen-data: " << summary.status().message() << "\n";
      return 1;
    }
    std::cerr << *summary << "\n";
    return 0;
  }
  if (randomize.parsed()) return randomize.Run();
  std::cout << app.help();
  return 2;
}

}  // namespace fedanon::common
