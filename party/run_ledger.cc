#include "party/run_ledger.h"

#include <filesystem>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::party {
namespace {

constexpr char kHeader[] = "fedanon-run-ledger-v1";

}  // namespace

absl::StatusOr<std::unique_ptr<RunLedger>> RunLedger::Open(const std::string& path) {
  std::unique_ptr<RunLedger> ledger(new RunLedger(path));
  if (!path.empty()) {
    absl::MutexLock lock(&ledger->mu_);
    RETURN_IF_ERROR(ledger->Load());
  }
  return ledger;
}

absl::Status RunLedger::Load() {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string text,
                   base::ReadFile(path_, base::ReadFileOptions{.what = "run ledger"}));
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || lines.front() != kHeader) {
    return absl::FailedPreconditionError(absl::StrCat("run ledger ", path_, ": not a run ledger"));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], '\t');
    Run run;
    std::string table;
    if (f.size() != 4 || !absl::CUnescape(f[2], &table) ||
        (f[3] != "prepared" && f[3] != "released" && f[3] != "done" && f[3] != "failed")) {
      return absl::FailedPreconditionError(
          absl::StrCat("run ledger ", path_, ": line ", i + 1, " does not parse"));
    }
    run.job_id = f[1];
    run.table = std::move(table);
    run.state = f[3] == "prepared"   ? State::kPrepared
                : f[3] == "released" ? State::kReleased
                : f[3] == "done"     ? State::kDone
                                     : State::kFailed;
    runs_[f[0]] = std::move(run);
  }
  return absl::OkStatus();
}

absl::Status RunLedger::Save() const {
  if (path_.empty()) return absl::OkStatus();
  std::string text = absl::StrCat(kHeader, "\n");
  for (const auto& [run_id, run] : runs_) {
    const char* state = run.state == State::kPrepared   ? "prepared"
                        : run.state == State::kReleased ? "released"
                        : run.state == State::kDone     ? "done"
                                                        : "failed";
    absl::StrAppend(&text, run_id, "\t", run.job_id, "\t", absl::CEscape(run.table), "\t", state,
                    "\n");
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  return base::WriteFileAtomically(path_, text, {.mode = base::kPrivateFileMode});
}

uint64_t RunLedger::ReleasesLocked(const std::string& table) const {
  uint64_t n = 0;
  for (const auto& [id, run] : runs_) n += run.table == table && run.state != State::kFailed;
  return n;
}

absl::Status RunLedger::Reserve(const std::string& run_id, const std::string& job_id,
                                const std::string& table, std::optional<uint64_t> max_releases) {
  absl::MutexLock lock(&mu_);
  if (auto it = runs_.find(run_id); it != runs_.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("job not authorized: run id already used (by job ", it->second.job_id,
                     "); starting over needs a new authorization from an admin"));
  }
  if (max_releases) {
    const uint64_t released = ReleasesLocked(table);
    if (released >= *max_releases) {
      return absl::PermissionDeniedError(
          absl::StrCat("party policy: table '", std::filesystem::path(table).filename().string(),
                       "' was released ", released, " times; the party allows at most ",
                       *max_releases, " (max_releases)"));
    }
  }
  runs_[run_id] = Run{job_id, table, State::kPrepared};
  absl::Status saved = Save();
  if (!saved.ok()) runs_.erase(run_id);
  return saved;
}

absl::Status RunLedger::MarkReleased(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, run] : runs_) {
    if (run.job_id != job_id || run.state != State::kPrepared) continue;
    run.state = State::kReleased;
    return Save();
  }
  return absl::OkStatus();
}

absl::Status RunLedger::Finish(const std::string& job_id, bool success) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, run] : runs_) {
    if (run.job_id != job_id) continue;
    if (run.state == State::kPrepared) {
      run.state = success ? State::kDone : State::kFailed;
    } else if (run.state == State::kReleased) {
      run.state = State::kDone;  // its rows are out: it stays a release
    } else {
      continue;
    }
    return Save();
  }
  return absl::OkStatus();
}

bool RunLedger::Used(const std::string& run_id) const {
  absl::MutexLock lock(&mu_);
  return runs_.count(run_id) > 0;
}

bool RunLedger::Continuable(const std::string& run_id, const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  return it != runs_.end() && it->second.job_id == job_id &&
         (it->second.state == State::kPrepared || it->second.state == State::kReleased);
}

uint64_t RunLedger::Releases(const std::string& table) const {
  absl::MutexLock lock(&mu_);
  return ReleasesLocked(table);
}

}  // namespace fedanon::party
