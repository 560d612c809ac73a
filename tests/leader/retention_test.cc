// Retention of finished jobs' outputs at the leader (leader/retention.h) with a fake clock, the
// job store's count by state (metrics), and the modes of the leader's files at rest.
#include "leader/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "leader/job_store.h"
#include "leader/view_log.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::StatusIs;
using ::fedanon::v1::JobState;
using ::testing::HasSubstr;

constexpr JobState kRunning = fedanon::v1::JOB_STATE_RUNNING;
constexpr JobState kDone = fedanon::v1::JOB_STATE_DONE;
constexpr JobState kFailed = fedanon::v1::JOB_STATE_FAILED;
constexpr JobState kCancelled = fedanon::v1::JOB_STATE_CANCELLED;

fedanon::v1::SubmitJobRequest Request() {
  fedanon::v1::SubmitJobRequest r;
  r.mutable_spec()->set_name("retention");
  r.add_parties("alice");
  r.add_parties("bob");
  return r;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "retention_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/data";
    ASSERT_OK_AND_ASSIGN(store_, JobStore::Open(dir_));
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }

  // A job that reached `state` with a result, a report and a view log (as the leader writes
  // them); returns its id.
  std::string FinishedJob(JobState state) {
    absl::StatusOr<std::string> id = store_->Create(Request(), "admin/alice");
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_OK(store_->SetState(*id, kRunning));
    absl::StatusOr<std::unique_ptr<ViewLog>> log = ViewLog::Open(dir_, *id);
    EXPECT_TRUE(log.ok()) << log.status();
    if (state == kDone) {
      EXPECT_OK(store_->StoreResult(*id, "age,class\n30,yes\n"));
      fedanon::v1::Report report;
      report.set_records_in(1);
      EXPECT_OK(store_->SetReport(*id, report));
    }
    EXPECT_OK(store_->SetState(*id, state, state == kFailed ? "party 'bob' disconnected" : ""));
    return *id;
  }
  std::string ResultPath(const std::string& id) const { return dir_ + "/results/" + id + ".csv"; }
  std::string ViewPath(const std::string& id) const { return dir_ + "/" + id + ".view.jsonl"; }

  std::string root_;
  std::string dir_;
  std::unique_ptr<JobStore> store_;
};

TEST_F(RetentionTest, DeletesOldFinishedJobsOutputsKeepsYoungAndRunningOnes) {
  const std::string old_done = FinishedJob(kDone);
  const std::string old_failed = FinishedJob(kFailed);
  const std::string old_cancelled = FinishedJob(kCancelled);
  // Finished at least one second later: younger by that much.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const std::string young = FinishedJob(kDone);
  // A running job, created long ago as far as the fake clock knows: never touched.
  ASSERT_OK_AND_ASSIGN(const std::string running, store_->Create(Request(), "admin/alice"));
  ASSERT_OK(store_->SetState(running, kRunning));
  ASSERT_OK_AND_ASSIGN(auto running_log, ViewLog::Open(dir_, running));
  ASSERT_OK(running_log->Append(1, "secure-sum", "", false, {}));

  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo old_info, store_->Get(old_done));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo young_info, store_->Get(young));
  ASSERT_LT(old_info.updated_unix(), young_info.updated_unix());
  // The fake clock: 30 days after the second before the young job finished, so every old job
  // (finished before the pause) is at least 30 days old and the young one is not.
  const absl::Time now =
      absl::FromUnixSeconds(young_info.updated_unix() - 1) + absl::Hours(24 * 30);
  Retention retention(
      store_.get(), RetentionOptions{.period = absl::Hours(24 * 30), .now = [now] { return now; }});
  ASSERT_OK_AND_ASSIGN(const RetentionSweepStats stats, retention.Sweep());
  EXPECT_EQ(stats.jobs, 3);
  EXPECT_EQ(stats.files, 1 + 3);  // the done job's result, three view logs

  for (const std::string& id : {old_done, old_failed, old_cancelled}) {
    SCOPED_TRACE(id);
    EXPECT_FALSE(fs::exists(ResultPath(id)));
    EXPECT_FALSE(fs::exists(ViewPath(id)));
    ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo info, store_->Get(id));
    EXPECT_FALSE(info.has_report());
    EXPECT_LT(info.updated_unix(), young_info.updated_unix());  // the finish time stays
    EXPECT_THAT(store_->LoadResult(id), StatusIs(absl::StatusCode::kNotFound, ""));
    ASSERT_OK_AND_ASSIGN(const std::vector<AuditEntry> audit, store_->AuditTrail(id));
    ASSERT_FALSE(audit.empty());
    EXPECT_EQ(audit.back().action, "retention:deleted");
    EXPECT_EQ(audit.back().actor, "leader");
    EXPECT_THAT(audit.back().detail, HasSubstr(ViewPath(id)));
    EXPECT_THAT(audit.back().detail, HasSubstr("finished 30.0 days ago"));
  }
  ASSERT_OK_AND_ASSIGN(const std::vector<AuditEntry> done_audit, store_->AuditTrail(old_done));
  EXPECT_THAT(done_audit.back().detail, HasSubstr(ResultPath(old_done)));
  EXPECT_THAT(done_audit.back().detail, HasSubstr("the report in the job record"));
  // The failed job's reason stays in the record.
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo failed_info, store_->Get(old_failed));
  EXPECT_EQ(failed_info.failure_reason(), "party 'bob' disconnected");

  // The young job and the running one keep everything.
  EXPECT_TRUE(fs::exists(ResultPath(young)));
  EXPECT_TRUE(fs::exists(ViewPath(young)));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo young_after, store_->Get(young));
  EXPECT_TRUE(young_after.has_report());
  EXPECT_TRUE(fs::exists(ViewPath(running)));

  // A second sweep at the same time deletes nothing more and audits nothing twice.
  ASSERT_OK_AND_ASSIGN(const RetentionSweepStats again, retention.Sweep());
  EXPECT_EQ(again.jobs, 0);
  ASSERT_OK_AND_ASSIGN(const std::vector<AuditEntry> audit_again, store_->AuditTrail(old_done));
  EXPECT_EQ(audit_again.size(), done_audit.size());

  // Much later the young job goes too; the running one still never does.
  Retention later(store_.get(), RetentionOptions{.period = absl::Hours(24 * 30), .now = [now] {
                                                   return now + absl::Hours(24 * 400);
                                                 }});
  ASSERT_OK_AND_ASSIGN(const RetentionSweepStats stats_later, later.Sweep());
  EXPECT_EQ(stats_later.jobs, 1);
  EXPECT_FALSE(fs::exists(ResultPath(young)));
  EXPECT_TRUE(fs::exists(ViewPath(running)));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo running_info, store_->Get(running));
  EXPECT_EQ(running_info.state(), kRunning);
  EXPECT_THAT(store_->ForgetOutputs(running, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "only finished jobs"));
}

TEST_F(RetentionTest, SmallBatchesSweepEveryOldJob) {
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(FinishedJob(kDone));
  const absl::Time now = absl::Now() + absl::Hours(2);
  Retention retention(
      store_.get(),
      RetentionOptions{.period = absl::Hours(1), .now = [now] { return now; }, .batch = 3});
  ASSERT_OK_AND_ASSIGN(const RetentionSweepStats stats, retention.Sweep());
  EXPECT_EQ(stats.jobs, 7);
  EXPECT_EQ(stats.files, 14);
  for (const std::string& id : ids) EXPECT_FALSE(fs::exists(ResultPath(id))) << id;
}

TEST_F(RetentionTest, PeriodicRetentionSweepsAtStart) {
  const std::string id = FinishedJob(kDone);
  {
    PeriodicRetention periodic(store_.get(),
                               RetentionOptions{.period = absl::Seconds(1),
                                                .now = [] { return absl::Now() + absl::Hours(1); }},
                               absl::Hours(1));
    for (int i = 0; i < 500 && periodic.sweeps() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GE(periodic.sweeps(), 1);
  }  // the destructor ends the wait of an hour at once
  EXPECT_FALSE(fs::exists(ResultPath(id)));
  EXPECT_EQ(RetentionSweepInterval(absl::Hours(24 * 30)), absl::Hours(1));
  EXPECT_EQ(RetentionSweepInterval(absl::Seconds(5)), absl::Seconds(1));
  EXPECT_EQ(RetentionSweepInterval(absl::Minutes(10)), absl::Minutes(1));
}

TEST_F(RetentionTest, FilesAtRestArePrivateToTheLeadersUser) {
  const std::string id = FinishedJob(kDone);
  // What the leader writes itself.
  EXPECT_EQ(ModeOf(dir_), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/results"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/calls"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/jobs.db"), 0600u);
  EXPECT_EQ(ModeOf(ResultPath(id)), 0600u);
  EXPECT_EQ(ModeOf(ViewPath(id)), 0600u);
  // A recorded reply large enough to be a file of its own (calls/, schema v6).
  const std::string other = FinishedJob(kDone);
  ASSERT_OK(store_->RecordCompleteCall(other, 0, "k", std::string(kCallReplyFileBytes, 'r')));
  std::string reply_file;
  for (const auto& e : fs::directory_iterator(dir_ + "/calls")) reply_file = e.path().string();
  ASSERT_FALSE(reply_file.empty());
  EXPECT_EQ(ModeOf(reply_file), 0600u);
  ASSERT_OK_AND_ASSIGN(int changed, SecureLeaderDataDir(dir_));
  EXPECT_EQ(changed, 0);
  // Wider modes left by an operator (or a restore from backup) are tightened at start.
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir_ + "/results", fs::perms::owner_all | fs::perms::group_all);
  fs::permissions(ResultPath(id), fs::perms::owner_read | fs::perms::owner_write |
                                      fs::perms::group_read | fs::perms::others_read);
  fs::permissions(ViewPath(id),
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  fs::permissions(dir_ + "/jobs.db",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::permissions(dir_ + "/calls", fs::perms::owner_all | fs::perms::others_exec);
  fs::permissions(reply_file,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // A symbolic link is neither followed nor changed.
  const std::string outside = root_ + "/outside.txt";
  std::ofstream(outside) << "not the leader's";
  fs::permissions(outside, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  fs::create_symlink(outside, dir_ + "/results/link.csv");
  ASSERT_OK_AND_ASSIGN(changed, SecureLeaderDataDir(dir_));
  EXPECT_EQ(changed, 7);
  EXPECT_EQ(ModeOf(dir_ + "/calls"), 0700u);
  EXPECT_EQ(ModeOf(reply_file), 0600u);
  EXPECT_EQ(ModeOf(dir_), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/results"), 0700u);
  EXPECT_EQ(ModeOf(ResultPath(id)), 0600u);
  EXPECT_EQ(ModeOf(ViewPath(id)), 0600u);
  EXPECT_EQ(ModeOf(dir_ + "/jobs.db"), 0600u);
  EXPECT_EQ(ModeOf(outside), 0604u);
}

TEST_F(RetentionTest, CountByStateIsOneQueryOverManyJobs) {
  constexpr int kDoneJobs = 200;
  for (int i = 0; i < kDoneJobs; ++i) {
    ASSERT_OK_AND_ASSIGN(const std::string id, store_->Create(Request(), "admin/alice"));
    ASSERT_OK(store_->SetState(id, i % 10 == 0 ? kFailed : kDone));
  }
  ASSERT_OK_AND_ASSIGN(const std::string running, store_->Create(Request(), "admin/alice"));
  ASSERT_OK(store_->SetState(running, kRunning));
  ASSERT_OK(store_->Create(Request(), "admin/alice").status());  // submitted
  ASSERT_OK_AND_ASSIGN(const auto counts, store_->CountByState());
  EXPECT_EQ(counts.at(fedanon::v1::JOB_STATE_SUBMITTED), 1);
  EXPECT_EQ(counts.at(fedanon::v1::JOB_STATE_VALIDATING), 0);
  EXPECT_EQ(counts.at(kRunning), 1);
  EXPECT_EQ(counts.at(kDone), kDoneJobs - kDoneJobs / 10);
  EXPECT_EQ(counts.at(kFailed), kDoneJobs / 10);
  EXPECT_EQ(counts.at(kCancelled), 0);
  EXPECT_EQ(counts.size(), 6u);
}

}  // namespace
}  // namespace fedanon::leader
