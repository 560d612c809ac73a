#include "common/base/file_io.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::base {
namespace {

using ::fedanon::testing::StatusIs;
using ::fedanon::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

TEST(ErrnoStatusTest, NamesTheOperationThePathAndTheReason) {
  EXPECT_THAT(
      ErrnoStatus(ENOENT, "cannot open", "a/b.csv"),
      StatusIs(absl::StatusCode::kNotFound, "cannot open 'a/b.csv': No such file or directory"));
  EXPECT_THAT(ErrnoStatus(EACCES, "cannot read x"),
              StatusIs(absl::StatusCode::kPermissionDenied, "cannot read x: Permission denied"));
}

TEST(ErrnoStatusTest, FileErrorsNeverLookLikeOtherMeanings) {
  EXPECT_EQ(ErrnoStatus(ENOTDIR, "m").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoStatus(EPERM, "m").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoStatus(EROFS, "m").code(), absl::StatusCode::kPermissionDenied);
  // FailedPrecondition and AlreadyExists have other meanings for the callers.
  for (int err : {EEXIST, EISDIR, ENOSPC, EIO, EINVAL}) {
    EXPECT_EQ(ErrnoStatus(err, "m").code(), absl::StatusCode::kInternal) << err;
  }
}

TEST(WriteAllTest, WritesEverythingAndNamesThePathOnError) {
  TempDir dir;
  const std::string path = dir.File("f");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string data(5 << 20, 'd');
  ASSERT_OK(WriteAll(fd, data, path));
  ::close(fd);
  EXPECT_EQ(*ReadFile(path), data);
  EXPECT_THAT(WriteAll(-1, "x", "nowhere"), StatusIs(absl::StatusCode::kInternal, "'nowhere'"));
}

TEST(ReadFileTest, ErrorsNameThePath) {
  TempDir dir;
  EXPECT_THAT(ReadFile(dir.File("missing.txt")),
              StatusIs(absl::StatusCode::kNotFound, "cannot open '" + dir.File("missing.txt")));
  // A directory opens but cannot be read.
  EXPECT_THAT(ReadFile(dir.File("")), StatusIs(absl::StatusCode::kInternal, "cannot read"));
}

TEST(ReadFileTest, RefusesSymlinksWhenAsked) {
  TempDir dir;
  ASSERT_OK(WriteFileAtomically(dir.File("target"), "secret", {}));
  ASSERT_EQ(::symlink(dir.File("target").c_str(), dir.File("link").c_str()), 0);
  EXPECT_EQ(*ReadFile(dir.File("link")), "secret");
  EXPECT_THAT(ReadFile(dir.File("link"), /*follow_symlinks=*/false),
              StatusIs(absl::StatusCode::kInternal, "'" + dir.File("link") + "'"));
}

// A file read in pieces: every piece full but the last, in order, the same bytes as ReadFile;
// an empty file gives no piece; the sink's error stops the read and is returned.
TEST(ReadFileInPiecesTest, HandsFullPiecesInOrderAndStopsAtTheSinksError) {
  TempDir dir;
  std::string content(2500, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
  ASSERT_OK(WriteFileAtomically(dir.File("t.csv"), content, {}));
  std::vector<size_t> sizes;
  std::string back;
  ASSERT_OK(ReadFileInPieces(dir.File("t.csv"), 1000, true, [&](std::string_view piece) {
    sizes.push_back(piece.size());
    back.append(piece);
    return absl::OkStatus();
  }));
  EXPECT_THAT(sizes, ElementsAre(1000, 1000, 500));
  EXPECT_EQ(back, content);

  ASSERT_OK(WriteFileAtomically(dir.File("empty"), "", {}));
  sizes.clear();
  ASSERT_OK(ReadFileInPieces(dir.File("empty"), 1000, true, [&](std::string_view piece) {
    sizes.push_back(piece.size());
    return absl::OkStatus();
  }));
  EXPECT_THAT(sizes, IsEmpty());

  int calls = 0;
  EXPECT_THAT(ReadFileInPieces(dir.File("t.csv"), 1000, true,
                               [&](std::string_view) {
                                 ++calls;
                                 return absl::CancelledError("the reader went away");
                               }),
              StatusIs(absl::StatusCode::kCancelled, "the reader went away"));
  EXPECT_EQ(calls, 1);
}

TEST(ReadFileInPiecesTest, ErrorsAsReadFileAndSymlinksRefusedWhenAsked) {
  TempDir dir;
  const auto ignore = [](std::string_view) { return absl::OkStatus(); };
  EXPECT_THAT(ReadFileInPieces(dir.File("missing"), 10, true, ignore),
              StatusIs(absl::StatusCode::kNotFound, "cannot open '" + dir.File("missing")));
  ASSERT_OK(WriteFileAtomically(dir.File("target"), "secret", {}));
  ASSERT_EQ(::symlink(dir.File("target").c_str(), dir.File("link").c_str()), 0);
  EXPECT_OK(ReadFileInPieces(dir.File("link"), 10, true, ignore));
  EXPECT_THAT(ReadFileInPieces(dir.File("link"), 10, false, ignore),
              StatusIs(absl::StatusCode::kInternal, "'" + dir.File("link") + "'"));
  EXPECT_THAT(ReadFileInPieces(dir.File("target"), 0, true, ignore),
              StatusIs(absl::StatusCode::kInvalidArgument, "0 bytes"));
}

TEST(AtomicFileWriterTest, CommitPutsTheFileInPlaceWithTheMode) {
  TempDir dir;
  const std::string path = dir.File("out.txt");
  ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(path));
  EXPECT_THAT(writer->temp_path(), StartsWith(path + ".tmp."));
  ASSERT_OK(writer->Write("hello "));
  ASSERT_OK(writer->Write("world"));
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing visible before Commit()
  ASSERT_OK(writer->Commit());
  EXPECT_EQ(*ReadFile(path), "hello world");
  EXPECT_EQ(ModeOf(path), kPrivateFileMode);  // private by default
  EXPECT_THAT(dir.List(), ElementsAre("out.txt"));

  ASSERT_OK(WriteFileAtomically(dir.File("shared.txt"), "x", {.mode = kSharedFileMode}));
  EXPECT_EQ(ModeOf(dir.File("shared.txt")), kSharedFileMode);
}

// How many of the pages of [offset, offset + length) of the file at `path` are in the page cache
// (mincore over a mapping of them); -1 when they cannot be mapped.
long ResidentPages(const std::string& path, size_t offset, size_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((length + page - 1) / page);
  long resident = -1;
  if (::mincore(map, length, in.data()) == 0) {
    resident = 0;
    for (unsigned char c : in) resident += c & 1;
  }
  ::munmap(map, length);
  return resident;
}

TEST(AtomicFileWriterTest, LargeFilesAreWrittenBehindAndLeaveThePageCache) {
  TempDir dir;
  const std::string path = dir.File("big.csv");
  constexpr uint64_t kWindow = 1 << 20;
  ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(path, {.write_behind_bytes = kWindow}));
  std::string expected;
  // 5.5 windows in pieces that straddle the windows' ends.
  for (int i = 0; expected.size() < 5 * kWindow + kWindow / 2; ++i) {
    std::string piece(100'003, static_cast<char>('a' + i % 26));
    piece.back() = '\n';
    ASSERT_OK(writer->Write(piece));
    expected += piece;
  }
  // Windows 0-4 are complete: 0-3 were written out and dropped, 4 only started, 5 is being filled.
  struct statfs fs {};
  ASSERT_EQ(::statfs(writer->temp_path().c_str(), &fs), 0);
  const long dropped = ResidentPages(writer->temp_path(), 0, 4 * kWindow);
  const long kept = ResidentPages(writer->temp_path(), 4 * kWindow, kWindow);
  ASSERT_OK(writer->Commit());
  EXPECT_EQ(*ReadFile(path), expected);
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
    GTEST_SKIP() << "the temporary directory is in memory: its pages never leave";
  }
  ASSERT_GE(dropped, 0);
  EXPECT_EQ(dropped, 0) << "pages of the windows written out stayed in the page cache";
  EXPECT_GT(kept, 0) << "the window being written was not in the page cache at all";
}

TEST(AtomicFileWriterTest, WriteBehindOffOrSmallFilesStayInThePageCache) {
  TempDir dir;
  for (const uint64_t window : {uint64_t{0}, uint64_t{4} << 20}) {
    const std::string path = dir.File(absl::StrCat("f", window));
    ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(path, {.write_behind_bytes = window}));
    const std::string data(3 << 20, 'x');
    ASSERT_OK(writer->Write(data));
    // All of it (but for what reclaim under a test run's load may take): nothing was dropped, where
    // windows of 1 MiB would have dropped a third.
    const auto pages =
        static_cast<long>(data.size() / static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
    EXPECT_GE(ResidentPages(writer->temp_path(), 0, data.size()), pages * 9 / 10)
        << "window " << window;
    ASSERT_OK(writer->Commit());
    EXPECT_EQ(*ReadFile(path), data);
  }
}

TEST(AtomicFileWriterTest, ModeIsExactWhateverTheUmask) {
  TempDir dir;
  const mode_t old_mask = ::umask(0077);
  const absl::Status written = WriteFileAtomically(dir.File("f"), "x", {.mode = 0644});
  ::umask(old_mask);
  ASSERT_OK(written);
  EXPECT_EQ(ModeOf(dir.File("f")), 0644u);
}

TEST(AtomicFileWriterTest, AbandonedWriterLeavesNothing) {
  TempDir dir;
  ASSERT_OK(WriteFileAtomically(dir.File("keep"), "old", {}));
  {
    ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(dir.File("keep")));
    ASSERT_OK(writer->Write("new"));
    EXPECT_EQ(dir.List().size(), 2u);
  }
  EXPECT_THAT(dir.List(), ElementsAre("keep"));
  EXPECT_EQ(*ReadFile(dir.File("keep")), "old");
}

TEST(AtomicFileWriterTest, ReplacesByDefault) {
  TempDir dir;
  const std::string path = dir.File("f");
  ASSERT_OK(WriteFileAtomically(path, "first", {}));
  ASSERT_OK(WriteFileAtomically(path, "second", {}));
  EXPECT_EQ(*ReadFile(path), "second");
  EXPECT_THAT(dir.List(), ElementsAre("f"));
}

TEST(AtomicFileWriterTest, WithoutReplaceAnExistingFileIsKept) {
  TempDir dir;
  const std::string path = dir.File("f");
  ASSERT_OK(WriteFileAtomically(path, "first", {}));
  EXPECT_THAT(AtomicFileWriter::Open(path, {.replace_existing = false}),
              StatusIs(absl::StatusCode::kAlreadyExists, "'" + path + "' already exists"));
  // A file that appears between Open() and Commit() is not replaced either.
  const std::string late = dir.File("late");
  ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(late, {.replace_existing = false}));
  ASSERT_OK(writer->Write("mine"));
  ASSERT_OK(WriteFileAtomically(late, "theirs", {}));
  EXPECT_THAT(writer->Commit(), StatusIs(absl::StatusCode::kAlreadyExists, "already exists"));
  writer.reset();
  EXPECT_EQ(*ReadFile(late), "theirs");
  EXPECT_THAT(dir.List(), ElementsAre("f", "late"));
  // And a new path is written.
  ASSERT_OK(WriteFileAtomically(dir.File("new"), "n", {.replace_existing = false}));
  EXPECT_EQ(*ReadFile(dir.File("new")), "n");
}

TEST(AtomicFileWriterTest, SecondCommitAndLateWritesFail) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(dir.File("f")));
  ASSERT_OK(writer->Commit());
  EXPECT_THAT(writer->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition, "committed"));
  EXPECT_THAT(writer->Write("x"), StatusIs(absl::StatusCode::kFailedPrecondition, "committed"));
  EXPECT_EQ(*ReadFile(dir.File("f")), "");
}

TEST(AtomicFileWriterTest, SyncAndStartWriteOutLeaveCommitToPutTheWholeFileInPlace) {
  TempDir dir;
  const std::string path = dir.File("table.csv");
  ASSERT_OK_AND_ASSIGN(auto writer, AtomicFileWriter::Open(path));
  ASSERT_OK(writer->Write("a,b\n"));
  ASSERT_OK(writer->StartWriteOut());
  ASSERT_OK(writer->Sync());
  EXPECT_FALSE(std::filesystem::exists(path));  // synced is not committed
  // Written after the Sync: Commit() writes and syncs it with the rest.
  ASSERT_OK(writer->Write("1,2\n"));
  ASSERT_OK(writer->StartWriteOut());
  ASSERT_OK(writer->Commit());
  EXPECT_EQ(*ReadFile(path), "a,b\n1,2\n");
  EXPECT_THAT(dir.List(), ElementsAre("table.csv"));
  // Once committed, both refuse as Write does.
  EXPECT_EQ(writer->Sync().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(writer->StartWriteOut().code(), absl::StatusCode::kFailedPrecondition);
  // Synced and abandoned: nothing is left.
  {
    ASSERT_OK_AND_ASSIGN(auto abandoned, AtomicFileWriter::Open(dir.File("gone.csv")));
    ASSERT_OK(abandoned->Write("x\n"));
    ASSERT_OK(abandoned->Sync());
  }
  EXPECT_THAT(dir.List(), ElementsAre("table.csv"));
}

TEST(AtomicFileWriterTest, ErrorsNameThePath) {
  TempDir dir;
  const std::string path = dir.File("no/such/dir/out.csv");
  EXPECT_THAT(
      AtomicFileWriter::Open(path),
      StatusIs(absl::StatusCode::kNotFound, "cannot create a temporary file for '" + path + "'"));
  EXPECT_THAT(WriteFileAtomically(dir.File("no/dir/x"), "x", {}),
              StatusIs(absl::StatusCode::kNotFound, "no/dir/x"));
  EXPECT_THAT(AtomicFileWriter::Open(""), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  // Renaming onto a directory fails at Commit(); the directory and nothing else remains.
  std::filesystem::create_directory(dir.File("d"));
  EXPECT_THAT(WriteFileAtomically(dir.File("d"), "x", {}),
              StatusIs(absl::StatusCode::kInternal, "'" + dir.File("d") + "'"));
  EXPECT_THAT(dir.List(), ElementsAre("d"));
  EXPECT_TRUE(std::filesystem::is_directory(dir.File("d")));
}

TEST(AtomicFileWriterTest, BareFileNameIsWrittenInTheWorkingDirectory) {
  TempDir dir;
  const std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir.File(""));
  const absl::Status written = WriteFileAtomically("bare.txt", "b", {});
  std::filesystem::current_path(old);
  ASSERT_OK(written);
  EXPECT_EQ(*ReadFile(dir.File("bare.txt")), "b");
}

// Bounded reads: a regular file larger than the limit is refused before it is read; a device or
// FIFO that never ends (/dev/zero) is refused once the limit is passed, not grown without bound.
TEST(ReadFileTest, SizeLimitIsEnforcedForFilesAndEndlessDevices) {
  TempDir dir;
  const std::string path = dir.File("big");
  ASSERT_OK(WriteFileAtomically(path, std::string(1000, 'x'), {}));
  EXPECT_THAT(ReadFile(path, ReadFileOptions{.max_bytes = 999, .what = "table"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'" + path + "' is larger than the limit of 999 bytes for a table"));
  EXPECT_EQ(ReadFile(path, ReadFileOptions{.max_bytes = 1000})->size(), 1000u);
  EXPECT_THAT(ReadFile("/dev/zero", ReadFileOptions{.max_bytes = 1 << 20, .what = "taxonomy"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'/dev/zero' is larger than the limit of 1048576 bytes for a taxonomy"));
}

TEST(ReadFileTest, OverlongLineIsAnErrorWithItsLineNumber) {
  TempDir dir;
  const std::string path = dir.File("lines");
  ASSERT_OK(WriteFileAtomically(path, "ab\ncd\n" + std::string(11, 'y') + "\nz\n", {}));
  EXPECT_THAT(ReadFile(path, ReadFileOptions{.max_line_bytes = 10}),
              StatusIs(absl::StatusCode::kInvalidArgument, path + ":3: line longer than 10 bytes"));
  EXPECT_OK(ReadFile(path, ReadFileOptions{.max_line_bytes = 11}).status());
  // A final line without a newline counts too; /dev/zero fails after the first line's bound.
  ASSERT_OK(WriteFileAtomically(path, "ab\n" + std::string(11, 'y'), {}));
  EXPECT_THAT(ReadFile(path, ReadFileOptions{.max_line_bytes = 10}),
              StatusIs(absl::StatusCode::kInvalidArgument, path + ":2: line longer"));
  EXPECT_THAT(ReadFile("/dev/zero", ReadFileOptions{.max_line_bytes = 1 << 20}),
              StatusIs(absl::StatusCode::kInvalidArgument, "/dev/zero:1: line longer than"));
}

TEST(ResolveInsideDirectoryTest, AcceptsPathsInsideAndRefusesEscapes) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.File("data/sub"));
  fs::create_directories(dir.File("other"));
  ASSERT_OK(WriteFileAtomically(dir.File("data/sub/t.csv"), "x", {}));
  ASSERT_OK(WriteFileAtomically(dir.File("other/tls.key"), "secret", {}));
  const std::string data = dir.File("data");
  const std::string canonical_data = fs::canonical(data).string();
  EXPECT_EQ(*ResolveInsideDirectory(data, "sub/t.csv"), canonical_data + "/sub/t.csv");
  EXPECT_EQ(*ResolveInsideDirectory(data, "sub/../sub/./t.csv"), canonical_data + "/sub/t.csv");
  EXPECT_EQ(*ResolveInsideDirectory(data, "not-yet.csv"), canonical_data + "/not-yet.csv");
  EXPECT_EQ(*ResolveInsideDirectory(data, canonical_data + "/sub/t.csv"),
            canonical_data + "/sub/t.csv");
  for (const std::string bad : {"/etc/passwd", "../other/tls.key", "sub/../../other/tls.key", "..",
                                ".", "", "sub/../..", "nonexistent/../../other/tls.key"}) {
    EXPECT_THAT(ResolveInsideDirectory(data, bad),
                StatusIs(absl::StatusCode::kPermissionDenied, "is outside the directory"))
        << bad;
  }
  // A prefix of the name is not a parent: data-evil is not inside data.
  fs::create_directories(dir.File("data-evil"));
  EXPECT_THAT(ResolveInsideDirectory(data, "../data-evil/x"),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  // Symbolic links are resolved before the check: a link inside pointing outside is refused, a
  // link inside pointing inside is fine.
  fs::create_symlink(dir.File("other/tls.key"), dir.File("data/key-link"));
  fs::create_directory_symlink(dir.File("other"), dir.File("data/dir-link"));
  fs::create_symlink(dir.File("data/sub/t.csv"), dir.File("data/good-link"));
  EXPECT_THAT(ResolveInsideDirectory(data, "key-link"),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(ResolveInsideDirectory(data, "dir-link/tls.key"),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_EQ(*ResolveInsideDirectory(data, "good-link"), canonical_data + "/sub/t.csv");
  // The message never names the base directory (it may travel to another machine).
  const absl::Status refused = ResolveInsideDirectory(data, "/etc/passwd").status();
  EXPECT_THAT(std::string(refused.message()), ::testing::Not(::testing::HasSubstr(data)));
  EXPECT_THAT(ResolveInsideDirectory(dir.File("missing"), "x"),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST(SameFileTest, ComparesExistingFilesByIdentityAndNewOnesByResolvedPath) {
  TempDir dir;
  ASSERT_OK(WriteFileAtomically(dir.File("a.csv"), "a", {}));
  std::filesystem::create_symlink(dir.File("a.csv"), dir.File("link.csv"));
  ASSERT_EQ(::link(dir.File("a.csv").c_str(), dir.File("hard.csv").c_str()), 0);
  EXPECT_TRUE(SameFile(dir.File("a.csv"), dir.File("./a.csv")));
  EXPECT_TRUE(SameFile(dir.File("a.csv"), dir.File("link.csv")));
  EXPECT_TRUE(SameFile(dir.File("a.csv"), dir.File("hard.csv")));
  EXPECT_TRUE(SameFile(dir.File("new.csv"), dir.File("x/../new.csv")));
  EXPECT_FALSE(SameFile(dir.File("a.csv"), dir.File("new.csv")));
  EXPECT_THAT(CheckDistinctOutputs({{"--output", dir.File("link.csv")}, {"--report", ""}},
                                   {{"--input", dir.File("a.csv")}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--output '" + dir.File("link.csv") +
                           "' is the same file as --input; refusing to overwrite it"));
  EXPECT_OK(CheckDistinctOutputs({{"--output", dir.File("o.csv")}, {"--report", dir.File("r")}},
                                 {{"--input", dir.File("a.csv")}}));
  EXPECT_THAT(CheckDistinctOutputs(
                  {{"--output", dir.File("o.csv")}, {"--report", dir.File("./o.csv")}}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "is the same file as --output"));
}

TEST(ValidateJobIdTest, OnlyTheStoresFormIsAccepted) {
  EXPECT_OK(ValidateJobId("job-0123456789ab"));
  for (const std::string bad :
       {"", "../x", "job-../../etc", "job-0123456789AB", "job-0123456789a/", "job-0123456789abc"}) {
    EXPECT_THAT(ValidateJobId(bad), StatusIs(absl::StatusCode::kInvalidArgument, "invalid job id"))
        << bad;
  }
}

// A symbolic link planted at the destination is replaced (rename), never written through.
TEST(AtomicFileWriterTest, PlantedSymlinkAtTheDestinationIsReplacedNotFollowed) {
  TempDir dir;
  ASSERT_OK(WriteFileAtomically(dir.File("victim"), "precious", {}));
  std::filesystem::create_symlink(dir.File("victim"), dir.File("out.csv"));
  ASSERT_OK(WriteFileAtomically(dir.File("out.csv"), "new", {}));
  EXPECT_EQ(*ReadFile(dir.File("victim")), "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(dir.File("out.csv")));
  EXPECT_EQ(*ReadFile(dir.File("out.csv")), "new");
  EXPECT_EQ(ModeOf(dir.File("out.csv")), 0600u);
}

}  // namespace
}  // namespace fedanon::base
