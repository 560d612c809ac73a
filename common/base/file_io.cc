#include "common/base/file_io.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/escaping.h"
#include "common/base/string_views.h"

namespace fedanon::base {
namespace {

std::atomic<bool> disk_syncs_skipped{false};

// The directory holding `path` ("." for a bare file name).
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// fsyncs `dir`, so that a rename inside it survives a crash.
absl::Status SyncDirectory(const std::string& dir) {
  if (DiskSyncsSkipped()) return absl::OkStatus();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open directory", dir);
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  // EINVAL: a file system that cannot sync directories; the rename is all it offers.
  if (!synced && err != EINVAL) return ErrnoStatus(err, "cannot fsync directory", dir);
  return absl::OkStatus();
}

absl::Status AlreadyExists(const std::string& path) {
  return absl::AlreadyExistsError(Cat("'", path, "' already exists"));
}

}  // namespace

absl::Status ErrnoStatus(int err, std::string_view message) {
  const std::string text =
      Cat(message, ": ", std::error_code(err, std::generic_category()).message());
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(text);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path) {
  return ErrnoStatus(err, Cat(what, " '", path, "'"));
}

absl::Status WriteAll(int fd, std::string_view data, std::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status SyncFile(int fd, std::string_view what, std::string_view path, bool data_only) {
  if (DiskSyncsSkipped()) return absl::OkStatus();
  if ((data_only ? ::fdatasync(fd) : ::fsync(fd)) != 0) return ErrnoStatus(errno, what, path);
  return absl::OkStatus();
}

void SkipDiskSyncsInThisProcess() { disk_syncs_skipped.store(true, std::memory_order_relaxed); }

bool DiskSyncsSkipped() { return disk_syncs_skipped.load(std::memory_order_relaxed); }

absl::StatusOr<std::string> ReadFile(const std::string& path, bool follow_symlinks) {
  return ReadFile(path, ReadFileOptions{.follow_symlinks = follow_symlinks});
}

absl::StatusOr<std::string> ReadFile(const std::string& path, const ReadFileOptions& options) {
  auto too_large = [&] {
    return absl::InvalidArgumentError(Cat("'", path, "' is larger than the limit of ",
                                          options.max_bytes, " bytes for a ", options.what));
  };
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (options.follow_symlinks ? 0 : O_NOFOLLOW));
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  std::string content;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > options.max_bytes) {
      ::close(fd);
      return too_large();
    }
    content.resize(st.st_size);
  }
  size_t filled = 0;
  size_t line = 1;
  size_t line_start = 0;  // offset of the first byte of line `line`
  char chunk[1 << 16];
  for (;;) {
    // Fill the presized buffer first; past its end (or for pipes) read in chunks.
    const bool direct = filled < content.size();
    char* dest = direct ? content.data() + filled : chunk;
    const size_t room = direct ? content.size() - filled : sizeof(chunk);
    const ssize_t n = ::read(fd, dest, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "cannot read", path);
    }
    if (n == 0) break;
    if (static_cast<uint64_t>(filled) + static_cast<uint64_t>(n) > options.max_bytes) {
      ::close(fd);
      return too_large();
    }
    if (!direct) content.append(chunk, static_cast<size_t>(n));
    const size_t end = filled + static_cast<size_t>(n);
    if (options.max_line_bytes > 0) {
      for (const char* nl =
               static_cast<const char*>(std::memchr(content.data() + filled, '\n', end - filled));
           nl != nullptr; nl = static_cast<const char*>(
                              std::memchr(nl + 1, '\n', content.data() + end - (nl + 1)))) {
        const size_t at = static_cast<size_t>(nl - content.data());
        if (at - line_start > options.max_line_bytes) break;
        ++line;
        line_start = at + 1;
      }
      if (end - line_start > options.max_line_bytes) {
        ::close(fd);
        return absl::InvalidArgumentError(
            Cat(path, ":", line, ": line longer than ", options.max_line_bytes, " bytes"));
      }
    }
    filled = end;
  }
  ::close(fd);
  content.resize(filled);
  return content;
}

absl::Status ReadFileInPieces(const std::string& path, size_t piece_bytes, bool follow_symlinks,
                              const std::function<absl::Status(std::string_view)>& sink) {
  if (piece_bytes == 0) return absl::InvalidArgumentError("a read in pieces of 0 bytes");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (follow_symlinks ? 0 : O_NOFOLLOW));
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  std::string piece(piece_bytes, '\0');
  absl::Status status;
  size_t filled = 0;
  for (;;) {
    const ssize_t n = ::read(fd, piece.data() + filled, piece_bytes - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoStatus(errno, "cannot read", path);
      break;
    }
    filled += static_cast<size_t>(n);
    // A piece leaves when it is full or at the end of the file (short reads are filled up first).
    if (filled == piece_bytes || (n == 0 && filled > 0)) {
      status = sink(std::string_view(piece.data(), filled));
      filled = 0;
      if (!status.ok()) break;
    }
    if (n == 0) break;
  }
  ::close(fd);
  return status;
}

// ---------------------------------------------------------------------------------------------
// Paths and job ids

absl::StatusOr<std::string> ResolveInsideDirectory(const std::string& base_dir,
                                                   const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "cannot resolve the directory", base_dir);
  auto outside = [&] {
    return absl::PermissionDeniedError(Cat("'", path, "' is outside the directory"));
  };
  if (path.empty()) return outside();
  const fs::path resolved = fs::weakly_canonical(base / fs::path(path), ec);
  if (ec) return ErrnoStatus(ec.value(), "cannot resolve", path);
  // Strictly below `base`: every component of `base`, then at least one more.
  auto b = base.begin();
  auto r = resolved.begin();
  for (; b != base.end(); ++b, ++r) {
    if (r == resolved.end() || *r != *b) return outside();
  }
  if (r == resolved.end()) return outside();
  for (; r != resolved.end(); ++r) {
    if (*r == ".." || *r == ".") return outside();  // cannot happen after weakly_canonical
  }
  return resolved.string();
}

bool SameFile(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

absl::Status CheckDistinctOutputs(const std::vector<NamedPath>& outputs,
                                  const std::vector<NamedPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& flag = outputs[i].first;  // not a binding: the lambda below captures it
    const std::string& path = outputs[i].second;
    if (path.empty()) continue;
    auto clash = [&](std::string_view other) {
      return absl::InvalidArgumentError(
          Cat(flag, " '", path, "' is the same file as ", other, "; refusing to overwrite it"));
    };
    for (const auto& [in_flag, in_path] : inputs) {
      if (!in_path.empty() && SameFile(path, in_path)) return clash(in_flag);
    }
    for (size_t j = 0; j < i; ++j) {
      if (!outputs[j].second.empty() && SameFile(path, outputs[j].second)) {
        return clash(outputs[j].first);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateJobId(std::string_view job_id) {
  constexpr std::string_view kPrefix = "job-";
  bool ok = job_id.size() == kPrefix.size() + 12 && job_id.starts_with(kPrefix);
  for (size_t i = kPrefix.size(); ok && i < job_id.size(); ++i) {
    const char c = job_id[i];
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  if (ok) return absl::OkStatus();
  // Arbitrary bytes are never echoed verbatim.
  return absl::InvalidArgumentError(Cat("invalid job id \"",
                                        absl::CHexEscape(Av(job_id.substr(0, 64))),
                                        "\": expected job- followed by 12 lower-case hex digits"));
}

// ---------------------------------------------------------------------------------------------
// AtomicFileWriter

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(
    const std::string& path, AtomicFileOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("no file name given");
  struct stat st;
  if (!options.replace_existing && ::lstat(path.c_str(), &st) == 0) return AlreadyExists(path);
  std::string temp_path = path + ".tmp.XXXXXX";
  // O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600: never opens a file or symbolic link planted there.
  const int fd = ::mkostemp(temp_path.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return ErrnoStatus(errno, "cannot create a temporary file for", path);
  // From here on the destructor removes the temporary file.
  std::unique_ptr<AtomicFileWriter> writer(
      new AtomicFileWriter(path, std::move(temp_path), fd, options));
  if (::fchmod(fd, options.mode) != 0)
    return ErrnoStatus(errno, "cannot chmod", writer->temp_path_);
  return writer;
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string temp_path, int fd,
                                   AtomicFileOptions options)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), options_(options) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFileWriter::Usable() const {
  if (committed_) return absl::FailedPreconditionError(Cat("'", path_, "': already committed"));
  if (failed_) {
    return absl::FailedPreconditionError(Cat("'", path_, "': an earlier write or commit failed"));
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Write(std::string_view data) {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  absl::Status written = WriteAll(fd_, data, temp_path_);
  written_ += data.size();
  const uint64_t window = options_.write_behind_bytes;
  if (written.ok() && window > 0 && written_ - started_ >= window) written = WriteBehind();
  failed_ = !written.ok();
  return written;
}

absl::Status AtomicFileWriter::WriteBehind() {
  const uint64_t window = options_.write_behind_bytes;
  const uint64_t complete = written_ - written_ % window;
  if (::sync_file_range(fd_, static_cast<off_t>(started_), static_cast<off_t>(complete - started_),
                        SYNC_FILE_RANGE_WRITE) != 0) {
    // A file system without it (or a file that is not one): the kernel writes as it will.
    if (errno == EINVAL || errno == ESPIPE || errno == ENOSYS) {
      options_.write_behind_bytes = 0;
      return absl::OkStatus();
    }
    return ErrnoStatus(errno, "cannot write out", temp_path_);
  }
  started_ = complete;
  // Every window but the one just started: on disk, then out of the page cache.
  const uint64_t drop = complete - window;
  if (drop <= dropped_) return absl::OkStatus();
  if (::sync_file_range(
          fd_, static_cast<off_t>(dropped_), static_cast<off_t>(drop - dropped_),
          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
    return ErrnoStatus(errno, "cannot write out", temp_path_);
  }
  // Advice only: pages it keeps cost memory, not correctness.
  (void)::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(drop - dropped_),
                        POSIX_FADV_DONTNEED);
  dropped_ = drop;
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::StartWriteOut() {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  // Up to the end of the file (nbytes 0); the windows of WriteBehind are left as they were.
  if (written_ > started_ &&
      ::sync_file_range(fd_, static_cast<off_t>(started_), 0, SYNC_FILE_RANGE_WRITE) != 0 &&
      errno != EINVAL && errno != ESPIPE && errno != ENOSYS) {
    failed_ = true;
    return ErrnoStatus(errno, "cannot write out", temp_path_);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Sync() {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  if (absl::Status synced = SyncFile(fd_, "cannot fsync", temp_path_, /*data_only=*/false);
      !synced.ok()) {
    failed_ = true;
    return synced;
  }
  synced_ = written_;
  ever_synced_ = true;
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  failed_ = true;  // until the file is in place
  const int fd = std::exchange(fd_, -1);
  if (!(ever_synced_ && synced_ == written_)) {
    if (absl::Status synced = SyncFile(fd, "cannot fsync", temp_path_, /*data_only=*/false);
        !synced.ok()) {
      ::close(fd);
      return synced;
    }
  }
  if (::close(fd) != 0) return ErrnoStatus(errno, "cannot close", temp_path_);
  if (absl::Status moved = MoveIntoPlace(); !moved.ok()) return moved;
  failed_ = false;
  committed_ = true;
  return SyncDirectory(DirectoryOf(path_));
}

absl::Status AtomicFileWriter::MoveIntoPlace() {
  if (options_.replace_existing) {
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      return ErrnoStatus(errno, "cannot rename temporary file onto", path_);
    }
    return absl::OkStatus();
  }
  if (::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  if (errno == EEXIST) return AlreadyExists(path_);
  if (errno != EINVAL && errno != ENOSYS) {
    return ErrnoStatus(errno, "cannot rename temporary file onto", path_);
  }
  // A file system without RENAME_NOREPLACE: a hard link fails if the target exists.
  if (::link(temp_path_.c_str(), path_.c_str()) != 0) {
    if (errno == EEXIST) return AlreadyExists(path_);
    return ErrnoStatus(errno, "cannot link temporary file to", path_);
  }
  ::unlink(temp_path_.c_str());
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 const AtomicFileOptions& options) {
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> writer = AtomicFileWriter::Open(path, options);
  if (!writer.ok()) return writer.status();
  if (absl::Status written = (*writer)->Write(contents); !written.ok()) return written;
  return (*writer)->Commit();
}

}  // namespace fedanon::base
