#include "cli/evaluate_commands.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/sweep_report.h"
#include "common/base/status_macros.h"
#include "common/evaluation/utility_evaluation.h"
#include "common/spec/job_spec_loader.h"

namespace fedanon::common {
namespace {

std::string Pct(double x) { return absl::StrFormat("%6.2f%%", 100 * x); }

absl::Status CheckDirectoryOf(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("cannot write '", path, "': directory '", dir.string(), "' does not exist"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Evaluate(const std::string& spec_path, const std::string& raw_path,
                                     const std::string& anonymized_path, uint64_t seed, bool json) {
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, LoadJobSpec(spec_path));
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  EvaluationOptions options;
  options.seed = seed;
  ASSIGN_OR_RETURN(std::unique_ptr<UtilityEvaluator> evaluator,
                   UtilityEvaluator::Create(spec, raw_path, options));
  const RawBaselines& b = evaluator->baselines();
  std::optional<AnonymizedUtility> u;
  if (!anonymized_path.empty()) {
    ASSIGN_OR_RETURN(u, evaluator->Evaluate(anonymized_path));
  }
  if (json) return EvaluationToJson(b, u ? &*u : nullptr, seed);
  std::string out =
      absl::StrCat(b.records, " records: C4.5-style tree trained on ", b.train_records,
                   ", tested on ", b.test_records, " (seed ", seed, ")\n");
  absl::StrAppend(&out, "BE  baseline error, raw data            ", Pct(b.baseline_error), "\n");
  if (u) {
    absl::StrAppend(&out, "CE  classification error, anonymized    ", Pct(u->classification_error),
                    "\n");
  }
  absl::StrAppend(&out, "UE  upper-bound error, QIDs removed     ", Pct(b.upper_bound_error), "\n");
  for (const SourceError& s : b.source_errors) {
    absl::StrAppend(&out, "SE  source error, party ", s.party, " only: ", Pct(s.error), "\n");
  }
  if (u) {
    absl::StrAppend(&out, "DR  discernibility ratio                ",
                    absl::StrFormat("%.6f", u->discernibility_ratio), " (", u->groups,
                    " QID groups)\n");
  }
  return out;
}

}  // namespace

EvaluateCommands::EvaluateCommands(CLI::App& app) {
  evaluate_ = app.add_subcommand(
      "evaluate",
      "Utility of an anonymized table: classification errors BE/CE/UE (and SE per party of a "
      "vertical job) of a C4.5-style tree, and the discernibility ratio DR");
  evaluate_->add_option("--spec", spec_path_, "Job spec (YAML) the table was anonymized with")
      ->required();
  evaluate_->add_option("--raw", raw_path_, "The raw table (CSV)")->required();
  evaluate_->add_option("--anonymized", anonymized_path_,
                        "The anonymized table (CSV; same records in the same order). Without it "
                        "only BE, UE and SE are measured");
  evaluate_->add_option("--seed", seed_, "Seed of the 2/3 training, 1/3 test split");
  evaluate_->add_flag("--json", json_, "Print JSON instead of text");

  sweep_ = app.add_subcommand(
      "sweep",
      "Anonymize over a grid of L, K, C and report CE and DR against K (HTML with SVG charts, "
      "and CSV)");
  sweep_->add_option("--spec", sweep_options_.spec_path, "Job spec (YAML, privacy.model lkc)")
      ->required();
  sweep_->add_option("--raw", sweep_options_.raw_path, "The raw table (CSV)")->required();
  sweep_
      ->add_option("--grid", sweep_options_.grid,
                   "Parameter values, e.g. 'L=2,4,6 K=20,40,60,80,100' (keys L, K, C; "
                   "unnamed keys keep the spec's value)")
      ->required();
  sweep_
      ->add_option("--naive-parties", sweep_options_.naive_parties,
                   "Also run the naive generalize-then-integrate baseline with N parties "
                   "(the table cut into N contiguous parts)")
      ->check(CLI::Range(2, 1000));
  sweep_->add_option("--html", html_path_, "HTML report to write")->capture_default_str();
  sweep_->add_option("--csv", csv_path_, "CSV of the points to write")->capture_default_str();
  sweep_->add_option("--seed", seed_, "Seed of the 2/3 training, 1/3 test split");
  sweep_->add_flag("--quiet", quiet_, "No progress messages on stderr");
}

std::optional<int> EvaluateCommands::RunIfParsed() {
  if (evaluate_->parsed()) return RunEvaluate();
  if (sweep_->parsed()) return RunSweepCommand();
  return std::nullopt;
}

int EvaluateCommands::RunEvaluate() {
  absl::StatusOr<std::string> out = Evaluate(spec_path_, raw_path_, anonymized_path_, seed_, json_);
  if (!out.ok()) {
    std::cerr << "fedanon evaluate: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out;
  return 0;
}

int EvaluateCommands::RunSweepCommand() {
  sweep_options_.evaluation.seed = seed_;
  if (!quiet_) sweep_options_.progress = [](const std::string& m) { std::cerr << m << "\n"; };
  absl::Status status = CheckDirectoryOf(html_path_);
  if (status.ok()) status = CheckDirectoryOf(csv_path_);
  if (status.ok()) {
    absl::StatusOr<SweepResult> result = RunSweep(sweep_options_);
    status = result.status();
    if (result.ok()) status = WriteSweepReport(*result, html_path_, csv_path_);
  }
  if (!status.ok()) {
    std::cerr << "fedanon sweep: " << status.message() << "\n";
    return 1;
  }
  if (!quiet_) std::cerr << "fedanon sweep: wrote " << html_path_ << " and " << csv_path_ << "\n";
  return 0;
}

}  // namespace fedanon::common
