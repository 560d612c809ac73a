#include "cli/randomize_cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

namespace fedanon::common {

RandomizeSubcommand::RandomizeSubcommand(CLI::App& app)
    : command_(app.add_subcommand("randomize",
                                  "Random anonymization (yang2010): replace QID values by draws "
                                  "from their distributions")) {
  command_
      ->add_option("--spec", options_.spec_path,
                   "Job spec (YAML); its QID attributes are "
                   "randomized")
      ->required();
  command_->add_option("--input", options_.input_path, "Input table (CSV with header)")->required();
  command_->add_option("--output", options_.output_path, "Randomized table to write (CSV)")
      ->required();
  command_->add_option("--report", options_.report_path, "JSON report to write");
  command_
      ->add_option("--attributes-per-record", options_.attributes_per_record,
                   "QID values replaced per record: 1 = Algorithm 1, more = Algorithm 2")
      ->check(CLI::PositiveNumber);
  command_->add_option("--seed", seed_,
                       "Reproducible run from this seed (tests, experiments; never publish it). "
                       "Default: OpenSSL's CSPRNG");
  command_
      ->add_option("--selection", selection_,
                   "How the attribute of a record is chosen: entropy (p_i ~ e^Entropy, "
                   "Proposition 7; default for 1 per record) or uniform")
      ->check(CLI::IsMember({"entropy", "uniform"}));
  command_->add_flag("--prior-knowledge-bound", options_.prior_knowledge_bound,
                     "Report the Proposition 10 bound (1 attribute per record only)");
  command_
      ->add_option("--bias-length", options_.bias_lengths,
                   "Report the relative bias of supports of value combinations of this length "
                   "(repeatable)")
      ->check(CLI::PositiveNumber);
  command_->add_flag("--quiet", quiet_, "No summary on stderr");
}

bool RandomizeSubcommand::parsed() const { return command_->parsed(); }

int RandomizeSubcommand::Run() {
  if (command_->count("--seed") > 0) options_.seed = seed_;
  if (!selection_.empty()) {
    options_.selection = selection_ == "entropy" ? AttributeSelection::kEntropyWeighted
                                                 : AttributeSelection::kUniform;
  }
  // Combinations the paper does not define are usage errors.
  if (options_.attributes_per_record > 1 &&
      options_.selection == AttributeSelection::kEntropyWeighted) {
    std::cerr << "fedanon randomize: --selection entropy picks one attribute per record "
                 "(Proposition 7); Algorithm 2 selects its attributes uniformly\n";
    return 2;
  }
  if (options_.attributes_per_record > 1 && options_.prior_knowledge_bound) {
    std::cerr << "fedanon randomize: --prior-knowledge-bound (Proposition 10) is defined for one "
                 "attribute per record\n";
    return 2;
  }
  auto summary = RandomizeTable(options_);
  if (!summary.ok()) {
    std::cerr << "fedanon randomize: " << summary.status().message() << "\n";
    return 1;
  }
  if (!quiet_) {
    if (summary->reproducible) {
      std::cerr << "fedanon randomize: seeded run: anyone who knows the seed can redo and undo "
                   "this randomization; do not publish it\n";
    }
    std::cerr << "fedanon randomize: " << RandomizeSummaryToText(*summary) << "\n";
  }
  return 0;
}

}  // namespace fedanon::common
