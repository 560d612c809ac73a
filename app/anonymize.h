// Centralized anonymization of one table (`fedanon anonymize`, cli/anonymize.h) — load and validate
// the spec and the data, run top-down specialization with the in-process count source, write the
// anonymized CSV (same rows and order; QID values generalized; unlisted columns dropped), the JSON
// report and, with --html, the job's page (app/job_assessment.h). On any error nothing is written
// (outputs are committed atomically at the very end), and no output may name a file the run reads
// (the input, the spec, its taxonomies, the previous release) or another output: that is refused
// before anything is read.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::app {

struct AnonymizeOptions {
  std::string spec_path;
  std::string input_path;  // "-": standard input (read once, so a pipe or FIFO works)
  std::string output_path;
  std::string report_path;  // empty: no report file
  uint32_t max_rounds = 0;  // 0: run to the end
  // Sequential release (docs/sequential-releases.md): the earlier published tables the output
  // will be joined with (T2, ..., Tp in this order; several form a star join with the output);
  // needs the spec's `sequential` section, and that section needs at least one.
  std::vector<std::string> previous_release_paths;
  // The largest input table read (bytes); a larger one is an error before it is all in memory.
  uint64_t max_input_bytes = uint64_t{64} << 30;
  // Progress messages for long runs (called at most about once a second); may be empty.
  std::function<void(const std::string&)> progress;
  // Warnings that do not stop the run (a sensitive value absent from the data); may be empty.
  std::function<void(const std::string&)> warn;
  // The steward's figures in the report (docs/steward-guide.md): risk before (the input) and
  // after (the release), per-attribute loss, the model measured again on the release and, when
  // the input can be read again and the spec has a class, BE / CE / UE. Also when the spec has a
  // `risk` section or html_path is set.
  bool assess = false;
  std::string html_path;          // the job's page (HTML); empty: none
  fedanon::v1::RiskOptions risk;  // the command line's settings over the spec's risk section
};

absl::StatusOr<fedanon::v1::Report> Anonymize(const AnonymizeOptions& options);

// The report as pretty-printed JSON, ending in a newline.
absl::StatusOr<std::string> ReportToJson(const fedanon::v1::Report& report);

}  // namespace fedanon::app
