// `fedanon risk`: the re-identification risk of one table (docs/risk.md, common/risk), raw or
// released, under a job spec's QIDs: prosecutor, journalist and marketer risk, sample uniques,
// the population-uniqueness models (given the population size or the sampling fraction) and the
// QID combinations' distinction and separation.
// The figures themselves: app/table_risk.h.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Declares the options on `command`: --spec, --input, --population-size | --sampling-fraction,
// --threshold, --max-combination-size, --json; the action prints the summary (text or JSON).
server::CommandAction DeclareRiskCommand(CLI::App* command);

// Adds the --population-size, --sampling-fraction, --threshold and --max-combination-size
// options to `command`, stored in `overrides` (shared by risk, party risk and evaluate).
void AddRiskOptions(CLI::App* command, fedanon::v1::RiskOptions* overrides);

}  // namespace fedanon::cli
