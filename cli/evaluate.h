// `fedanon evaluate`: the utility of an anonymized release (classification errors BE/CE/UE, SE
// per party of a vertical job, the discernibility ratio DR; common/evaluation does the
// measuring) or, without a release, the raw baselines BE, UE and SE.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/command_line.h"

namespace fedanon::common {

struct UtilityReportOptions {
  std::string spec_path;
  std::string raw_path;
  std::string anonymized_path;  // empty: only the baselines
  uint64_t seed = 1;            // of the 2/3 training, 1/3 test split
  bool json = false;            // JSON instead of text
};

// The report `fedanon evaluate` prints on stdout.
absl::StatusOr<std::string> UtilityReport(const UtilityReportOptions& options);

// Declares the options on `command`; the action prints UtilityReport.
server::CommandAction DeclareEvaluateCommand(CLI::App* command);

}  // namespace fedanon::common
