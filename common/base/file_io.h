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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::base {

// "<message>: <strerror(err)>" with the code above.
absl::Status ErrnoStatus(int err, std::string_view message);
// "<what> '<path>': <strerror(err)>", e.g. ErrnoStatus(errno, "cannot open", path).
absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path);

// Writes all of `data` to `fd`, retrying on EINTR and after short writes. `path` names the file
// in the error ("cannot write '<path>': ...").
absl::Status WriteAll(int fd, std::string_view data, std::string_view path);

// Flushes what was written to `fd` to stable storage: fdatasync when `data_only` (the file's
// size and contents), else fsync. "<what> '<path>': <strerror>" on failure, with `what` naming
// the operation ("cannot sync the state file").
absl::Status SyncFile(int fd, std::string_view what, std::string_view path, bool data_only);

// Test programs only (tests/support/test_main.cc calls it first thing): every disk sync of this
// process is skipped from then on — SyncFile, the atomic writer's file and directory syncs, and
// the leader's job store (SQLite `synchronous=OFF`). A test's crash or restart ends a process,
// never the machine, so what a restarted component reads is the same with or without them; what
// is given up is durability across a power loss, which no test observes. Daemons never call it.
void SkipDiskSyncsInThisProcess();
bool DiskSyncsSkipped();

// Reads a whole file ("cannot open '<path>': ..." / "cannot read '<path>': ..."). With
// `follow_symlinks` false a symbolic link at `path` is refused (O_NOFOLLOW).
absl::StatusOr<std::string> ReadFile(const std::string& path, bool follow_symlinks = true);

// Bounds of a read, so that a wrong or hostile input (/dev/zero, a dump, a FIFO that never ends)
// fails fast with a clear error instead of growing without limit.
struct ReadFileOptions {
  bool follow_symlinks = true;
  // More bytes than this: InvalidArgument "'<path>' is larger than the limit of N bytes for a
  // <what>", found while reading (a regular file's size is checked before), so FIFOs and
  // character devices are bounded too.
  uint64_t max_bytes = UINT64_MAX;
  // A physical line (bytes between two '\n') longer than this: InvalidArgument
  // "<path>:<line>: line longer than N bytes". 0: no bound.
  size_t max_line_bytes = 0;
  std::string_view what = "file";  // names the kind of file in the errors above
};
absl::StatusOr<std::string> ReadFile(const std::string& path, const ReadFileOptions& options);

// Reads a file piece by piece, each of at most `piece_bytes` (> 0), handing every piece to `sink`
// in order; memory stays at one piece whatever the file's size. Stops at the first error of
// `sink` and returns it. Errors as ReadFile's; `follow_symlinks` as there.
absl::Status ReadFileInPieces(const std::string& path, size_t piece_bytes, bool follow_symlinks,
                              const std::function<absl::Status(std::string_view)>& sink);

// Limits every reader shares (configurable where the reader says so).
inline constexpr uint64_t kMaxSpecBytes = uint64_t{16} << 20;          // 16 MiB
inline constexpr uint64_t kMaxTaxonomyBytes = uint64_t{64} << 20;      // 64 MiB
inline constexpr uint64_t kDefaultMaxTableBytes = uint64_t{64} << 30;  // 64 GiB
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;               // 1 MiB
inline constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;         // 1 MiB (daemon configs)

// Paths ---------------------------------------------------------------------------------------

// Resolves `path` against `base_dir` (an absolute `path` stays as it is), then resolves `..` and
// symbolic links (std::filesystem::weakly_canonical) and checks, component by component, that the
// result lies strictly inside `base_dir` (itself resolved). Returns the resolved path.
// PermissionDenied "'<path>' is outside the directory" when it does not (also for an empty
// `path` or one naming `base_dir` itself), NotFound when `base_dir` does not exist. The message
// never names `base_dir`, so that callers may forward it.
absl::StatusOr<std::string> ResolveInsideDirectory(const std::string& base_dir,
                                                   const std::string& path);

// Whether `a` and `b` name the same file: std::filesystem::equivalent when both exist, else equal
// after resolving `..` and symbolic links (weakly_canonical), so that "out.csv" and "./out.csv"
// match before either is written.
bool SameFile(const std::string& a, const std::string& b);

// One file a command reads or writes, named for errors: {"--input", "data/t.csv"}.
using NamedPath = std::pair<std::string, std::string>;
// Refuses (InvalidArgument "<output flag> '<path>' is the same file as <other flag>; refusing to
// overwrite it") when an output of a command names the same file as one it reads or as another
// of its outputs. Empty paths are skipped. Call it before anything is written.
absl::Status CheckDistinctOutputs(const std::vector<NamedPath>& outputs,
                                  const std::vector<NamedPath>& inputs);

// Job ids ---------------------------------------------------------------------------------------

// "^job-[0-9a-f]{12}$" (what the leader's job store issues): the only job ids ever used in a path
// (the leader's results, a recipient party's output directory). InvalidArgument otherwise, with
// the id C-escaped and cut to 64 bytes.
absl::Status ValidateJobId(std::string_view job_id);

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
  // Written behind in windows of this many bytes (0: never): once a window is complete the kernel
  // starts writing it out, and once the next one is too, the window before it is waited for and
  // dropped from the page cache (sync_file_range, POSIX_FADV_DONTNEED). A release of gigabytes
  // then neither piles up dirty pages nor makes the kernel evict other files (the job's input)
  // for its own, and the next windows reuse the pages just dropped instead of fresh ones (a
  // first touch is the dear part of a write on the project's virtual machines:
  // docs/performance.md). Below one window nothing is asked, below two nothing is waited for or
  // dropped. Commit() still fsyncs the whole file.
  uint64_t write_behind_bytes = uint64_t{8} << 20;
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
  // Starts writing out what has been written so far and returns without waiting
  // (sync_file_range), so that a caller with other work before Commit() overlaps the disk's part
  // of its fsync with that work. Advice: a file system without it is not an error.
  absl::Status StartWriteOut();
  // fsyncs what has been written, so that Commit() has only to move the file into place (it
  // fsyncs again only what was written after): two files synced at once from two threads cost
  // one wait for the disk, not two.
  absl::Status Sync();
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, int fd, AtomicFileOptions options);
  absl::Status Usable() const;  // FailedPrecondition once committed or failed
  absl::Status MoveIntoPlace();
  absl::Status WriteBehind();  // after each complete window (options_.write_behind_bytes)

  std::string path_;
  std::string temp_path_;
  int fd_;  // -1 once closed
  AtomicFileOptions options_;
  bool committed_ = false;
  bool failed_ = false;
  uint64_t written_ = 0;  // bytes appended
  uint64_t started_ = 0;  // bytes whose writing out was started
  uint64_t dropped_ = 0;  // bytes written out and dropped from the page cache
  uint64_t synced_ = 0;   // bytes on disk after Sync() (Commit() skips its fsync at written_)
  bool ever_synced_ = false;
};

// Open + Write + Commit of `contents` in one call.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 const AtomicFileOptions& options);

}  // namespace fedanon::base
