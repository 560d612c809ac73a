#include "leader/view_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/json_string.h"
#include "common/base/status_macros.h"

namespace fedanon::leader {
namespace {

std::string GroupLabel(const std::vector<engine::AttributeHierarchy>& hier,
                       const std::vector<engine::NodeIndex>& key) {
  std::vector<std::string> labels;
  for (size_t a = 0; a < key.size() && a < hier.size(); ++a) {
    labels.push_back(hier[a].Label(key[a], ""));
  }
  return absl::StrJoin(labels, ", ");
}

}  // namespace

std::string ViewEntryToJson(const ViewEntry& e) {
  std::string out = absl::StrCat("{\"round\":", e.round, ",\"kind\":", base::JsonString(e.kind),
                                 ",\"attribute\":", base::JsonString(e.attribute),
                                 ",\"labelled\":", e.labelled ? "true" : "false", ",\"counts\":[",
                                 absl::StrJoin(e.counts, ","), "]");
  if (!e.node.empty()) absl::StrAppend(&out, ",\"node\":", base::JsonString(e.node));
  if (!e.bounds.empty()) absl::StrAppend(&out, ",\"bounds\":[", absl::StrJoin(e.bounds, ","), "]");
  if (!e.party.empty()) absl::StrAppend(&out, ",\"party\":", base::JsonString(e.party));
  if (e.score.has_value()) {
    absl::StrAppend(
        &out, ",\"score\":", std::isfinite(*e.score) ? absl::StrFormat("%.17g", *e.score) : "null");
  }
  if (!e.detail.empty()) absl::StrAppend(&out, ",\"detail\":", base::JsonString(e.detail));
  return out + "}";
}

absl::StatusOr<std::string> ViewLog::PathFor(const std::string& data_dir,
                                             const std::string& job_id) {
  RETURN_IF_ERROR(base::ValidateJobId(job_id));
  return absl::StrCat(data_dir, "/", job_id, ".view.jsonl");
}

absl::StatusOr<std::unique_ptr<ViewLog>> ViewLog::Open(const std::string& data_dir,
                                                       const std::string& job_id) {
  ASSIGN_OR_RETURN(std::string path, PathFor(data_dir, job_id));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                        base::kPrivateFileMode);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open", path);
  // Exactly 0600 whatever the umask, also for a file left by an earlier run of the job.
  if (::fchmod(fd, base::kPrivateFileMode) != 0) {
    const int err = errno;
    ::close(fd);
    return base::ErrnoStatus(err, "cannot chmod", path);
  }
  return std::unique_ptr<ViewLog>(new ViewLog(std::move(path), fd));
}

absl::StatusOr<std::string> ViewLog::Read(const std::string& data_dir, const std::string& job_id) {
  ASSIGN_OR_RETURN(std::string path, PathFor(data_dir, job_id));
  absl::StatusOr<std::string> text = base::ReadFile(path, /*follow_symlinks=*/false);
  if (absl::IsNotFound(text.status())) return std::string();
  return text;
}

absl::Status ViewLog::Stream(const std::string& data_dir, const std::string& job_id,
                             size_t piece_bytes,
                             const std::function<absl::Status(std::string_view)>& sink) {
  ASSIGN_OR_RETURN(std::string path, PathFor(data_dir, job_id));
  absl::Status status = base::ReadFileInPieces(path, piece_bytes, /*follow_symlinks=*/false, sink);
  if (absl::IsNotFound(status)) return absl::OkStatus();  // nothing decoded yet
  return status;
}

ViewLog::~ViewLog() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ViewLog::ExpectReplayOfItsLines() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(path_, /*follow_symlinks=*/false));
  replayed_ = absl::StrSplit(text, '\n', absl::SkipEmpty());
  replay_next_ = 0;
  return absl::OkStatus();
}

absl::Status ViewLog::Append(const ViewEntry& entry) {
  const std::string json = ViewEntryToJson(entry);
  absl::MutexLock lock(&mu_);
  if (replay_next_ < replayed_.size()) {
    if (replayed_[replay_next_] == json) {
      ++replay_next_;  // logged before the restart
      return absl::OkStatus();
    }
    replayed_.clear();  // past the replay: every entry is new
    replay_next_ = 0;
  }
  const std::string line = json + "\n";
  // O_APPEND: each write lands at the end as a whole; WriteAll only loops on a short write.
  return base::WriteAll(fd_, line, path_);
}

absl::Status ViewLog::Append(uint32_t round, std::string kind, std::string attribute, bool labelled,
                             std::vector<uint64_t> counts) {
  ViewEntry e;
  e.round = round;
  e.kind = std::move(kind);
  e.attribute = std::move(attribute);
  e.labelled = labelled;
  e.counts = std::move(counts);
  return Append(e);
}

absl::Status ViewLog::AppendStats(uint32_t round,
                                  const std::vector<engine::AttributeHierarchy>& hier,
                                  int num_classes, size_t num_tracked,
                                  const engine::StatsRequest& request,
                                  const std::vector<uint64_t>& sum) {
  const size_t nc = static_cast<size_t>(std::max(1, num_classes));
  const size_t stride = 1 + num_tracked;
  size_t pos = 0;
  std::vector<ViewEntry> entries;  // written once the whole vector is accounted for
  // The next `words` words of `sum` as one entry.
  auto take = [&](ViewEntry e, size_t words) -> absl::Status {
    if (pos + words > sum.size()) {
      return absl::InternalError("view log: a decoded vector is shorter than its request");
    }
    e.round = round;
    e.counts.assign(sum.begin() + static_cast<ptrdiff_t>(pos),
                    sum.begin() + static_cast<ptrdiff_t>(pos + words));
    pos += words;
    entries.push_back(std::move(e));
    return absl::OkStatus();
  };
  for (const engine::RangeCountRequest& r : request.range_counts) {
    if (r.bounds.size() < 2) continue;
    ViewEntry e;
    e.kind = r.labelled ? kViewNumericSplit : kViewNumericSplitCells;
    e.attribute = hier[r.attr].column().name;
    e.labelled = r.labelled;
    e.bounds.assign(r.bounds.begin(), r.bounds.end());
    RETURN_IF_ERROR(take(std::move(e), (r.bounds.size() - 1) * (r.labelled ? nc : 1)));
  }
  for (const auto& [a, n] : request.rank_histograms) {
    const engine::HierarchyNode& node = hier[a].node(n);
    ViewEntry e;
    e.kind = kViewRankHistogram;
    e.attribute = hier[a].column().name;
    e.labelled = true;
    e.node = hier[a].Label(n, "");
    e.bounds = {node.rank_lo, node.rank_hi};
    RETURN_IF_ERROR(take(std::move(e), static_cast<size_t>(node.rank_hi - node.rank_lo) * nc));
  }
  for (const auto& [a, n] : request.node_class_counts) {
    ViewEntry e;
    e.kind = kViewCandidateCounts;
    e.attribute = hier[a].column().name;
    e.labelled = true;
    e.node = hier[a].Label(n, "");
    RETURN_IF_ERROR(take(std::move(e), static_cast<size_t>(hier[a].FineChildCount(n)) * nc));
  }
  for (const auto& key : request.group_keys) {
    size_t words = stride;
    for (size_t a = 0; a < key.size(); ++a) {
      words += stride * static_cast<size_t>(hier[a].FineChildCount(key[a]));
    }
    ViewEntry e;
    e.kind = kViewGroupCounts;
    e.labelled = num_tracked > 0;
    e.node = GroupLabel(hier, key);
    RETURN_IF_ERROR(take(std::move(e), words));
  }
  for (const auto& key : request.released_groups) {
    ViewEntry e;
    e.kind = kViewReleasedCounts;
    e.labelled = request.released_combinations > 1;
    e.node = GroupLabel(hier, key);
    RETURN_IF_ERROR(take(std::move(e), static_cast<size_t>(request.released_combinations)));
  }
  for (const engine::HistogramQuery& q : request.histograms) {
    ViewEntry e;
    e.kind = kViewSensitiveHistogram;
    e.labelled = true;
    e.node = GroupLabel(hier, q.key);
    if (q.attr >= 0) {
      const engine::AttributeHierarchy& h = hier[static_cast<size_t>(q.attr)];
      e.attribute = h.column().name;
      e.detail = h.CandidateLabel(q.key[static_cast<size_t>(q.attr)], q.candidate, "");
    }
    RETURN_IF_ERROR(take(std::move(e), engine::HistogramWords(hier, q, request.histogram_domain)));
  }
  if (pos != sum.size()) {
    return absl::InternalError("view log: a decoded vector is longer than its request");
  }
  for (const ViewEntry& e : entries) RETURN_IF_ERROR(Append(e));
  return absl::OkStatus();
}

absl::Status ViewLog::Sync() {
  absl::MutexLock lock(&mu_);
  return base::SyncFile(fd_, "cannot fsync", path_, /*data_only=*/false);
}

}  // namespace fedanon::leader
