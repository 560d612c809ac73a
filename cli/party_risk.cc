#include "cli/party_risk.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "app/table_risk.h"
#include "cli/risk_command.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/risk/risk_text.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"
#include "server/runtime/config.h"

namespace fedanon::cli {
namespace {

struct PartyRiskFlags {
  std::string config;
  std::string spec;
  std::string table;  // relative to data_dir; empty: the config's default table
  fedanon::v1::RiskOptions overrides;
  bool json = false;
};

absl::Status RunPartyRisk(const PartyRiskFlags& flags) {
  ASSIGN_OR_RETURN(const server::PartyConfig config, server::LoadPartyConfig(flags.config));
  const std::string table = flags.table.empty() ? config.data : flags.table;
  if (table.empty()) {
    return server::UsageError("the party config names no default table (data:): give --table");
  }
  if (config.postgres_tables.contains(table)) {
    return absl::FailedPreconditionError(
        "table '" + table +
        "' is read from PostgreSQL: export it to CSV inside the data directory and give that "
        "file with --table (fedanon risk reads CSV)");
  }
  ASSIGN_OR_RETURN(const std::string path, base::ResolveInsideDirectory(config.data_dir, table));
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(flags.spec));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  if (spec.partitioning() == fedanon::v1::PARTITIONING_VERTICAL) {
    // A vertical party holds only its own attributes: its risk is over its own QIDs.
    fedanon::v1::JobSpec own = spec;
    own.clear_attributes();
    for (const auto& a : spec.attributes()) {
      if (a.party() == config.name) *own.add_attributes() = a;
    }
    if (std::none_of(own.attributes().begin(), own.attributes().end(),
                     [](const auto& a) { return a.role() == fedanon::v1::ROLE_QID; })) {
      return absl::FailedPreconditionError("party '" + config.name +
                                           "' holds no QID attribute of this vertical job");
    }
    spec = std::move(own);
  }
  ASSIGN_OR_RETURN(
      const fedanon::v1::RiskSummary summary,
      app::AssessTableRisk(spec, path, app::EffectiveRiskOptions(spec, flags.overrides),
                           config.name.empty() ? table : config.name + ": " + table));
  if (flags.json) {
    ASSIGN_OR_RETURN(const std::string json, spec::ProtoToJson(summary));
    std::cout << json << "\n";
  } else {
    std::cout << risk::RiskSummaryToText(summary);
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* DeclarePartyRiskCommand(CLI::App* party, server::CommandAction* action) {
  CLI::App* risk = party->add_subcommand(
      "risk",
      "Re-identification risk of this party's own table (its config's data_dir), computed here; "
      "the same figures as `fedanon risk`");
  auto flags = std::make_shared<PartyRiskFlags>();
  risk->add_option("--config", flags->config, "The party's config (party.yaml)")->required();
  risk->add_option("--spec", flags->spec, "The job spec (YAML): its QIDs and risk section")
      ->required();
  risk->add_option("--table", flags->table,
                   "The table, relative to the party's data_dir (default: its `data` table)");
  cli::AddRiskOptions(risk, &flags->overrides);
  risk->add_flag("--json", flags->json, "Print the summary as JSON");
  *action = [flags] { return server::ExitCode(RunPartyRisk(*flags), "fedanon party risk"); };
  return risk;
}

}  // namespace fedanon::cli
