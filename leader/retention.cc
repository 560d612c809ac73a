#include "leader/retention.h"

#include <dirent.h>
#include <errno.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::leader {
namespace {

// "31.0 days" / "2.5 hours" / "40 s": the age of a job's outputs in logs and audit entries.
std::string AgeText(int64_t seconds) {
  if (seconds >= 86400) return absl::StrFormat("%.1f days", static_cast<double>(seconds) / 86400);
  if (seconds >= 3600) return absl::StrFormat("%.1f hours", static_cast<double>(seconds) / 3600);
  return absl::StrCat(seconds, " s");
}

// Deletes `path` (a symbolic link itself, never its target). True when it existed.
absl::StatusOr<bool> Delete(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  return base::ErrnoStatus(errno, "retention: cannot delete", path);
}

// chmod `path` to `mode` when it is a directory (`dir`) or regular file whose group/other bits
// are set, or whose mode differs for a directory. Symbolic links are left alone.
absl::StatusOr<bool> Tighten(const std::string& path, mode_t mode, bool dir) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return base::ErrnoStatus(errno, "cannot stat", path);
  }
  if (S_ISLNK(st.st_mode) || (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) return false;
  if ((st.st_mode & 0077) == 0) return false;
  if (::chmod(path.c_str(), mode) != 0) return base::ErrnoStatus(errno, "cannot chmod", path);
  spdlog::warn("{} was mode {:04o}, readable by others than the leader's user: now {:04o}", path,
               st.st_mode & 07777, mode);
  return true;
}

// Names of the entries of `dir` (not . and ..); empty when it does not exist.
absl::StatusOr<std::vector<std::string>> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return names;
    return base::ErrnoStatus(errno, "cannot list", dir);
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

}  // namespace

Retention::Retention(JobStore* store, RetentionOptions options)
    : store_(store), options_(std::move(options)) {}

absl::StatusOr<RetentionSweepStats> Retention::Sweep() {
  if (options_.period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("retention: the period must be positive");
  }
  const int64_t now = absl::ToUnixSeconds(options_.now());
  const int64_t cutoff = now - absl::ToInt64Seconds(options_.period);
  RetentionSweepStats stats;
  absl::Status first_error;
  // Each batch forgets its jobs (or fails them), so the next query starts after them; a job
  // whose files cannot be deleted is skipped in this sweep and retried at the next.
  std::vector<std::string> failed;
  for (;;) {
    ASSIGN_OR_RETURN(
        std::vector<FinishedJob> jobs,
        store_->FinishedBefore(cutoff, options_.batch + static_cast<int>(failed.size())));
    std::erase_if(jobs, [&failed](const FinishedJob& j) {
      return std::find(failed.begin(), failed.end(), j.job_id) != failed.end();
    });
    if (jobs.empty()) break;
    for (const FinishedJob& job : jobs) {
      const int64_t age = now - job.finished_unix;
      std::vector<std::string> deleted;
      absl::Status st;
      for (const std::string& path :
           {absl::StrCat(store_->data_dir(), "/results/", job.job_id, ".csv"),
            absl::StrCat(store_->data_dir(), "/", job.job_id, ".view.jsonl")}) {
        absl::StatusOr<bool> existed = Delete(path);
        if (!existed.ok()) {
          st = existed.status();
          break;
        }
        if (*existed) deleted.push_back(path);
      }
      if (st.ok()) {
        stats.files += static_cast<int>(deleted.size());
        std::vector<std::string> what = deleted;
        if (job.has_report) what.push_back("the report in the job record");
        const std::string detail = absl::StrCat(
            "retention ", AgeText(absl::ToInt64Seconds(options_.period)), ": deleted ",
            what.empty() ? "nothing (the leader held no output)" : absl::StrJoin(what, ", "),
            "; finished ", AgeText(age), " ago");
        st = store_->ForgetOutputs(job.job_id, detail);
        if (st.ok()) {
          ++stats.jobs;
          spdlog::info("job={} retention: {}", job.job_id, detail);
          continue;
        }
      }
      spdlog::error("job={} retention: {} (retried at the next sweep)", job.job_id,
                    std::string(st.message()));
      if (first_error.ok()) first_error = st;
      failed.push_back(job.job_id);
    }
  }
  if (!first_error.ok() && stats.jobs == 0 && !failed.empty()) return first_error;
  return stats;
}

PeriodicRetention::PeriodicRetention(JobStore* store, RetentionOptions options,
                                     absl::Duration interval)
    : retention_(store, std::move(options)), interval_(interval) {
  thread_ = std::thread([this] { Run(); });
}

PeriodicRetention::~PeriodicRetention() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

int PeriodicRetention::sweeps() const {
  absl::MutexLock lock(&mu_);
  return sweeps_;
}

void PeriodicRetention::Run() {
  for (;;) {
    absl::StatusOr<RetentionSweepStats> stats = retention_.Sweep();
    if (!stats.ok()) {
      spdlog::error("retention sweep failed: {}", std::string(stats.status().message()));
    } else if (stats->jobs > 0) {
      spdlog::info("retention sweep: outputs of {} finished jobs deleted ({} files)", stats->jobs,
                   stats->files);
    }
    absl::MutexLock lock(&mu_);
    ++sweeps_;
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
  }
}

absl::Duration RetentionSweepInterval(absl::Duration period) {
  return std::clamp(period / 10, absl::Seconds(1), absl::Hours(1));
}

absl::StatusOr<int> SecureLeaderDataDir(const std::string& data_dir) {
  int changed = 0;
  const std::string results = data_dir + "/results";
  const std::string calls = data_dir + "/calls";  // recorded replies kept in files (schema v6)
  for (const std::string& dir : {data_dir, results, calls}) {
    ASSIGN_OR_RETURN(bool c, Tighten(dir, 0700, /*dir=*/true));
    changed += c ? 1 : 0;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> top, Entries(data_dir));
  for (const std::string& name : top) {
    if (name == "jobs.db" || name == "jobs.db-wal" || name == "jobs.db-shm" ||
        name == "jobs.db-journal" || absl::EndsWith(name, ".view.jsonl")) {
      ASSIGN_OR_RETURN(bool c,
                       Tighten(absl::StrCat(data_dir, "/", name), base::kPrivateFileMode, false));
      changed += c ? 1 : 0;
    }
  }
  for (const std::string& dir : {results, calls}) {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Entries(dir));
    for (const std::string& name : files) {
      ASSIGN_OR_RETURN(bool c,
                       Tighten(absl::StrCat(dir, "/", name), base::kPrivateFileMode, false));
      changed += c ? 1 : 0;
    }
  }
  return changed;
}

}  // namespace fedanon::leader
