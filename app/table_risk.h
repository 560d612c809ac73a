// The re-identification risk of one table under a job spec (docs/risk.md, common/risk): what
// `fedanon risk`, `evaluate`, `anonymize`, the job reports and `fedanon party risk` share, so that
// every place reports the same figures.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::app {

// The spec's `risk` section with the command line's settings on top: a population size or a
// sampling fraction given there replaces the spec's population input of either kind; a
// threshold or combination size > 0 replaces the spec's.
fedanon::v1::RiskOptions EffectiveRiskOptions(const fedanon::v1::JobSpec& spec,
                                              const fedanon::v1::RiskOptions& overrides);

// The risk of the CSV table at `path` (its QID columns as written; rows with a missing value
// dropped as the job drops them), named `name` in the summary.
absl::StatusOr<fedanon::v1::RiskSummary> AssessTableRisk(const fedanon::v1::JobSpec& spec,
                                                         const std::string& path,
                                                         const fedanon::v1::RiskOptions& options,
                                                         const std::string& name);

}  // namespace fedanon::app
