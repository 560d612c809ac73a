// One job's report as a single self-contained HTML page (docs/steward-guide.md): CSS and SVG
// inline, no script, no fetch, readable from a file without a server. Sections: the summary,
// the privacy model and its checks, what was generalized (each QID's cut drawn on its taxonomy),
// utility (CE/BE/UE when measured, DR, per-attribute loss), risk before and after, the parties,
// what the leader decoded (federated jobs), and the specialization steps.
//
// A pure function of its input. Every figure taken from the report carries a `data-check`
// attribute naming its path in the report's JSON (e.g. "risk_after.prosecutor.highest",
// "utility.attribute_loss.2.loss", "cut.0.values.3"), the view-log figures "view.*": the
// browser test reads them back and compares them with report.json and the view log.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/html_report/view_log_summary.h"
#include "common/table/taxonomy.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::html_report {

struct ReportPage {
  fedanon::v1::Report report;
  std::string kind = "centralized";  // "centralized", "horizontal", "vertical"
  std::string job_id;                // federated jobs
  std::vector<std::string> parties;  // federated jobs, in ring order
  std::string recipient;
  // Optional: the spec (privacy model parameters, attribute types) and the QIDs' taxonomies
  // (the cut drawn on the whole tree; without them, on the tree the steps explored).
  std::optional<fedanon::v1::JobSpec> spec;
  std::map<std::string, std::shared_ptr<const table::Taxonomy>> taxonomies;
  std::optional<ViewLogSummary> leader_view;  // federated jobs
};

std::string RenderReportHtml(const ReportPage& page);

}  // namespace fedanon::html_report
