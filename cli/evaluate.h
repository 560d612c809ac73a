// `fedanon evaluate`: the utility of an anonymized release (classification errors BE/CE/UE, SE
// per party of a vertical job, the discernibility ratio DR; common/evaluation does the
// measuring; naive Bayes or the tree, a split or k-fold cross-validation, the removal error RE and
// the thesis's distortion metric on request) or, without a release, the raw baselines BE, UE and
// SE, and the raw risk; the re-identification risk before and after (common/risk, the figures
// of `fedanon risk`); with `--randomized`, the yang2010 §7 evaluation of a `fedanon randomize`
// release (COUNT-query relative error and Apriori association recovery, against an Anatomy
// baseline) instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/evaluation/ra_evaluation.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

struct UtilityReportOptions {
  std::string spec_path;
  std::string raw_path;
  std::string anonymized_path;  // empty: only the baselines
  // A `recoding: local` release of the same table, shown beside the (global) anonymized one.
  std::string local_path;
  uint64_t seed = 1;                            // of the 2/3 training, 1/3 test split
  std::string classifier = "c45";               // or "naive-bayes"
  int folds = 0;                                // >= 2: k-fold cross-validation
  std::vector<std::string> removed_attributes;  // RE: the raw records without these
  bool distortion = false;                      // the thesis's distortion metric (§6.4)
  bool json = false;                            // JSON instead of text
  std::string randomized_path;  // non-empty: the RA evaluation (yang2010 §7) of this release
  evaluation::RaEvaluationOptions ra;
  // Re-identification risk of the raw table and of the anonymized one (docs/risk.md): the
  // command line's settings over the spec's risk section.
  fedanon::v1::RiskOptions risk;
};

// The report `fedanon evaluate` prints on stdout.
absl::StatusOr<std::string> UtilityReport(const UtilityReportOptions& options);

// Declares the options on `command`; the action prints UtilityReport.
server::CommandAction DeclareEvaluateCommand(CLI::App* command);

}  // namespace fedanon::cli
