// The progress part of `fedanonctl watch`'s lines, from the round timings the leader reports
// (JobInfo.round and elapsed_seconds): the mean time per round over the last rounds seen, and —
// when the admin expects a number of rounds (`--expect-rounds N`, e.g. the specializations of an
// earlier run of the same spec; a top-down specialization stops when no valid candidate is left,
// so nobody knows the total in advance) — a bar and an ETA:
//   "[########------------] 8/20, 0.42 s/round, ETA 5.0 s"
// Plain logic, no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "fedanon/v1/federation.pb.h"

namespace fedanon::cli {

class WatchProgress {
 public:
  // `expected_rounds` 0: no bar, no ETA (only the rate).
  explicit WatchProgress(uint32_t expected_rounds = 0) : expected_(expected_rounds) {}

  // Records `job` and returns the text to append to its line ("" until a rate is known, and for
  // a job that is not running).
  std::string Update(const fedanon::v1::JobInfo& job);

 private:
  static constexpr size_t kWindow = 8;  // rounds the rate is averaged over
  uint32_t expected_;
  std::deque<std::pair<uint32_t, double>> samples_;  // (round, elapsed seconds) as first seen
};

// "[####----]" with `width` cells, `done` of `total` filled (clamped).
std::string ProgressBar(uint32_t done, uint32_t total, int width = 20);

}  // namespace fedanon::cli
