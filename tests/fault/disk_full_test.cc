// A full disk at the leader and at a party (issue #47): each daemon's directory on a small tmpfs
// of the test's own, filled at a chosen moment of a job (before it is submitted, while it runs,
// when its table is about to be stored), then freed. Each time the job fails naming what could
// not be written and why, nothing is left half-written (no result, no temporary file, the job
// store opens after a restart and still serves an earlier job's table), the daemon keeps serving
// (health, other admin calls), and the next job is done with the centralized table once there is
// space again.
//
// A full disk needs a filesystem of the test's own: a tmpfs mounted over the daemon's directory
// (root, as on CI). Where it cannot mount one, the test fails and says why; it never skips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/fault/fault_federation.h"
#include "tests/support/fault_scenario.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using fedanon::v1::JOB_STATE_DONE;
using fedanon::v1::JOB_STATE_FAILED;
using fedanon::v1::JobInfo;
using ::testing::HasSubstr;

constexpr uint32_t kRoundTimeoutSeconds = 10;
// How a full disk is named: by the kernel's words (a file the daemon writes) or SQLite's (the
// leader's job store).
::testing::Matcher<std::string> NamesAFullDisk() {
  return ::testing::AnyOf(HasSubstr("No space left on device"), HasSubstr("disk is full"));
}
// Room for the daemon's files of a few 300-row jobs (the job store, view logs, audit files,
// state files, results: a few hundred KiB), and small enough to fill in a moment.
constexpr size_t kDiskBytes = 8 << 20;

// Mounts a tmpfs of `bytes` over `dir`, keeping what `dir` held (copied onto it).
absl::Status MountSmallDisk(const std::string& dir, size_t bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string saved = dir + ".before-mount";
  fs::rename(dir, saved, ec);
  if (ec) return absl::InternalError("cannot move " + dir + " aside: " + ec.message());
  fs::create_directories(dir, ec);
  const std::string options = absl::StrCat("size=", bytes, ",mode=0700");
  if (::mount("fedanon-disk-full-test", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot mount a tmpfs over ", dir, " (", std::strerror(errno),
        "): the disk-full tests need a filesystem of their own, so they run as root (as on CI)"));
  }
  fs::copy(saved, dir, fs::copy_options::recursive, ec);
  if (ec) return absl::InternalError("cannot copy " + saved + " onto the tmpfs: " + ec.message());
  fs::remove_all(saved, ec);
  return absl::OkStatus();
}

class DiskFullTest : public FaultScenarioTest {
 protected:
  void SetUp() override {
    SkipUnlessBuiltThenDrawSeed({"fedanon", "fedanon-leader", "fedanon-party"});
  }
  // The daemons first (kill -9), then their disks (what they held is copied beside them when the
  // test failed, since the harness keeps a failed test's directory), then the federation.
  void TearDown() override {
    if (fed_ != nullptr) {
      for (size_t i = 0; i < fed_->parties().size(); ++i) fed_->KillParty(static_cast<int>(i));
      fed_->KillLeader();
    }
    for (const std::string& dir : mounted_) {
      if (HasFailure()) {
        std::error_code ec;
        fs::copy(dir, dir + ".on-its-disk", fs::copy_options::recursive, ec);
      }
      ::umount2(dir.c_str(), MNT_DETACH);
    }
    fed_.reset();
  }

  // The federation with the leader's data directory and every party's output directory (state
  // files, audit files, runs ledger) each on a small disk.
  void StartOnSmallDisks() {
    FaultFederationOptions options;
    options.before_daemons = [this](const FaultFederation& fed) -> absl::Status {
      std::vector<std::string> dirs = {fed.leader_data_dir()};
      for (size_t i = 0; i < fed.parties().size(); ++i) {
        dirs.push_back(fed.party_output_dir(static_cast<int>(i)));
      }
      for (const std::string& dir : dirs) {
        if (absl::Status st = MountSmallDisk(dir, kDiskBytes); !st.ok()) return st;
        mounted_.push_back(dir);
      }
      return absl::OkStatus();
    };
    StartFederation(options);
  }

  // Fills the disk of `dir` to the last byte (a file grown until ENOSPC); Free deletes it.
  static void Fill(const std::string& dir) {
    std::ofstream filler(dir + "/filler", std::ios::binary);
    const std::string block(64 << 10, 'f');
    size_t written = 0;
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size()))) {
      filler.flush();
      if (!filler) break;
      written += block.size();
      ASSERT_LT(written, 2 * kDiskBytes) << dir << " does not fill up";
    }
    filler.clear();
    filler.close();
    // What a block write could not place, byte by byte (tmpfs counts in pages: a few bytes).
    std::ofstream tail(dir + "/filler-tail", std::ios::binary);
    for (int i = 0; i < (64 << 10) && tail.put('f') && tail.flush(); ++i) {
    }
  }
  // Fills the disk of `dir` but for about `room` bytes.
  static void FillAllBut(const std::string& dir, size_t room) {
    struct statvfs fs_info {};
    ASSERT_EQ(::statvfs(dir.c_str(), &fs_info), 0) << dir;
    const size_t free_bytes = static_cast<size_t>(fs_info.f_bavail) * fs_info.f_frsize;
    ASSERT_GT(free_bytes, room) << dir;
    std::ofstream filler(dir + "/filler", std::ios::binary);
    const std::string block(free_bytes - room, 'f');
    ASSERT_TRUE(filler.write(block.data(), static_cast<std::streamsize>(block.size())).flush())
        << dir;
  }
  static void Free(const std::string& dir) {
    fs::remove(dir + "/filler");
    fs::remove(dir + "/filler-tail");
  }

  // A job submitted now, done with the centralized table; its id.
  std::string CleanJob() {
    absl::StatusOr<std::string> id = fed_->Submit({}, kRoundTimeoutSeconds);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return "";
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*id, kJobBound);
    EXPECT_TRUE(end.ok()) << end.status();
    if (!end.ok()) return *id;
    EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
    if (end->state() == JOB_STATE_DONE) ExpectReleasedOnceAsCentralized(*id);
    return *id;
  }

  // A clean job before the disk fills: its id and its released table, which the leader must
  // still serve afterwards.
  void FirstJob(std::string* id, std::string* table) {
    *id = CleanJob();
    absl::StatusOr<std::string> csv = fed_->Result(*id);
    ASSERT_TRUE(csv.ok()) << csv.status();
    *table = *std::move(csv);
  }

  // The job ends FAILED, its reason naming the full disk; nothing of it was released.
  void ExpectFailedForSpace(const std::string& job_id, const std::string& also_named) {
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job_id, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_FAILED) << end->ShortDebugString();
    EXPECT_THAT(end->failure_reason(), NamesAFullDisk());
    EXPECT_THAT(end->failure_reason(), HasSubstr(also_named));
    PrintFigures(absl::StrFormat("%s reason=\"%s\"", Name(), end->failure_reason()));
    fed_->ExpectNothingReleased(job_id);
  }

  // The leader still serves: health, the job list, an earlier job's table.
  void ExpectLeaderServes(const std::string& earlier_job, const std::string& earlier_table) {
    EXPECT_TRUE(fed_->Health().ok());
    absl::StatusOr<std::string> again = fed_->Result(earlier_job);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, earlier_table);
  }

  std::vector<std::string> mounted_;
};

TEST_F(DiskFullTest, LeaderDiskFullAtSubmissionRefusesTheJobByNameAndRecovers) {
  StartOnSmallDisks();
  if (HasFatalFailure()) return;
  std::string first, table;
  ASSERT_NO_FATAL_FAILURE(FirstJob(&first, &table));

  Fill(fed_->leader_data_dir());
  absl::StatusOr<std::string> refused = fed_->Submit({}, kRoundTimeoutSeconds);
  if (refused.ok()) {
    ExpectFailedForSpace(*refused, "");  // accepted, then failed at its first write
  } else {
    EXPECT_THAT(std::string(refused.status().message()), NamesAFullDisk());
    PrintFigures(absl::StrFormat("%s refused=\"%s\"", Name(), refused.status().ToString()));
  }
  ExpectLeaderServes(first, table);
  Free(fed_->leader_data_dir());
  CleanJob();

  // Nothing was corrupted: the store opens after a restart and serves the first table.
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader());
  ExpectLeaderServes(first, table);
}

TEST_F(DiskFullTest, LeaderDiskFullMidJobFailsItByNameAndTheNextJobIsDone) {
  StartOnSmallDisks();
  if (HasFatalFailure()) return;
  std::string first, table;
  ASSERT_NO_FATAL_FAILURE(FirstJob(&first, &table));

  RunningJob job;
  StartJobAtRound(kRoundTimeoutSeconds, 2, &job);
  if (HasFatalFailure()) return;
  // The rest of the job slowed down, so that it cannot end before the disk is full, even on
  // a loaded machine.
  DelayAll(absl::Milliseconds(60));
  Fill(fed_->leader_data_dir());
  ExpectFailedForSpace(job.id, "");
  DelayAll(absl::ZeroDuration());
  ExpectLeaderServes(first, table);
  Free(fed_->leader_data_dir());
  CleanJob();

  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader());
  ExpectLeaderServes(first, table);
  absl::StatusOr<JobInfo> failed = fed_->Get(job.id);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->state(), JOB_STATE_FAILED);
}

// The disk fills up as the job reaches its last round of specialization, but for 16 KiB: less than
// the released table (about 29 KB here), more than a few of the store's pages. Whichever write of
// the job's end fails first (a store update, the view log, the table), the job fails by name and
// leaves no table, whole or partial.
TEST_F(DiskFullTest, LeaderDiskFullAtTheJobsEndFailsItAndLeavesNoPartialTable) {
  StartOnSmallDisks();
  if (HasFatalFailure()) return;
  std::string first, table;
  ASSERT_NO_FATAL_FAILURE(FirstJob(&first, &table));
  absl::StatusOr<JobInfo> reference = fed_->Get(first);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_GT(table.size(), 16u << 10) << "the table must be larger than the room left";

  RunningJob job;
  ASSERT_GE(reference->round(), 2u);
  StartJobAtRound(kRoundTimeoutSeconds, reference->round() - 1, &job);
  if (HasFatalFailure()) return;
  // The rest of the job slowed down, so that it cannot end before the disk is full, even on
  // a loaded machine.
  DelayAll(absl::Milliseconds(60));
  FillAllBut(fed_->leader_data_dir(), 16 << 10);
  ExpectFailedForSpace(job.id, "");
  DelayAll(absl::ZeroDuration());
  for (const auto& e : fs::directory_iterator(fed_->leader_data_dir() + "/results")) {
    EXPECT_FALSE(absl::StrContains(e.path().filename().string(), job.id)) << e.path();
  }
  ExpectLeaderServes(first, table);
  Free(fed_->leader_data_dir());
  CleanJob();
}

TEST_F(DiskFullTest, PartyDiskFullMidJobFailsItNamingThePartyAndThePartyServesTheNextJob) {
  StartOnSmallDisks();
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const std::string party = fed_->parties()[static_cast<size_t>(victim)];
  CleanJob();

  RunningJob job;
  StartJobAtRound(kRoundTimeoutSeconds, 2, &job);
  if (HasFatalFailure()) return;
  // The rest of the job slowed down, so that it cannot end before the disk is full, even on
  // a loaded machine.
  DelayAll(absl::Milliseconds(60));
  Fill(fed_->party_output_dir(victim));
  ExpectFailedForSpace(job.id, party);
  DelayAll(absl::ZeroDuration());
  Free(fed_->party_output_dir(victim));
  // The party kept serving: the next job runs on it, start to end.
  CleanJob();
  EXPECT_TRUE(fed_->WaitForParties({party}, absl::Seconds(1)));
}

}  // namespace
}  // namespace fedanon::testing
