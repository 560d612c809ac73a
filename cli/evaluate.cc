#include "cli/evaluate.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/table_risk.h"
#include "cli/risk_command.h"
#include "common/base/status_macros.h"
#include "common/evaluation/distortion.h"
#include "common/evaluation/utility_evaluation.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"

namespace fedanon::cli {
namespace {

std::string Pct(double x) { return absl::StrFormat("%6.2f%%", 100 * x); }

// The headline risk figures of the raw table and the release side by side (the full summary is
// `fedanon risk`'s).
std::string RiskLines(const fedanon::v1::RiskSummary& raw, const fedanon::v1::RiskSummary* anon) {
  std::string out = absl::StrFormat(
      "Re-identification risk (QIDs of the spec; threshold %g)%s\n", raw.threshold(),
      anon != nullptr ? "          raw   anonymized" : "          raw");
  auto row = [&](const std::string& label, const std::string& a, const std::string& b) {
    absl::StrAppend(&out, absl::StrFormat("  %-38s %10s", label, a));
    if (anon != nullptr) absl::StrAppend(&out, absl::StrFormat(" %12s", b));
    out += "\n";
  };
  auto p4 = [](double x) { return absl::StrFormat("%.4f", x); };
  row("equivalence classes", absl::StrCat(raw.classes()),
      anon ? absl::StrCat(anon->classes()) : "");
  row("sample uniques", Pct(raw.sample_uniques_fraction()),
      anon ? Pct(anon->sample_uniques_fraction()) : "");
  row("prosecutor: records at risk", Pct(raw.prosecutor().records_at_risk()),
      anon ? Pct(anon->prosecutor().records_at_risk()) : "");
  row("prosecutor: highest risk", p4(raw.prosecutor().highest()),
      anon ? p4(anon->prosecutor().highest()) : "");
  row("prosecutor/marketer: success rate", p4(raw.prosecutor().average()),
      anon ? p4(anon->prosecutor().average()) : "");
  for (int i = 0; i < raw.uniqueness_size(); ++i) {
    const auto& r = raw.uniqueness(i);
    const auto* a = anon != nullptr && i < anon->uniqueness_size() ? &anon->uniqueness(i) : nullptr;
    auto shown = [](const fedanon::v1::PopulationUniqueness& p) {
      return p.available() ? absl::StrFormat("%.4g%%", 100 * p.fraction()) : std::string("n/a");
    };
    row(absl::StrCat("population uniques, ", r.model(),
                     r.chosen_model().empty() ? "" : absl::StrCat(" (", r.chosen_model(), ")")),
        shown(r), a ? shown(*a) : "");
  }
  return out;
}

absl::Status RunEvaluateCommand(const UtilityReportOptions& options) {
  ASSIGN_OR_RETURN(const std::string report, UtilityReport(options));
  std::cout << report;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> UtilityReport(const UtilityReportOptions& options) {
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(options.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  if (!options.randomized_path.empty()) {
    ASSIGN_OR_RETURN(evaluation::RaTables tables,
                     evaluation::ReadRaTables(spec, options.raw_path, options.randomized_path));
    ASSIGN_OR_RETURN(evaluation::RaEvaluation e,
                     EvaluateRandomization(tables.original, tables.randomized, options.ra));
    return options.json ? evaluation::RaEvaluationToJson(e, options.ra)
                        : evaluation::RaEvaluationToText(e, options.ra);
  }
  evaluation::EvaluationOptions evaluation;
  evaluation.seed = options.seed;
  evaluation.folds = options.folds;
  evaluation.removed_attributes = options.removed_attributes;
  if (options.classifier == "naive-bayes") {
    evaluation.classifier = evaluation::Classifier::kNaiveBayes;
  } else if (options.classifier != "c45") {
    return absl::InvalidArgumentError(
        absl::StrCat("--classifier: '", options.classifier, "' is not one of c45, naive-bayes"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<evaluation::UtilityEvaluator> evaluator,
                   evaluation::UtilityEvaluator::Create(spec, options.raw_path, evaluation));
  const evaluation::RawBaselines& b = evaluator->baselines();
  std::optional<evaluation::AnonymizedUtility> u, local;
  if (!options.anonymized_path.empty()) {
    ASSIGN_OR_RETURN(u, evaluator->Evaluate(options.anonymized_path));
  }
  if (!options.local_path.empty()) {
    ASSIGN_OR_RETURN(local, evaluator->Evaluate(options.local_path));
  }
  std::optional<evaluation::Distortion> distortion;
  if (options.distortion) {
    if (options.anonymized_path.empty()) {
      return absl::InvalidArgumentError("--distortion needs --anonymized");
    }
    ASSIGN_OR_RETURN(
        distortion, evaluation::MeasureDistortion(spec, options.raw_path, options.anonymized_path));
  }
  const fedanon::v1::RiskOptions risk = app::EffectiveRiskOptions(spec, options.risk);
  ASSIGN_OR_RETURN(const fedanon::v1::RiskSummary raw_risk,
                   app::AssessTableRisk(spec, options.raw_path, risk, options.raw_path));
  std::optional<fedanon::v1::RiskSummary> anon_risk;
  if (u) {
    ASSIGN_OR_RETURN(anon_risk, app::AssessTableRisk(spec, options.anonymized_path, risk,
                                                     options.anonymized_path));
  }
  if (options.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(
        EvaluationToJson(b, u ? &*u : nullptr, options.seed, local ? &*local : nullptr, &evaluation,
                         distortion ? &*distortion : nullptr));
    ASSIGN_OR_RETURN(const std::string raw_json, spec::ProtoToJson(raw_risk));
    j["risk_before"] = nlohmann::ordered_json::parse(raw_json);
    if (anon_risk) {
      ASSIGN_OR_RETURN(const std::string anon_json, spec::ProtoToJson(*anon_risk));
      j["risk_after"] = nlohmann::ordered_json::parse(anon_json);
    }
    return j.dump(2) + "\n";
  }
  const std::string risk_lines = RiskLines(raw_risk, anon_risk ? &*anon_risk : nullptr);
  const std::string model = options.classifier == "naive-bayes" ? "naive Bayes" : "C4.5-style tree";
  std::string out =
      options.folds >= 2
          ? absl::StrCat(b.records, " records: ", model, ", ", options.folds,
                         "-fold cross-validation (seed ", options.seed, ")\n")
          : absl::StrCat(b.records, " records: ", model, " trained on ", b.train_records,
                         ", tested on ", b.test_records, " (seed ", options.seed, ")\n");
  absl::StrAppend(&out, "BE  baseline error, raw data            ", Pct(b.baseline_error), "\n");
  if (local) {
    // Global and local recoding side by side (a column per release given).
    auto row = [&](const std::string& label, const std::string& global_value,
                   const std::string& local_value) {
      absl::StrAppend(&out, label, absl::StrFormat("%12s", global_value),
                      absl::StrFormat("%12s", local_value), "\n");
    };
    row("                                       ", u ? "global" : "", "local");
    row("CE  classification error, anonymized   ", u ? Pct(u->classification_error) : "",
        Pct(local->classification_error));
    row("CE - BE                                ",
        u ? absl::StrFormat("%+.2f", 100 * (u->classification_error - b.baseline_error)) : "",
        absl::StrFormat("%+.2f", 100 * (local->classification_error - b.baseline_error)));
    row("DR  discernibility ratio               ",
        u ? absl::StrFormat("%.6f", u->discernibility_ratio) : "",
        absl::StrFormat("%.6f", local->discernibility_ratio));
    row("    QID groups                         ", u ? absl::StrCat(u->groups) : "",
        absl::StrCat(local->groups));
    absl::StrAppend(&out, "UE  upper-bound error, QIDs removed     ", Pct(b.upper_bound_error),
                    "\n");
    for (const evaluation::SourceError& s : b.source_errors) {
      absl::StrAppend(&out, "SE  source error, party ", s.party, " only: ", Pct(s.error), "\n");
    }
    return out + risk_lines;
  }
  if (u) {
    absl::StrAppend(&out, "CE  classification error, anonymized    ", Pct(u->classification_error),
                    "\n");
  }
  absl::StrAppend(&out, "UE  upper-bound error, QIDs removed     ", Pct(b.upper_bound_error), "\n");
  for (const evaluation::SourceError& s : b.source_errors) {
    absl::StrAppend(&out, "SE  source error, party ", s.party, " only: ", Pct(s.error), "\n");
  }
  if (b.removal_error) {
    absl::StrAppend(&out, "RE  removal error, attributes removed   ", Pct(*b.removal_error), "\n");
  }
  if (u) {
    absl::StrAppend(&out, "DR  discernibility ratio                ",
                    absl::StrFormat("%.6f", u->discernibility_ratio), " (", u->groups,
                    " QID groups)\n");
  }
  if (distortion) {
    absl::StrAppend(&out, "distortion per record: categorical ",
                    absl::StrFormat("%.4f", distortion->categorical), ", continuous ",
                    absl::StrFormat("%.4f", distortion->continuous), "\n");
  }
  return out + risk_lines;
}

server::CommandAction DeclareEvaluateCommand(CLI::App* command) {
  auto options = std::make_shared<UtilityReportOptions>();
  command->add_option("--spec", options->spec_path, "Job spec (YAML) the table was anonymized with")
      ->required();
  command->add_option("--raw", options->raw_path, "The raw table (CSV)")->required();
  command->add_option("--anonymized", options->anonymized_path,
                      "The anonymized table (CSV; same records in the same order). Without it "
                      "only BE, UE and SE are measured");
  command->add_option("--local", options->local_path,
                      "A `recoding: local` release of the same table (CSV), shown beside "
                      "--anonymized (global recoding): CE, CE - BE, DR and groups per column");
  command->add_option("--seed", options->seed, "Seed of the 2/3 training, 1/3 test split");
  command->add_option("--classifier", options->classifier,
                      "c45 (the C4.5-style tree, default) or naive-bayes (thesis §4.4.1)");
  command
      ->add_option("--folds", options->folds,
                   "k-fold cross-validation instead of the 2/3-1/3 split (0: the split)")
      ->check(CLI::Range(0, 1000));
  command
      ->add_option("--remove", options->removed_attributes,
                   "Attributes removed for RE, the removal error (thesis §5.4 RE, §6.4 RJE and "
                   "RSE); repeat or comma-separate")
      ->delimiter(',');
  command->add_flag("--distortion", options->distortion,
                    "With --anonymized: the thesis's distortion metric per record (§6.4), "
                    "categorical and continuous");
  command->add_flag("--json", options->json, "Print JSON instead of text");
  AddRiskOptions(command, &options->risk);
  // yang2010 §7: the evaluation of a randomized release (docs/random-anonymization.md).
  command
      ->add_option(
          "--randomized", options->randomized_path,
          "A `fedanon randomize` release of the raw table: report yang2010 §7's COUNT-query "
          "relative error and Apriori association recovery, against an Anatomy baseline")
      ->excludes("--anonymized")
      ->excludes("--local");
  command
      ->add_option("--queries", options->ra.queries,
                   "With --randomized: random COUNT queries per number of QID attributes")
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  command->add_option("--query-seed", options->ra.query_seed,
                      "With --randomized: seed of the random queries");
  command
      ->add_option("--max-query-attributes", options->ra.max_query_attributes,
                   "With --randomized: queries over 1..J QID attributes (at most the QIDs)")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  command
      ->add_option("--apriori-support", options->ra.apriori.min_support,
                   "With --randomized: Apriori minimum support, a fraction of the records")
      ->check(CLI::Range(1e-6, 1.0));
  command
      ->add_option("--apriori-confidence", options->ra.apriori.min_confidence,
                   "With --randomized: minimum confidence of a quasi-sensitive rule")
      ->check(CLI::Range(0.0, 1.0));
  command
      ->add_option("--anatomy-l", options->ra.anatomy_l,
                   "With --randomized: l of the Anatomy baseline (0: none; default: 10, or the "
                   "largest l the table is eligible for if smaller)")
      ->check(CLI::Range(0, 1000000));
  command->add_option("--anatomy-seed", options->ra.anatomy_seed,
                      "With --randomized: seed of the Anatomy grouping and permutation");
  command
      ->add_option("--ldiversity-l", options->ra.ldiversity_l,
                   "With --randomized: l of the entropy l-diverse generalization baseline "
                   "answered with Eq. 12 (0: none, the default; -1: 10, or the largest l the "
                   "table is entropy l-diverse for if smaller)")
      ->check(CLI::Range(-1, 1000000));
  return [options] { return server::ExitCode(RunEvaluateCommand(*options), "fedanon evaluate"); };
}

}  // namespace fedanon::cli
