#include "party/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/file_io.h"
#include "common/base/json_string.h"
#include "common/base/status_macros.h"

namespace fedanon::party {

absl::StatusOr<std::string> AuditFilePath(const std::string& dir, const std::string& job_id) {
  RETURN_IF_ERROR(base::ValidateJobId(job_id));
  return (std::filesystem::path(dir) / absl::StrCat(job_id, ".audit.jsonl")).string();
}

std::string FormatAuditLine(const std::string& job_id, int64_t unix_nanos,
                            const AuditEntry& entry) {
  using base::AppendJsonString;
  std::string line = "{\"time\":";
  AppendJsonString(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(unix_nanos),
                                    absl::UTCTimeZone()),
                   line);
  line += ",\"job\":";
  AppendJsonString(job_id, line);
  absl::StrAppend(&line, ",\"round\":", entry.round, ",\"kind\":");
  AppendJsonString(entry.kind, line);
  line += ",\"form\":";
  AppendJsonString(entry.form, line);
  line += ",\"to\":[";
  for (size_t i = 0; i < entry.to.size(); ++i) {
    if (i > 0) line += ',';
    AppendJsonString(entry.to[i], line);
  }
  line += ']';
  for (const auto& [key, value] : entry.numbers) {
    line += ',';
    AppendJsonString(key, line);
    absl::StrAppend(&line, ":", value);
  }
  for (const auto& [key, value] : entry.texts) {
    line += ',';
    AppendJsonString(key, line);
    line += ':';
    AppendJsonString(value, line);
  }
  if (entry.has_counts) {
    line += ",\"counts\":[";
    for (size_t i = 0; i < entry.counts.size(); ++i) {
      if (i > 0) line += ',';
      absl::StrAppend(&line, entry.counts[i]);
    }
    line += ']';
  }
  line += "}\n";
  return line;
}

absl::Status AuditLog::Append(const std::string& job_id, const AuditEntry& entry) const {
  if (!enabled()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string path, AuditFilePath(dir_, job_id));
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                        base::kPrivateFileMode);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open the audit file", path);
  struct stat st {};
  absl::Status status = absl::OkStatus();
  if (::fstat(fd, &st) != 0) {
    status = base::ErrnoStatus(errno, "cannot stat the audit file", path);
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::FailedPreconditionError(
        absl::StrCat("the audit file '", path, "' is not a regular file"));
  } else if (st.st_size == 0 && ::fchmod(fd, base::kPrivateFileMode) != 0) {
    // Created now (or empty): exactly 0600 whatever the umask.
    status = base::ErrnoStatus(errno, "cannot set the mode of the audit file", path);
  } else if (st.st_size != 0 && (st.st_mode & 0777) != base::kPrivateFileMode) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "the audit file '", path, "' is readable by others than the party (mode is not 0600)"));
  }
  if (status.ok()) {
    status =
        base::WriteAll(fd, FormatAuditLine(job_id, absl::ToUnixNanos(absl::Now()), entry), path);
  }
  if (status.ok()) {
    status = base::SyncFile(fd, "cannot sync the audit file", path, /*data_only=*/true);
  }
  if (::close(fd) != 0 && status.ok()) {
    status = base::ErrnoStatus(errno, "cannot close the audit file", path);
  }
  return status;
}

bool AuditLog::Exists(const std::string& job_id) const {
  if (!enabled()) return false;
  absl::StatusOr<std::string> path = AuditFilePath(dir_, job_id);
  std::error_code ec;
  return path.ok() && std::filesystem::is_regular_file(std::filesystem::symlink_status(*path, ec));
}

absl::StatusOr<std::string> ReadAuditFile(const std::string& dir, const std::string& job_id) {
  ASSIGN_OR_RETURN(const std::string path, AuditFilePath(dir, job_id));
  return base::ReadFile(
      path,
      base::ReadFileOptions{.follow_symlinks = false, .max_line_bytes = 0, .what = "audit file"});
}

}  // namespace fedanon::party
