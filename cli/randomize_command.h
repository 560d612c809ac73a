// `fedanon randomize`: random anonymization (yang2010, common/random_anonymization.h) of one
// table. Loads and validates the job spec and the data exactly as `fedanon anonymize` does (the
// spec's QID attributes are randomized, class/sensitive/other columns copied verbatim, the record
// id and unlisted columns dropped, `missing: drop` rows dropped), randomizes the QID values, and
// writes the released table (same rows and order) plus, optionally, a JSON report. Reports the
// probabilistic anonymity Pa(D') and, when asked, the Proposition 10 bound and the relative bias
// of supports for chosen combination lengths. On any error nothing is written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/randomization/random_anonymization.h"
#include "common/randomization/random_anonymization_metrics.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

struct RandomizeOptions {
  std::string spec_path;
  std::string input_path;
  std::string output_path;
  std::string report_path;        // empty: no report file
  int attributes_per_record = 1;  // k: 1 is Algorithm 1, more is Algorithm 2
  // Set: a reproducible run (xoshiro256** from this seed), never to be published. Unset: the
  // OpenSSL CSPRNG, so that nobody can redo (and so undo) the randomization.
  std::optional<uint64_t> seed;
  // Unset: entropy-weighted (Proposition 7) for k == 1, uniform for k > 1.
  std::optional<randomization::AttributeSelection> selection;
  bool prior_knowledge_bound = false;  // compute Proposition10Bound (k == 1 only)
  std::vector<int> bias_lengths;       // compute MeasureRelativeBias for each
  bool amplification = false;          // compute CAmplification (Definition 8; k == 1 only)
  std::vector<int> variance_lengths;   // compute MeasureRelativeVariance for each (k == 1 only)
  int variance_runs = 20;              // randomizations of the measured variance
};

struct RandomizeSummary {
  std::string job_name;
  uint64_t records_in = 0;
  uint64_t records_dropped = 0;
  uint64_t records_out = 0;
  std::vector<std::string> qid_names;
  std::vector<size_t> distinct_values;  // per QID attribute
  randomization::RandomizationPlan plan;
  bool reproducible = false;
  double probabilistic_anonymity = 0;
  std::optional<randomization::PriorKnowledgeBound> prior_knowledge_bound;
  std::vector<randomization::RelativeBias> relative_bias;
  std::optional<randomization::Amplification> amplification;
  std::vector<randomization::RelativeVariance> relative_variance;
  std::map<std::string, double> timings_seconds;
};

// Runs the command. Errors: spec, data and output-directory errors as for `fedanon anonymize`;
// InvalidArgument for parameters that do not fit the job (k above the number of QID attributes,
// entropy selection with k > 1, the bound with k > 1, a combination length out of range).
absl::StatusOr<RandomizeSummary> RandomizeTable(const RandomizeOptions& options);

// The summary as pretty-printed JSON (the --report file). The seed itself is never included.
std::string RandomizeSummaryToJson(const RandomizeSummary& summary);

// Human-readable lines for stderr.
std::string RandomizeSummaryToText(const RandomizeSummary& summary);

// `fedanon randomize`: declares the options on `command`; the action runs RandomizeTable and
// prints the summary on stderr (unless --quiet). Option combinations the paper does not define
// are usage errors (exit code 2).
server::CommandAction DeclareRandomizeCommand(CLI::App* command);

}  // namespace fedanon::cli
