// Files, once for the whole code base: errno values as absl::Status, reading a whole file, a
// write that survives EINTR and short writes, and atomic file output (a temporary file in the
// same directory, written, fsynced, renamed onto the target, the directory fsynced), so that a
// reader sees either the old file or the complete new one, and a failure leaves no partial file.
//
// Messages name the operation and the path: "cannot open 'data/t.csv': No such file or
// directory". Codes: NotFound (ENOENT, ENOTDIR), PermissionDenied (EACCES, EPERM, EROFS),
// Internal for every other errno; so a file error never reads as FailedPrecondition or
// AlreadyExists, which callers use for other meanings.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::common {

// "<message>: <strerror(err)>" with the code above.
absl::Status ErrnoStatus(int err, std::string_view message);
// "<what> '<path>': <strerror(err)>", e.g. ErrnoStatus(errno, "cannot open", path).
absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path);

// Writes all of `data` to `fd`, retrying on EINTR and after short writes. `path` names the file
// in the error ("cannot write '<path>': ...").
absl::Status WriteAll(int fd, std::string_view data, std::string_view path);

// Reads a whole file ("cannot open '<path>': ..." / "cannot read '<path>': ..."). With
// `follow_symlinks` false a symbolic link at `path` is refused (O_NOFOLLOW).
absl::StatusOr<std::string> ReadFile(const std::string& path, bool follow_symlinks = true);

inline constexpr mode_t kPrivateFileMode = 0600;  // keys, job results: the owner only
inline constexpr mode_t kSharedFileMode = 0644;   // tables, reports, certificates, configs

struct AtomicFileOptions {
  // The mode of the new file, set exactly (fchmod: the umask does not apply). Private unless the
  // caller says otherwise.
  mode_t mode = kPrivateFileMode;
  // What happens to an existing file at the path. true: Commit() replaces it (rename(2)), so a
  // job run again overwrites its earlier output. false: Open() fails with AlreadyExists if the
  // path exists, and Commit() never replaces a file that appeared meanwhile (renameat2 with
  // RENAME_NOREPLACE, or link(2) where the file system lacks it): AlreadyExists again.
  bool replace_existing = true;
};

// Writes one file atomically: Open() creates `<path>.tmp.XXXXXX` beside the target, Write()
// appends to it (unbuffered; callers buffer), Commit() fsyncs and closes it, moves it onto
// `path` and fsyncs the directory. Destroyed before a successful Commit(), it removes the
// temporary file and leaves `path` as it was. Errors name the path ("cannot create a temporary
// file for 'out/t.csv': No such file or directory"). Not thread-safe.
class AtomicFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                                AtomicFileOptions options = {});
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // After a failed Write() or Commit() the writer only refuses (FailedPrecondition), so that a
  // partial file is never committed; so does a second Commit().
  absl::Status Write(std::string_view data);
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, int fd, AtomicFileOptions options);
  absl::Status Usable() const;  // FailedPrecondition once committed or failed
  absl::Status MoveIntoPlace();

  std::string path_;
  std::string temp_path_;
  int fd_;  // -1 once closed
  AtomicFileOptions options_;
  bool committed_ = false;
  bool failed_ = false;
};

// Open + Write + Commit of `contents` in one call.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 const AtomicFileOptions& options);

}  // namespace fedanon::common
