#include "cli/party_audit.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/party_risk.h"
#include "cli/party_status.h"
#include "common/base/status_macros.h"
#include "party/audit_log.h"
#include "server/runtime/config.h"

namespace fedanon::cli {
namespace {

struct AuditFlags {
  std::string job_id;
  std::string config;
  std::string state_dir;
  bool json = false;
};

// The fields every line has, in the readable form's columns; the rest follow as key=value.
bool IsColumn(const std::string& key) {
  return key == "time" || key == "job" || key == "round" || key == "kind" || key == "form" ||
         key == "to" || key == "counts";
}

std::string Scalar(const nlohmann::ordered_json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

absl::StatusOr<std::string> StateDir(const AuditFlags& flags) {
  if (!flags.state_dir.empty()) return flags.state_dir;
  ASSIGN_OR_RETURN(const server::PartyConfig config, server::LoadPartyConfig(flags.config));
  // As fedanon-party: the audit files sit beside the run ledger in output_dir.
  return config.output_dir.empty() ? server::ResolvePath(config.data_dir, "output")
                                   : config.output_dir;
}

absl::Status RunAudit(const AuditFlags& flags) {
  if (flags.config.empty() == flags.state_dir.empty()) {
    return server::UsageError("give exactly one of --config and --state-dir");
  }
  ASSIGN_OR_RETURN(const std::string dir, StateDir(flags));
  absl::StatusOr<std::string> text = party::ReadAuditFile(dir, flags.job_id);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat("no audit file for ", flags.job_id, " in ", dir,
                                            " (this party did not take part in the job)"));
  }
  RETURN_IF_ERROR(text.status());
  if (flags.json) {
    std::cout << *text;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::string readable, FormatAuditText(*text));
  std::cout << readable;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FormatAuditText(const std::string& jsonl) {
  std::string out;
  std::istringstream in(jsonl);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    // In the order the party wrote the fields.
    const nlohmann::ordered_json j =
        nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("round") || !j["round"].is_number_unsigned() ||
        !j.contains("kind") || !j["kind"].is_string() || !j.contains("form") ||
        !j["form"].is_string() || !j.contains("to") || !j["to"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", n, " is not an audit entry"));
    }
    std::vector<std::string> to;
    for (const auto& r : j["to"]) to.push_back(Scalar(r));
    absl::StrAppendFormat(&out, "%s  round %-4d %-15s %-16s to %-24s",
                          j.value("time", std::string("?")), j["round"].get<uint64_t>(),
                          j["kind"].get<std::string>(), j["form"].get<std::string>(),
                          to.empty() ? "-" : absl::StrJoin(to, ","));
    std::vector<std::string> rest;
    for (const auto& [key, value] : j.items()) {
      if (IsColumn(key)) continue;
      const std::string v = Scalar(value);
      if (!v.empty()) rest.push_back(absl::StrCat(key, "=", v));
    }
    if (j.contains("counts") && j["counts"].is_array()) {
      uint64_t total = 0;
      for (const auto& c : j["counts"]) total += c.is_number_unsigned() ? c.get<uint64_t>() : 0;
      rest.push_back(absl::StrCat("own counts: ", j["counts"].size(), " words, sum ", total));
    }
    absl::StrAppend(&out, " ", absl::StrJoin(rest, " "), "\n");
  }
  return out;
}

server::CommandAction DeclarePartyCommand(CLI::App* party) {
  CLI::App* audit = party->add_subcommand(
      "audit",
      "Print this party's record of what it sent in a job (its own counts, in which form, to "
      "whom): the file <job_id>.audit.jsonl in the party's state directory");
  auto flags = std::make_shared<AuditFlags>();
  audit->add_option("JOB_ID", flags->job_id, "The job (job-<12 hex digits>)")->required();
  audit->add_option("--config", flags->config,
                    "The party's config (party.yaml): its output_dir holds the audit files");
  audit->add_option("--state-dir", flags->state_dir,
                    "The party's state directory (output_dir) instead of --config");
  audit->add_flag("--json", flags->json, "Print the raw JSON lines");
  const server::CommandAction status = DeclarePartyStatusCommand(party);
  server::CommandAction risk_action;
  CLI::App* risk = DeclarePartyRiskCommand(party, &risk_action);
  party->require_subcommand(1);
  return [flags, audit, status, risk, risk_action] {
    if (risk->parsed()) return risk_action();
    if (!audit->parsed()) return status();
    return server::ExitCode(RunAudit(*flags), "fedanon party audit");
  };
}

}  // namespace fedanon::cli
