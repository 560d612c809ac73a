#include "cli/watch_progress.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fedanon::cli {

std::string ProgressBar(uint32_t done, uint32_t total, int width) {
  const double fraction =
      total == 0 ? 0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const int filled = static_cast<int>(std::lround(fraction * width));
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '-'), "]");
}

std::string WatchProgress::Update(const fedanon::v1::JobInfo& job) {
  if (job.state() != fedanon::v1::JOB_STATE_RUNNING || job.round() == 0) return "";
  if (samples_.empty() || job.round() > samples_.back().first) {
    samples_.emplace_back(job.round(), job.elapsed_seconds());
    if (samples_.size() > kWindow + 1) samples_.pop_front();
  }
  std::string out;
  if (expected_ > 0) {
    absl::StrAppend(&out, ProgressBar(job.round(), expected_), " ", job.round(), "/", expected_);
  }
  if (samples_.size() < 2) return out;
  const auto& [first_round, first_elapsed] = samples_.front();
  const auto& [last_round, last_elapsed] = samples_.back();
  const double per_round =
      std::max(0.0, last_elapsed - first_elapsed) / static_cast<double>(last_round - first_round);
  absl::StrAppend(&out, out.empty() ? "" : ", ", absl::StrFormat("%.2f s/round", per_round));
  if (expected_ > 0) {
    if (job.round() >= expected_) {
      absl::StrAppend(&out, ", beyond the ", expected_, " expected rounds");
    } else {
      absl::StrAppend(&out, absl::StrFormat(", ETA %.1f s", per_round * (expected_ - job.round())));
    }
  }
  return out;
}

}  // namespace fedanon::cli
