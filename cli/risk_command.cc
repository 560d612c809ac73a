#include "cli/risk_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "app/table_risk.h"
#include "common/base/status_macros.h"
#include "common/risk/risk_text.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"

namespace fedanon::cli {
namespace {

struct RiskFlags {
  std::string spec_path;
  std::string input_path;
  fedanon::v1::RiskOptions overrides;
  bool json = false;
};

absl::Status RunRiskCommand(const RiskFlags& flags) {
  ASSIGN_OR_RETURN(const fedanon::v1::JobSpec spec, spec::LoadJobSpec(flags.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  const std::string input = flags.input_path == "-" ? "/dev/stdin" : flags.input_path;
  ASSIGN_OR_RETURN(
      const fedanon::v1::RiskSummary summary,
      app::AssessTableRisk(spec, input, app::EffectiveRiskOptions(spec, flags.overrides),
                           flags.input_path));
  if (flags.json) {
    ASSIGN_OR_RETURN(const std::string json, spec::ProtoToJson(summary));
    std::cout << json << "\n";
  } else {
    std::cout << risk::RiskSummaryToText(summary);
  }
  return absl::OkStatus();
}

}  // namespace

void AddRiskOptions(CLI::App* command, fedanon::v1::RiskOptions* overrides) {
  auto* size =
      command
          ->add_option_function<uint64_t>(
              "--population-size", [overrides](uint64_t n) { overrides->set_population_size(n); },
              "Size of the population the table was drawn from (for the "
              "population-uniqueness models; spec: risk.population_size)")
          ->check(CLI::PositiveNumber);
  command
      ->add_option_function<double>(
          "--sampling-fraction", [overrides](double f) { overrides->set_sampling_fraction(f); },
          "The table's share of that population, n / N (instead of --population-size; spec: "
          "risk.sampling_fraction)")
      ->check(CLI::Range(1e-12, 1.0))
      ->excludes(size);
  command
      ->add_option_function<double>(
          "--threshold", [overrides](double t) { overrides->set_threshold(t); },
          "A record is at risk when its re-identification probability exceeds this (default "
          "0.2; spec: risk.threshold)")
      ->check(CLI::Range(1e-12, 1.0));
  command
      ->add_option_function<uint32_t>(
          "--max-combination-size",
          [overrides](uint32_t k) { overrides->set_max_combination_size(k); },
          "Analyse every QID combination of at most this many attributes (default: all with up "
          "to 8 QIDs, else 2)")
      ->check(CLI::Range(1, 64));
}

server::CommandAction DeclareRiskCommand(CLI::App* command) {
  auto flags = std::make_shared<RiskFlags>();
  command->add_option("--spec", flags->spec_path, "Job spec (YAML): its QIDs and risk section")
      ->required();
  command
      ->add_option("--input", flags->input_path,
                   "The table (CSV with header; raw or released; - for stdin)")
      ->required();
  AddRiskOptions(command, &flags->overrides);
  command->add_flag("--json", flags->json, "Print the summary as JSON");
  return [flags] { return server::ExitCode(RunRiskCommand(*flags), "fedanon risk"); };
}

}  // namespace fedanon::cli
