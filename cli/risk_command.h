// `fedanon risk`: the re-identification risk of one table (docs/risk.md, common/risk), raw or
// released, under a job spec's QIDs: prosecutor, journalist and marketer risk, sample uniques,
// the population-uniqueness models (given the population size or the sampling fraction) and the
// QID combinations' distinction and separation. Also the helpers `evaluate`, `anonymize`, the
// job reports and `fedanon party risk` share, so that every place reports the same figures.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"
#include "server/runtime/command_line.h"

namespace fedanon::common {

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

// Declares the options on `command`: --spec, --input, --population-size | --sampling-fraction,
// --threshold, --max-combination-size, --json; the action prints the summary (text or JSON).
server::CommandAction DeclareRiskCommand(CLI::App* command);

// Adds the --population-size, --sampling-fraction, --threshold and --max-combination-size
// options to `command`, stored in `overrides` (shared by risk, party risk and evaluate).
void AddRiskOptions(CLI::App* command, fedanon::v1::RiskOptions* overrides);

}  // namespace fedanon::common
