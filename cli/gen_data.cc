#include "cli/gen_data.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "common/base/status_macros.h"
#include "common/datagen/datagen.h"

namespace fedanon::cli {
namespace {

struct GenDataFlags {
  datagen::DatagenOptions options;
  std::string partition = "horizontal";
};

absl::Status RunGenDataCommand(GenDataFlags flags) {
  flags.options.partition = flags.partition == "vertical"
                                ? datagen::DatagenOptions::Partition::kVertical
                                : datagen::DatagenOptions::Partition::kHorizontal;
  ASSIGN_OR_RETURN(const std::string summary, datagen::GenerateDataset(flags.options));
  std::cerr << summary << "\n";
  return absl::OkStatus();
}

}  // namespace

server::CommandAction DeclareGenDataCommand(CLI::App* command) {
  auto flags = std::make_shared<GenDataFlags>();
  datagen::DatagenOptions& o = flags->options;
  command->add_option("--rows", o.rows, "Number of records")->check(CLI::PositiveNumber);
  command->add_option("--seed", o.seed, "Random seed (same seed, same files)");
  command->add_option("--out", o.out_dir, "Output directory (created if missing)")->required();
  command->add_option("--parties", o.parties, "Also write one file per party")
      ->check(CLI::Range(1, 256));
  command->add_option("--partition", flags->partition, "horizontal | vertical")
      ->check(CLI::IsMember({"horizontal", "vertical"}));
  command
      ->add_option("--overlap", o.overlap,
                   "Vertical only: the share of each party's ids that every party has "
                   "(0.01..1, default 1). Below 1, each party file also gets "
                   "rows*(1-F)/F records with ids of its own; table.csv stays the rows "
                   "common records (the join)")
      ->check(CLI::Range(0.01, 1.0));
  return [flags] { return server::ExitCode(RunGenDataCommand(*flags), "fedanon gen-data"); };
}

}  // namespace fedanon::cli
