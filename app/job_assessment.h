// What `fedanon anonymize`, `fedanon federation up` and `fedanonctl report` add to a job's report
// for a data steward (docs/steward-guide.md), each where the data is: the release's risk,
// per-attribute loss and the privacy model measured again (by whoever holds the release), the
// input's risk (by the holder of the input table: the centralized tool, or each party on its
// own table), the classification errors when the raw table lines up with the release
// (centralized runs). Also the job page (common/html_report) written to a file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/evaluation/information_loss.h"
#include "common/html_report/report_page.h"
#include "common/risk/qid_codes.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::app {

// The taxonomies the spec's QIDs name (paths as LoadJobSpec resolved them), by attribute.
absl::StatusOr<std::map<std::string, std::shared_ptr<const table::Taxonomy>>> LoadSpecTaxonomies(
    const fedanon::v1::JobSpec& spec);

// The privacy model's anonymity requirements measured on the released QID values `release`:
// LKC's "every combination of L QIDs has >= K records", each anonymity template's k; a
// confidence bound is listed with the engine's figure (not re-measured: the release's groups
// would need the sensitive values the bound names). Global recoding only; for local recoding the
// list says the release was not re-measured.
std::vector<fedanon::v1::ModelCheck> MeasureModelChecks(const fedanon::v1::JobSpec& spec,
                                                        const risk::QidCodes& release,
                                                        const fedanon::v1::Report& report);

// risk_after, the per-attribute loss (utility.attribute_loss, average_loss) and model_checks of
// the released CSV at `released_path`, into `report`.
absl::Status AssessRelease(const fedanon::v1::JobSpec& spec, const std::string& released_path,
                           const evaluation::LossContext& loss_context,
                           fedanon::v1::Report* report);

// BE, CE and UE (utility.classification) of a centralized run: the raw table at `raw_path` and
// its release at `released_path`, same records in the same order. Nothing when the spec has no
// class attribute.
absl::Status AssessClassification(const fedanon::v1::JobSpec& spec, const std::string& raw_path,
                                  const std::string& released_path, fedanon::v1::Report* report);

// Writes the page (mode 0644, atomically).
absl::Status WriteReportHtml(const std::string& path, const html_report::ReportPage& page);

}  // namespace fedanon::app
