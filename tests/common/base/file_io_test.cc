#include "common/base/file_io.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::common {
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

}  // namespace
}  // namespace fedanon::common
