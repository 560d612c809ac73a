#include "cli/report_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "app/job_assessment.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/html_report/view_log_summary.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"
#include "google/protobuf/util/json_util.h"
#include "server/admin/admin_client.h"

namespace fedanon::cli {
namespace {

struct ReportFlags {
  std::string job_id;
  std::string html;
  std::string spec;
  std::string result;
  std::vector<std::string> party_risk;  // NAME=FILE
  std::string report;
  bool force = false;
};

absl::StatusOr<fedanon::v1::RiskSummary> ReadRiskJson(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   base::ReadFile(path, base::ReadFileOptions{.what = "risk summary"}));
  fedanon::v1::RiskSummary summary;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &summary);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not the JSON of `fedanon party risk --json`: ", status.ToString()));
  }
  return summary;
}

absl::Status WriteOutput(const std::string& path, const std::string& content, bool force) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AtomicFileWriter> writer,
                   admin::AtomicFileWriter::Open(path, force));
  RETURN_IF_ERROR(writer->Write(content));
  return writer->Commit();
}

absl::Status RunReport(const AdminGlobals& g, const ReportFlags& f) {
  if (!f.result.empty() && f.spec.empty()) {
    return server::UsageError(
        "--result needs --spec (the QIDs and taxonomies the release is read with)");
  }
  html_report::ReportPage page;
  if (!f.spec.empty()) {
    ASSIGN_OR_RETURN(page.spec, spec::LoadJobSpec(f.spec));
    RETURN_IF_ERROR(spec::ValidateJobSpec(*page.spec));
    ASSIGN_OR_RETURN(page.taxonomies, app::LoadSpecTaxonomies(*page.spec));
  }
  std::vector<std::pair<std::string, fedanon::v1::RiskSummary>> party_risks;
  for (const std::string& p : f.party_risk) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      return server::UsageError(absl::StrCat("--party-risk expects PARTY=FILE, got '", p, "'"));
    }
    ASSIGN_OR_RETURN(fedanon::v1::RiskSummary risk, ReadRiskJson(p.substr(eq + 1)));
    party_risks.emplace_back(p.substr(0, eq), std::move(risk));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, ConnectToLeader(g));
  ASSIGN_OR_RETURN(const fedanon::v1::JobInfo job, client->GetJob(f.job_id));
  if (job.state() != fedanon::v1::JOB_STATE_DONE) {
    return absl::FailedPreconditionError(absl::StrCat(
        f.job_id, " is ", admin::JobStateName(job.state()), ": only a done job has a report"));
  }
  std::string view;
  RETURN_IF_ERROR(client
                      ->GetViewLog(f.job_id,
                                   [&view](std::string_view data) {
                                     view.append(data);
                                     return absl::OkStatus();
                                   })
                      .status());
  ASSIGN_OR_RETURN(page.leader_view, html_report::SummarizeViewLog(view));
  page.report = job.report();
  page.job_id = job.job_id();
  page.parties.assign(job.parties().begin(), job.parties().end());
  page.recipient = job.recipient();
  const bool vertical = page.spec.has_value()
                            ? page.spec->partitioning() == fedanon::v1::PARTITIONING_VERTICAL
                            : !page.report.participation().empty();
  page.kind = vertical ? "vertical" : "horizontal";
  if (!f.result.empty()) {
    evaluation::LossContext context;
    context.taxonomies = page.taxonomies;
    RETURN_IF_ERROR(app::AssessRelease(*page.spec, f.result, context, &page.report));
  }
  for (auto& [party, risk] : party_risks) {
    fedanon::v1::PartyRisk* p = page.report.add_party_risk();
    p->set_party(party);
    *p->mutable_risk() = std::move(risk);
  }
  if (!f.report.empty()) {
    ASSIGN_OR_RETURN(const std::string json, spec::ProtoToJson(page.report));
    RETURN_IF_ERROR(WriteOutput(f.report, json + "\n", f.force));
  }
  RETURN_IF_ERROR(WriteOutput(f.html, html_report::RenderReportHtml(page), f.force));
  std::cerr << "wrote the page of " << f.job_id << " to " << f.html << "\n";
  return absl::OkStatus();
}

}  // namespace

server::CommandAction DeclareReportCommand(const AdminGlobals* globals, CLI::App* command) {
  auto f = std::make_shared<ReportFlags>();
  command->add_option("JOB", f->job_id, "Job id (a done job)")->required();
  command->add_option("--html", f->html, "The page to write (one self-contained HTML file)")
      ->required();
  command->add_option("--spec", f->spec,
                      "The job's spec (YAML): the privacy model and the taxonomies the cut is "
                      "drawn on");
  command->add_option("--result", f->result,
                      "The released table as you hold it (CSV, e.g. from `fedanonctl result`): "
                      "its risk, loss and the model measured again (needs --spec)");
  command->add_option("--party-risk", f->party_risk,
                      "PARTY=FILE: a party's `fedanon party risk --json` on its own table "
                      "(repeatable)");
  command->add_option("--report", f->report, "Also write the report with these figures (JSON)");
  command->add_flag("--force", f->force, "Overwrite existing files");
  return [globals, f] { return server::ExitCode(RunReport(*globals, *f), "fedanonctl report"); };
}

}  // namespace fedanon::cli
