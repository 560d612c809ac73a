// The main of every GoogleTest program of the suite (instead of gtest_main): the tests run inside
// one private temporary directory that is removed, with everything in it, when the program ends.
// TEST_TMPDIR (GoogleTest's TempDir()) and TMPDIR (std::filesystem::temp_directory_path(), the
// daemons a test starts) both point there, so that no test, helper or child process leaves its
// files in /tmp (test runs once left 67,846 directories, 15 GB, there on a development machine).
// In-process components skip their disk syncs (base::SkipDiskSyncsInThisProcess): a test's
// crash ends a process, never the machine; the daemons a test starts still sync.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/base/file_io.h"

namespace {

constexpr char kOwnerVariable[] = "FEDANON_TEST_TMP_OWNER";

// Creates the directory unless a parent test process already did (a death test's child, a test
// program started by another test), and removes it only in the process that created it.
class PrivateTempDir {
 public:
  PrivateTempDir() {
    if (const char* owner = ::getenv(kOwnerVariable); owner != nullptr && *owner != '\0') return;
    const char* base = ::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fedanon-tests.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror(("cannot create " + pattern + "; tests use TMPDIR as it is").c_str());
      return;
    }
    // Traversable by others: the PostgreSQL tests run their server as `nobody` when run as root.
    ::chmod(pattern.c_str(), 0755);
    path_ = pattern;
    creator_ = ::getpid();
    ::setenv(kOwnerVariable, path_.c_str(), 1);
    ::setenv("TEST_TMPDIR", path_.c_str(), 1);
    ::setenv("TMPDIR", path_.c_str(), 1);
  }
  ~PrivateTempDir() {
    if (path_.empty() || ::getpid() != creator_) return;
    // A failed test's fixtures (the fault federation's daemons' logs, kits and data) say they
    // kept their directories; so they must outlive the run, as under FEDANON_KEEP_TEST_DIR.
    if (::testing::UnitTest::GetInstance()->Failed() ||
        ::getenv("FEDANON_KEEP_TEST_DIR") != nullptr) {
      std::fprintf(stderr, "kept %s\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec) std::fprintf(stderr, "cannot remove %s: %s\n", path_.c_str(), ec.message().c_str());
  }
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;

 private:
  std::string path_;
  pid_t creator_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  PrivateTempDir temp_dir;
  fedanon::base::SkipDiskSyncsInThisProcess();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
