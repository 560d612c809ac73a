#include "party/job_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::party {
namespace {

// Version 2 (written since the push-down snapshot check): "FDJS2\n", one (u64 little-endian
// length, bytes) field, the snapshot fingerprint (empty for a job without push-down), then records:
// three such fields and the marker "\n". Version 1 ("FDJS1\n", no snapshot field, the same
// records) is still read: a journal of a party that ran an older build.
constexpr std::string_view kMagic = "FDJS2\n";
constexpr std::string_view kMagicV1 = "FDJS1\n";
// A state file holds at most one job's requests and replies; beyond this it is not ours.
constexpr uint64_t kMaxStateBytes = uint64_t{16} << 30;

void PutLength(std::string* out, uint64_t n) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

std::string Encode(const JournalRecord& r) {
  std::string out;
  out.reserve(24 + r.request.size() + r.reply.size() + r.extra.size() + 1);
  for (const std::string* field : {&r.request, &r.reply, &r.extra}) {
    PutLength(&out, field->size());
    out += *field;
  }
  out.push_back('\n');
  return out;
}

// Reads a length-prefixed field at `*pos`; false when the data ends first.
bool GetField(std::string_view data, size_t* pos, std::string* out) {
  if (data.size() - *pos < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) {
    n |= uint64_t{static_cast<unsigned char>(data[*pos + static_cast<size_t>(i)])} << (8 * i);
  }
  *pos += 8;
  if (n > data.size() - *pos) return false;
  out->assign(data.substr(*pos, n));
  *pos += n;
  return true;
}

absl::Status CheckPrivate(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return base::ErrnoStatus(errno, "cannot stat the state file", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the job state file '", path, "' is not a regular file"));
  }
  if ((st.st_mode & 0777) != base::kPrivateFileMode) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job state file '", path, "' is readable by others than the party (mode is not 0600)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> JobJournal::PathFor(const std::string& dir, const std::string& job_id) {
  RETURN_IF_ERROR(base::ValidateJobId(job_id));
  if (dir.empty()) return absl::FailedPreconditionError("the party keeps no durable job state");
  return (std::filesystem::path(dir) / absl::StrCat(job_id, ".state")).string();
}

absl::StatusOr<std::unique_ptr<JobJournal>> JobJournal::Start(const std::string& dir,
                                                              const std::string& job_id,
                                                              const JournalRecord& prepare,
                                                              std::string_view snapshot) {
  ASSIGN_OR_RETURN(const std::string path, PathFor(dir, job_id));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The first record is written atomically with the file (0600, never through a symlink).
  std::string contents(kMagic);
  PutLength(&contents, snapshot.size());
  contents += snapshot;
  contents += Encode(prepare);
  RETURN_IF_ERROR(base::WriteFileAtomically(path, contents, {.mode = base::kPrivateFileMode}));
  return Reopen(dir, job_id);
}

absl::StatusOr<std::unique_ptr<JobJournal>> JobJournal::Reopen(const std::string& dir,
                                                               const std::string& job_id) {
  ASSIGN_OR_RETURN(const std::string path, PathFor(dir, job_id));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open the job state file", path);
  if (absl::Status st = CheckPrivate(fd, path); !st.ok()) {
    ::close(fd);
    return st;
  }
  return std::unique_ptr<JobJournal>(new JobJournal(fd, path));
}

JobJournal::~JobJournal() { ::close(fd_); }

absl::Status JobJournal::Append(const JournalRecord& record) {
  RETURN_IF_ERROR(base::WriteAll(fd_, Encode(record), path_));
  return base::SyncFile(fd_, "cannot sync the state file", path_, /*data_only=*/true);
}

absl::StatusOr<std::vector<JournalRecord>> JobJournal::Read(const std::string& dir,
                                                            const std::string& job_id,
                                                            std::string* snapshot) {
  ASSIGN_OR_RETURN(const std::string path, PathFor(dir, job_id));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no state file ", path));
    return base::ErrnoStatus(errno, "cannot open the job state file", path);
  }
  const absl::Status private_file = CheckPrivate(fd, path);
  ::close(fd);
  RETURN_IF_ERROR(private_file);
  ASSIGN_OR_RETURN(const std::string data, base::ReadFile(path, {.follow_symlinks = false,
                                                                 .max_bytes = kMaxStateBytes,
                                                                 .what = "job state file"}));
  size_t pos = kMagic.size();
  std::string recorded_snapshot;
  if (std::string_view(data).starts_with(kMagic)) {
    if (!GetField(data, &pos, &recorded_snapshot)) {
      return absl::DataLossError(absl::StrCat("'", path, "' holds no snapshot field"));
    }
  } else if (!std::string_view(data).starts_with(kMagicV1)) {
    return absl::DataLossError(absl::StrCat("'", path, "' is not a job state file"));
  }
  std::vector<JournalRecord> records;
  while (pos < data.size()) {
    JournalRecord r;
    size_t at = pos;
    if (!GetField(data, &at, &r.request) || !GetField(data, &at, &r.reply) ||
        !GetField(data, &at, &r.extra) || at >= data.size() || data[at] != '\n') {
      break;  // cut short by a crash while appending: that reply never left
    }
    records.push_back(std::move(r));
    pos = at + 1;
  }
  if (records.empty()) return absl::DataLossError(absl::StrCat("'", path, "' holds no Prepare"));
  if (snapshot != nullptr) *snapshot = std::move(recorded_snapshot);
  return records;
}

bool JobJournal::Exists(const std::string& dir, const std::string& job_id) {
  absl::StatusOr<std::string> path = PathFor(dir, job_id);
  std::error_code ec;
  return path.ok() && std::filesystem::is_regular_file(std::filesystem::symlink_status(*path, ec));
}

absl::StatusOr<std::string> JobJournal::SpillDirFor(const std::string& dir,
                                                    const std::string& job_id) {
  ASSIGN_OR_RETURN(const std::string path, PathFor(dir, job_id));
  return path.substr(0, path.size() - std::string_view(".state").size()) + ".spill";
}

absl::Status JobJournal::Remove(const std::string& dir, const std::string& job_id) {
  ASSIGN_OR_RETURN(const std::string path, PathFor(dir, job_id));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return base::ErrnoStatus(errno, "cannot delete the job state file", path);
  }
  ASSIGN_OR_RETURN(const std::string spill, SpillDirFor(dir, job_id));
  std::error_code ec;
  std::filesystem::remove_all(spill, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot delete '", spill, "': ", ec.message()));
  return absl::OkStatus();
}

}  // namespace fedanon::party
