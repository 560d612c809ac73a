// `fedanon sweep`: the utility of a job over a grid of LKC parameters (mohammed2010 §6.1). Each
// grid cell runs the centralized engine (`Anonymize`, which a horizontal federation reproduces
// exactly) on the raw table and measures CE and DR (utility_evaluation.h); optionally also the
// naive "generalize-then-integrate" baseline of mohammed2010 §1.2: the raw table cut into N
// contiguous parts, each anonymized on its own with the same spec, the results concatenated.
// BE and UE are measured once. Intermediate files live in a temporary directory that is removed
// at the end; the report is written by the caller (sweep_report.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/evaluation/utility_evaluation.h"
#include "fedanon/v1/job.pb.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

// The parameter values of a sweep; a key the grid does not name keeps the spec's value.
struct SweepGrid {
  std::vector<uint32_t> L;
  std::vector<uint32_t> K;
  std::vector<double> C;
  size_t cells() const { return L.size() * K.size() * C.size(); }
};

// Parses "L=2,4,6 K=20,40,60" (keys L, K, C separated by spaces; values by commas) against an
// LKC spec. InvalidArgument for another privacy model, an unknown or repeated key, a value that
// is not a number of the key's type, or a value the spec validation rejects (e.g. L above the
// number of QID attributes, C outside (0, 1]).
absl::StatusOr<SweepGrid> ParseSweepGrid(const std::string& text, const fedanon::v1::JobSpec& spec);

struct SweepOptions {
  std::string spec_path;
  std::string raw_path;
  std::string grid;
  uint32_t naive_parties = 0;  // 0: no naive baseline; else >= 2
  // Also run every cell with `recoding: local` (method "local"); "centralized" is then global.
  bool local = false;
  evaluation::EvaluationOptions evaluation;
  std::function<void(const std::string&)> progress;  // one line per step; may be empty
};

struct SweepPoint {
  std::string method;  // "centralized" (the spec's recoding; global with --local), "naive", "local"
  uint32_t L = 0;
  uint32_t K = 0;
  double C = 0;
  bool ok = false;
  std::string error;  // !ok: why the engine produced no table (e.g. even the root violates)
  double classification_error = 0;
  double discernibility_ratio = 0;
  uint64_t groups = 0;
  double seconds = 0;  // anonymization and evaluation of this point
};

struct SweepResult {
  std::string job_name;
  std::string spec_path;
  std::string raw_path;
  std::string grid;
  uint32_t naive_parties = 0;
  bool local = false;  // "local" points (recoding: local) beside the global ones
  uint64_t seed = 0;
  evaluation::RawBaselines baselines;
  std::vector<SweepPoint> points;  // per cell (L, then K, then C): centralized, then naive
};

// Runs the sweep. Errors in the spec, grid or raw table fail the whole sweep; a cell whose
// anonymization fails is recorded as a point with ok = false.
absl::StatusOr<SweepResult> RunSweep(const SweepOptions& options);

// `fedanon sweep`: declares the options on `command`; the action runs RunSweep (progress on
// stderr unless --quiet) and writes its report (sweep_report.h).
server::CommandAction DeclareSweepCommand(CLI::App* command);

}  // namespace fedanon::cli
