#include "leader/job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::StatusIs;
using ::fedanon::v1::JobInfo;
using ::fedanon::v1::JobState;
using ::fedanon::v1::SubmitJobRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr JobState kSubmitted = fedanon::v1::JOB_STATE_SUBMITTED;
constexpr JobState kValidating = fedanon::v1::JOB_STATE_VALIDATING;
constexpr JobState kRunning = fedanon::v1::JOB_STATE_RUNNING;
constexpr JobState kDone = fedanon::v1::JOB_STATE_DONE;
constexpr JobState kFailed = fedanon::v1::JOB_STATE_FAILED;
constexpr JobState kCancelled = fedanon::v1::JOB_STATE_CANCELLED;

SubmitJobRequest MakeRequest(const std::string& name) {
  SubmitJobRequest r;
  r.mutable_spec()->set_name(name);
  r.mutable_spec()->mutable_privacy()->set_k(5);
  auto* a = r.mutable_spec()->add_attributes();
  a->set_name("age");
  a->set_role(fedanon::v1::ROLE_QID);
  r.add_parties("alice");
  r.add_parties("bob");
  r.set_recipient("bob");
  (*r.mutable_data_paths())["alice"] = "/data/a.csv";
  return r;
}

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "job_store_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/data";  // created by Open()
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<JobStore> OpenStore() {
    auto store = JobStore::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::string root_;
  std::string dir_;
};

TEST_F(JobStoreTest, OpenCreatesPrivateDirectoryAndDatabase) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/jobs.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
  EXPECT_TRUE(fs::is_directory(dir_ + "/results"));
  ASSERT_EQ(::stat((dir_ + "/calls").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(JobStoreTest, CreateGetAndRequestRoundTrip) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const SubmitJobRequest request = MakeRequest("first");
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(request, "admin-1"));
  EXPECT_TRUE(std::regex_match(id, std::regex("^job-[0-9a-f]{12}$"))) << id;

  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(id));
  EXPECT_EQ(info.job_id(), id);
  EXPECT_EQ(info.state(), kSubmitted);
  EXPECT_EQ(info.submitted_by(), "admin-1");
  EXPECT_THAT(info.parties(), ElementsAre("alice", "bob"));
  EXPECT_EQ(info.recipient(), "bob");
  EXPECT_GT(info.created_unix(), 0);
  EXPECT_EQ(info.updated_unix(), info.created_unix());
  EXPECT_EQ(info.round(), 0u);
  EXPECT_TRUE(info.failure_reason().empty());
  EXPECT_FALSE(info.has_report());

  ASSERT_OK_AND_ASSIGN(SubmitJobRequest back, store->Request(id));
  EXPECT_EQ(back.SerializeAsString(), request.SerializeAsString());
  EXPECT_EQ(back.data_paths().at("alice"), "/data/a.csv");
}

TEST_F(JobStoreTest, ListIsNewestFirst) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(auto empty, store->List());
  EXPECT_THAT(empty, IsEmpty());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("j" + std::to_string(i)), "a"));
    ids.push_back(id);
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  ASSERT_OK_AND_ASSIGN(std::vector<JobInfo> jobs, store->List());
  ASSERT_THAT(jobs, SizeIs(5));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(jobs[i].job_id(), ids[4 - i]);
}

TEST_F(JobStoreTest, StateMachine) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("x"), "a"));
  ASSERT_OK(store->SetState(id, kValidating));
  ASSERT_OK(store->SetState(id, kRunning));
  // No way back, and no self-transition.
  EXPECT_THAT(store->SetState(id, kValidating),
              StatusIs(absl::StatusCode::kFailedPrecondition, "running"));
  EXPECT_THAT(store->SetState(id, kRunning), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  EXPECT_THAT(store->SetState(id, fedanon::v1::JOB_STATE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(store->SetState(id, static_cast<JobState>(42)),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  ASSERT_OK(store->SetState(id, kDone));
  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(id));
  EXPECT_EQ(info.state(), kDone);

  // Final states are final; the message names both states.
  for (JobState to : {kSubmitted, kRunning, kDone, kFailed, kCancelled}) {
    const absl::Status st = store->SetState(id, to, "nope");
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("done"));
  }
  EXPECT_THAT(store->SetState(id, kCancelled),
              StatusIs(absl::StatusCode::kFailedPrecondition, "cancelled"));

  // Any non-final state may fail or be cancelled, even straight from submitted.
  ASSERT_OK_AND_ASSIGN(std::string a, store->Create(MakeRequest("a"), "a"));
  ASSERT_OK(store->SetState(a, kCancelled, "changed my mind"));
  EXPECT_THAT(store->SetState(a, kRunning),
              StatusIs(absl::StatusCode::kFailedPrecondition, "cancelled"));
  ASSERT_OK_AND_ASSIGN(info, store->Get(a));
  EXPECT_EQ(info.state(), kCancelled);
  EXPECT_EQ(info.failure_reason(), "changed my mind");

  ASSERT_OK_AND_ASSIGN(std::string b, store->Create(MakeRequest("b"), "a"));
  ASSERT_OK(store->SetState(b, kValidating));
  ASSERT_OK(store->SetState(b, kFailed, "digest mismatch"));
  EXPECT_THAT(store->SetState(b, kCancelled),
              StatusIs(absl::StatusCode::kFailedPrecondition, "failed"));
  ASSERT_OK_AND_ASSIGN(info, store->Get(b));
  EXPECT_EQ(info.failure_reason(), "digest mismatch");
}

TEST_F(JobStoreTest, ProgressAndReportRoundTrip) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("p"), "a"));
  ASSERT_OK(store->SetState(id, kRunning));
  ASSERT_OK(store->SetProgress(id, 7, "age [0-50)", 12.5));
  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(id));
  EXPECT_EQ(info.round(), 7u);
  EXPECT_EQ(info.current_best(), "age [0-50)");
  EXPECT_DOUBLE_EQ(info.elapsed_seconds(), 12.5);
  EXPECT_THAT(store->SetProgress(id, 8, "", -1), StatusIs(absl::StatusCode::kInvalidArgument, ""));

  fedanon::v1::Report report;
  report.set_job_name("p");
  report.set_records_in(1000);
  report.set_records_out(990);
  report.set_stop_reason("no valid candidate");
  auto* step = report.add_steps();
  step->set_round(1);
  step->set_attribute("age");
  step->add_children("[0-50)");
  (*report.mutable_timings_seconds())["total"] = 1.25;
  ASSERT_OK(store->SetReport(id, report));
  ASSERT_OK(store->SetState(id, kDone));
  ASSERT_OK_AND_ASSIGN(info, store->Get(id));
  ASSERT_TRUE(info.has_report());
  EXPECT_EQ(info.report().SerializeAsString(), report.SerializeAsString());
  EXPECT_EQ(info.round(), 7u);  // progress survives the state change
}

TEST_F(JobStoreTest, ResultStoreAndLoad) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("r"), "a"));
  EXPECT_THAT(store->LoadResult(id), StatusIs(absl::StatusCode::kNotFound, ""));

  const std::string csv = "age,class\n[0-50),yes\n[50-100),no\n";
  ASSERT_OK(store->StoreResult(id, csv));
  ASSERT_OK_AND_ASSIGN(std::string back, store->LoadResult(id));
  EXPECT_EQ(back, csv);

  const std::string path = dir_ + "/results/" + id + ".csv";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // Overwrite (atomic replace), including an empty table; no temporary files are left behind.
  const std::string csv2(200000, 'x');
  ASSERT_OK(store->StoreResult(id, csv2));
  ASSERT_OK_AND_ASSIGN(back, store->LoadResult(id));
  EXPECT_EQ(back, csv2);
  // Streamed in pieces of at most 65,536 bytes (what GetResult holds at a time), the same bytes.
  std::vector<size_t> pieces;
  back.clear();
  ASSERT_OK(store->StreamResult(id, 65536, [&](std::string_view piece) {
    pieces.push_back(piece.size());
    back.append(piece);
    return absl::OkStatus();
  }));
  EXPECT_THAT(pieces, ElementsAre(65536, 65536, 65536, 3392));
  EXPECT_EQ(back, csv2);
  ASSERT_OK(store->StoreResult(id, ""));
  ASSERT_OK_AND_ASSIGN(back, store->LoadResult(id));
  EXPECT_EQ(back, "");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_ + "/results")) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_THAT(files, ElementsAre(id + ".csv"));

  // Unknown jobs have no result and cannot get one.
  EXPECT_THAT(store->StoreResult("job-000000000000", csv),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->LoadResult("job-000000000000"), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->StreamResult("job-000000000000", 65536,
                                  [](std::string_view) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_FALSE(fs::exists(dir_ + "/results/job-000000000000.csv"));
}

// A table written in pieces (the leader's released table of tens of millions of rows) is stored
// whole once every piece is written, and not at all when producing it fails.
TEST_F(JobStoreTest, ResultStreamedInPiecesIsStoredOnlyWhenComplete) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("p"), "a"));
  ASSERT_OK_AND_ASSIGN(bool has, store->HasResult(id));
  EXPECT_FALSE(has);
  EXPECT_THAT(store->StoreResultStreamed(id,
                                         [](const JobStore::ResultWriter& write) {
                                           EXPECT_OK(write("age,class\n"));
                                           return absl::DataLossError("the counts do not add up");
                                         }),
              StatusIs(absl::StatusCode::kDataLoss, "the counts do not add up"));
  ASSERT_OK_AND_ASSIGN(has, store->HasResult(id));
  EXPECT_FALSE(has);
  EXPECT_THAT(store->LoadResult(id), StatusIs(absl::StatusCode::kNotFound, ""));

  std::string expected = "age,class\n";
  ASSERT_OK(store->StoreResultStreamed(id, [&](const JobStore::ResultWriter& write) {
    RETURN_IF_ERROR(write("age,class\n"));
    for (int i = 0; i < 1000; ++i) {
      const std::string row = absl::StrCat("[", i, "-", i + 1, "),yes\n");
      expected += row;
      RETURN_IF_ERROR(write(row));
    }
    return absl::OkStatus();
  }));
  ASSERT_OK_AND_ASSIGN(has, store->HasResult(id));
  EXPECT_TRUE(has);
  ASSERT_OK_AND_ASSIGN(std::string back, store->LoadResult(id));
  EXPECT_EQ(back, expected);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/results/" + id + ".csv").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_ + "/results")) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_THAT(files, ElementsAre(id + ".csv"));  // no temporary file left behind
}

// A result file replaced by a symbolic link (e.g. to another job's or a system file) is not read.
TEST_F(JobStoreTest, ResultBehindASymlinkIsNotRead) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("s"), "a"));
  const std::string elsewhere = root_ + "/elsewhere.csv";
  {
    std::FILE* f = std::fopen(elsewhere.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("secret\n", f);
    std::fclose(f);
  }
  const std::string path = dir_ + "/results/" + id + ".csv";
  ASSERT_EQ(::symlink(elsewhere.c_str(), path.c_str()), 0);
  const absl::StatusOr<std::string> result = store->LoadResult(id);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr(path));
  // Nor is it taken for a stored result.
  ASSERT_OK_AND_ASSIGN(const bool has, store->HasResult(id));
  EXPECT_FALSE(has);
}

TEST_F(JobStoreTest, AuditTrailOrderAndContent) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("audited"), "admin-1"));
  ASSERT_OK(store->SetState(id, kValidating));
  ASSERT_OK(store->SetState(id, kRunning));
  ASSERT_OK(store->Audit(id, "admin-2", "cancelled", "too slow"));
  ASSERT_OK(store->SetState(id, kCancelled, "too slow"));
  // A rejected transition leaves no audit row.
  EXPECT_FALSE(store->SetState(id, kDone).ok());

  ASSERT_OK_AND_ASSIGN(std::vector<AuditEntry> trail, store->AuditTrail(id));
  ASSERT_THAT(trail, SizeIs(5));
  auto row = [](const AuditEntry& e) { return e.actor + "|" + e.action + "|" + e.detail; };
  EXPECT_EQ(row(trail[0]), "admin-1|submitted|audited");
  EXPECT_EQ(row(trail[1]), "leader|state:validating|");
  EXPECT_EQ(row(trail[2]), "leader|state:running|");
  EXPECT_EQ(row(trail[3]), "admin-2|cancelled|too slow");
  EXPECT_EQ(row(trail[4]), "leader|state:cancelled|too slow");
  for (size_t i = 1; i < trail.size(); ++i) {
    EXPECT_GE(trail[i].unix_time, trail[i - 1].unix_time);
  }
  EXPECT_GT(trail[0].unix_time, 0);

  // Trails are per job.
  ASSERT_OK_AND_ASSIGN(std::string other, store->Create(MakeRequest("other"), "admin-3"));
  ASSERT_OK_AND_ASSIGN(trail, store->AuditTrail(other));
  ASSERT_THAT(trail, SizeIs(1));
  EXPECT_EQ(trail[0].actor, "admin-3");

  EXPECT_THAT(store->Audit(id, "", "x"), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(store->Create(MakeRequest("anon"), ""),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST_F(JobStoreTest, PersistsAcrossReopen) {
  std::string id;
  const std::string csv = "a,b\n1,2\n";
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(id, store->Create(MakeRequest("persist"), "admin-1"));
    ASSERT_OK(store->SetState(id, kRunning));
    ASSERT_OK(store->SetProgress(id, 3, "age *", 1.5));
    fedanon::v1::Report report;
    report.set_records_in(42);
    ASSERT_OK(store->SetReport(id, report));
    ASSERT_OK(store->SetState(id, kDone));
    ASSERT_OK(store->StoreResult(id, csv));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(id));
  EXPECT_EQ(info.state(), kDone);
  EXPECT_EQ(info.submitted_by(), "admin-1");
  EXPECT_EQ(info.round(), 3u);
  EXPECT_EQ(info.current_best(), "age *");
  EXPECT_EQ(info.report().records_in(), 42u);
  EXPECT_THAT(info.parties(), ElementsAre("alice", "bob"));
  ASSERT_OK_AND_ASSIGN(std::string back, store->LoadResult(id));
  EXPECT_EQ(back, csv);
  ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail(id));
  EXPECT_THAT(trail, SizeIs(3));
  // New jobs still list first after reopening.
  ASSERT_OK_AND_ASSIGN(std::string newer, store->Create(MakeRequest("newer"), "admin-1"));
  ASSERT_OK_AND_ASSIGN(auto jobs, store->List());
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[0].job_id(), newer);
  EXPECT_EQ(jobs[1].job_id(), id);
}

TEST_F(JobStoreTest, RecoverAfterRestartFailsInFlightJobsOnly) {
  std::string submitted, validating, running, done, failed, cancelled;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(submitted, store->Create(MakeRequest("s"), "a"));
    ASSERT_OK_AND_ASSIGN(validating, store->Create(MakeRequest("v"), "a"));
    ASSERT_OK_AND_ASSIGN(running, store->Create(MakeRequest("r"), "a"));
    ASSERT_OK_AND_ASSIGN(done, store->Create(MakeRequest("d"), "a"));
    ASSERT_OK_AND_ASSIGN(failed, store->Create(MakeRequest("f"), "a"));
    ASSERT_OK_AND_ASSIGN(cancelled, store->Create(MakeRequest("c"), "a"));
    ASSERT_OK(store->SetState(validating, kValidating));
    ASSERT_OK(store->SetState(running, kRunning));
    ASSERT_OK(store->SetState(done, kDone));
    ASSERT_OK(store->SetState(failed, kFailed, "party lost"));
    ASSERT_OK(store->SetState(cancelled, kCancelled, "by admin"));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(int n, store->RecoverAfterRestart());
  EXPECT_EQ(n, 3);
  for (const std::string& id : {submitted, validating, running}) {
    ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(id));
    EXPECT_EQ(info.state(), kFailed) << id;
    EXPECT_EQ(info.failure_reason(), "leader restarted");
    ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail(id));
    EXPECT_EQ(trail.back().actor, "leader");
    EXPECT_EQ(trail.back().action, "state:failed");
    EXPECT_EQ(trail.back().detail, "leader restarted");
  }
  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(done));
  EXPECT_EQ(info.state(), kDone);
  EXPECT_TRUE(info.failure_reason().empty());
  ASSERT_OK_AND_ASSIGN(info, store->Get(failed));
  EXPECT_EQ(info.failure_reason(), "party lost");
  ASSERT_OK_AND_ASSIGN(info, store->Get(cancelled));
  EXPECT_EQ(info.state(), kCancelled);
  EXPECT_EQ(info.failure_reason(), "by admin");
  ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail(done));
  EXPECT_THAT(trail, SizeIs(2));
  // Idempotent.
  ASSERT_OK_AND_ASSIGN(n, store->RecoverAfterRestart());
  EXPECT_EQ(n, 0);
}

TEST_F(JobStoreTest, InvalidJobIdsAreRejected) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("x"), "a"));
  const std::vector<std::string> bad_ids = {"../x",
                                            "job-../../etc",
                                            "job-0123456789ab/../../x",
                                            "job-0123456789AB",
                                            "job-0123456789a",
                                            "job-0123456789abc",
                                            "",
                                            "/etc/passwd",
                                            std::string("job-0123456789a\0", 16),
                                            id + "\n",
                                            "x" + id.substr(1)};
  for (const std::string& bad : bad_ids) {
    EXPECT_THAT(store->StoreResult(bad, "pwned"), StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << bad;
    EXPECT_THAT(store->LoadResult(bad), StatusIs(absl::StatusCode::kInvalidArgument, "")) << bad;
    EXPECT_THAT(store->Get(bad), StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->Request(bad), StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->SetState(bad, kFailed), StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->SetProgress(bad, 1, "", 0),
                StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->SetReport(bad, {}), StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->Audit(bad, "a", "b"), StatusIs(absl::StatusCode::kInvalidArgument, ""));
    EXPECT_THAT(store->AuditTrail(bad), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  }
  EXPECT_FALSE(fs::exists(root_ + "/x"));
  EXPECT_FALSE(fs::exists(dir_ + "/x"));
  std::vector<fs::path> results;
  for (const auto& e : fs::directory_iterator(dir_ + "/results")) results.push_back(e.path());
  EXPECT_THAT(results, IsEmpty());
}

TEST_F(JobStoreTest, UnknownJobsAreNotFound) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string unknown = "job-0123456789ab";
  EXPECT_THAT(store->Get(unknown), StatusIs(absl::StatusCode::kNotFound, unknown));
  EXPECT_THAT(store->Request(unknown), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->SetState(unknown, kRunning), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->SetProgress(unknown, 1, "", 0), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->SetReport(unknown, {}), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->StoreResult(unknown, "x"), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->LoadResult(unknown), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->Audit(unknown, "a", "b"), StatusIs(absl::StatusCode::kNotFound, ""));
  EXPECT_THAT(store->AuditTrail(unknown), StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST_F(JobStoreTest, ConcurrentWritersFromSeveralThreads) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  constexpr int kJobsPerThread = 10;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](const absl::Status& st) {
        if (errors[t].empty() && !st.ok()) errors[t] = st.ToString();
      };
      for (int j = 0; j < kJobsPerThread; ++j) {
        absl::StatusOr<std::string> id =
            store->Create(MakeRequest("t"), "thread-" + std::to_string(t));
        if (!id.ok()) {
          fail(id.status());
          continue;
        }
        ids[t].push_back(*id);
        fail(store->SetState(*id, kRunning));
        fail(store->SetProgress(*id, 1, "age *", 0.1));
        fail(store->Audit(*id, "thread-" + std::to_string(t), "note", std::to_string(j)));
        fail(store->StoreResult(*id, "a\n" + std::to_string(j) + "\n"));
        fail(store->SetState(*id, kDone));
        fail(store->List().status());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;

  ASSERT_OK_AND_ASSIGN(auto jobs, store->List());
  EXPECT_THAT(jobs, SizeIs(kThreads * kJobsPerThread));
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_THAT(ids[t], SizeIs(kJobsPerThread));
    for (int j = 0; j < kJobsPerThread; ++j) {
      const std::string& id = ids[t][j];
      ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail(id));
      std::vector<std::string> actions;
      for (const auto& e : trail) actions.push_back(e.action);
      EXPECT_THAT(actions, ElementsAre("submitted", "state:running", "note", "state:done"));
      ASSERT_OK_AND_ASSIGN(std::string csv, store->LoadResult(id));
      EXPECT_EQ(csv, "a\n" + std::to_string(j) + "\n");
    }
  }
}

TEST_F(JobStoreTest, TwoStoresOnOneDirectoryShareData) {
  // Another process (e.g. an admin tool) holding the database: the busy timeout and WAL let
  // both write.
  auto a = OpenStore();
  auto b = OpenStore();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<std::string> errors(2);
  auto work = [&](JobStore* s, int which) {
    for (int i = 0; i < 20; ++i) {
      absl::StatusOr<std::string> id = s->Create(MakeRequest("two"), "x");
      absl::Status st = id.status();
      if (st.ok()) st = s->SetState(*id, kFailed, "x");
      if (!st.ok() && errors[which].empty()) errors[which] = st.ToString();
    }
  };
  std::thread ta(work, a.get(), 0), tb(work, b.get(), 1);
  ta.join();
  tb.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  ASSERT_OK_AND_ASSIGN(auto jobs, a->List());
  EXPECT_THAT(jobs, SizeIs(40));
}

TEST_F(JobStoreTest, RefusesNewerSchema) {
  { ASSERT_NE(OpenStore(), nullptr); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/jobs.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(JobStore::Open(dir_), StatusIs(absl::StatusCode::kFailedPrecondition, "99"));
}

// A database of the next schema version (a newer leader wrote it): refused, naming both versions
// and the file, and left untouched.
TEST_F(JobStoreTest, RefusesTheNextSchemaVersionNamingBoth) {
  { ASSERT_NE(OpenStore(), nullptr); }
  const std::string path = dir_ + "/jobs.db";
  const int newer = kJobStoreSchemaVersion + 1;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string update = "UPDATE schema_version SET version = " + std::to_string(newer);
  ASSERT_EQ(sqlite3_exec(db, update.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const absl::Status st = JobStore::Open(dir_).status();
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kFailedPrecondition,
                           "schema version " + std::to_string(newer) +
                               " was written by a newer "
                               "leader; this leader reads schema versions up to " +
                               std::to_string(kJobStoreSchemaVersion)));
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(path));
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), newer);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A database as the version-1 leader made it (its DDL, verbatim), with a job and its audit:
// opened by this leader it is migrated forward and keeps its jobs.
TEST_F(JobStoreTest, MigratesAVersionOneDatabaseForward) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  const std::string path = dir_ + "/jobs.db";
  SubmitJobRequest request = MakeRequest("old job");
  std::string blob;
  ASSERT_TRUE(request.SerializeToString(&blob));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  constexpr char kVersionOne[] = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE jobs (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id          TEXT    NOT NULL UNIQUE,
  request         BLOB    NOT NULL,
  state           INTEGER NOT NULL,
  failure_reason  TEXT    NOT NULL DEFAULT '',
  submitted_by    TEXT    NOT NULL,
  created_unix    INTEGER NOT NULL,
  updated_unix    INTEGER NOT NULL,
  round           INTEGER NOT NULL DEFAULT 0,
  current_best    TEXT    NOT NULL DEFAULT '',
  elapsed_seconds REAL    NOT NULL DEFAULT 0,
  report          BLOB,
  has_result      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE TABLE audit (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id    TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  unix_time INTEGER NOT NULL,
  actor     TEXT    NOT NULL,
  action    TEXT    NOT NULL,
  detail    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_by_job ON audit(job_id, id);
INSERT INTO schema_version (version) VALUES (1);
INSERT INTO audit (job_id, unix_time, actor, action, detail)
  VALUES ('job-0123456789ab', 1700000000, 'alice', 'submitted', 'old job');
)sql";
  ASSERT_EQ(sqlite3_exec(db, kVersionOne, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_stmt* insert = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO jobs (job_id, request, state, submitted_by, "
                               "created_unix, updated_unix, round) VALUES ('job-0123456789ab', "
                               "?1, 4, 'alice', 1700000000, 1700000100, 7)",
                               -1, &insert, nullptr),
            SQLITE_OK);
  sqlite3_bind_blob(insert, 1, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE);
  sqlite3_finalize(insert);
  sqlite3_close(db);

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(JobInfo old, store->Get("job-0123456789ab"));
  EXPECT_EQ(old.state(), kDone);
  EXPECT_EQ(old.round(), 7u);
  EXPECT_EQ(old.submitted_by(), "alice");
  EXPECT_EQ(old.created_unix(), 1700000000);
  EXPECT_EQ(old.started_unix(), 0);  // unknown for version-1 jobs
  EXPECT_THAT(old.parties(), ElementsAre("alice", "bob"));
  ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail("job-0123456789ab"));
  ASSERT_THAT(trail, SizeIs(1));
  EXPECT_EQ(trail[0].action, "submitted");
  // New jobs use the new column: started when a worker takes them.
  ASSERT_OK_AND_ASSIGN(std::string id, store->Create(MakeRequest("new"), "bob"));
  ASSERT_OK_AND_ASSIGN(JobInfo queued, store->Get(id));
  EXPECT_EQ(queued.started_unix(), 0);
  ASSERT_OK(store->SetState(id, kValidating));
  ASSERT_OK_AND_ASSIGN(JobInfo started, store->Get(id));
  EXPECT_GT(started.started_unix(), 0);
  store.reset();

  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*), MAX(version) FROM schema_version", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  EXPECT_EQ(sqlite3_column_int(stmt, 1), kJobStoreSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(JobStoreTest, SchemaIsVersioned) {
  { ASSERT_NE(OpenStore(), nullptr); }
  { ASSERT_NE(OpenStore(), nullptr); }  // reopening does not re-run the migration
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/jobs.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*), MAX(version) FROM schema_version", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  EXPECT_EQ(sqlite3_column_int(stmt, 1), kJobStoreSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

}  // namespace
// Schema v4: the parties still to be told that a job ended survive reopening, in the order they
// were recorded; recording one again replaces it; an unknown job is refused.
TEST_F(JobStoreTest, PartiesToTellThatAJobEndedSurviveReopening) {
  std::string a, b;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(a, store->Create(MakeRequest("a"), "x"));
    ASSERT_OK_AND_ASSIGN(b, store->Create(MakeRequest("b"), "x"));
    ASSERT_OK(store->RecordUntold({{a, "hospital-b", false, "cancelled: by x"},
                                   {a, "hospital-c", false, "cancelled: by x"}}));
    ASSERT_OK(store->RecordUntold({{b, "hospital-a", true, "done"}}));
    ASSERT_OK(store->RecordUntold({{a, "hospital-c", false, "failed: later words"}}));
    EXPECT_THAT(store->RecordUntold({{"job-00000000beef", "hospital-a", true, "done"}}),
                StatusIs(absl::StatusCode::kNotFound, ""));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<UntoldEnd> untold, store->Untold());
  ASSERT_THAT(untold, SizeIs(3));
  EXPECT_EQ(untold[0].job_id, a);
  EXPECT_EQ(untold[0].party, "hospital-b");
  EXPECT_EQ(untold[1].job_id, b);
  EXPECT_TRUE(untold[1].success);
  EXPECT_EQ(untold[1].reason, "done");
  EXPECT_EQ(untold[2].party, "hospital-c");
  EXPECT_EQ(untold[2].reason, "failed: later words");
  EXPECT_FALSE(untold[2].success);
  ASSERT_OK(store->ForgetUntold(a, "hospital-b"));
  ASSERT_OK(store->ForgetUntold(a, "hospital-z"));  // nothing to forget: fine
  ASSERT_OK_AND_ASSIGN(untold, store->Untold());
  ASSERT_THAT(untold, SizeIs(2));
  EXPECT_EQ(untold[0].job_id, b);
}

// Durable jobs: each call's request (digest, masks) recorded before it is sent, its reply once
// complete (masks dropped then); the same request again is accepted, another refused; a reply is
// recorded once, and only for a recorded request.
TEST_F(JobStoreTest, CallsAreRecordedInOrderAndSurviveReopening) {
  std::string id;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(id, store->Create(MakeRequest("durable"), "a"));
    ASSERT_OK(store->SetState(id, kValidating));
    ASSERT_OK(store->SetState(id, kRunning));
    ASSERT_OK(store->RecordCallRequest(id, 0, "digest-0", "masks-0"));
    ASSERT_OK(store->RecordCallReply(id, 0, "sum-0"));
    ASSERT_OK(store->RecordCallRequest(id, 1, "digest-1", "masks-1"));
    // The same request again (a re-send): accepted; a different one under the same key: refused.
    ASSERT_OK(store->RecordCallRequest(id, 1, "digest-1", "masks-1"));
    EXPECT_THAT(store->RecordCallRequest(id, 1, "digest-1", "other masks"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
    EXPECT_THAT(store->RecordCallRequest(id, 1, "digest-other", "masks-1"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
    EXPECT_THAT(store->RecordCallRequest(id, 0, "digest-0", "masks-0"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
    // A reply is recorded once, and only for a recorded request.
    EXPECT_THAT(store->RecordCallReply(id, 0, "sum-0 again"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
    EXPECT_THAT(store->RecordCallReply(id, 0, "sum-0"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
    EXPECT_THAT(store->RecordCallReply(id, 5, "sum-5"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
  }
  auto store = OpenStore();  // as after a restart
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, store->Calls(id));
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].index, 0u);
  EXPECT_TRUE(calls[0].done);
  EXPECT_EQ(calls[0].digest, "digest-0");
  EXPECT_EQ(calls[0].reply, "sum-0");
  EXPECT_EQ(calls[0].masks, "") << "the masks of a complete call are dropped";
  EXPECT_EQ(calls[1].index, 1u);
  EXPECT_FALSE(calls[1].done);
  EXPECT_EQ(calls[1].digest, "digest-1");
  EXPECT_EQ(calls[1].masks, "masks-1");
  EXPECT_EQ(calls[1].reply, "");
  ASSERT_OK(store->DeleteCalls(id));
  ASSERT_OK_AND_ASSIGN(calls, store->Calls(id));
  EXPECT_THAT(calls, SizeIs(0));
  EXPECT_THAT(store->Calls("job-000000000000"),
              StatusIs(absl::StatusCode::kNotFound, "unknown job"));
  EXPECT_THAT(store->Calls("../job"), StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

// After a restart: queued jobs stay queued, running horizontal jobs are to resume, validating and
// running vertical jobs resume too; finished jobs are untouched.
TEST_F(JobStoreTest, RecoverForResumeSortsInFlightJobs) {
  std::string submitted, validating, running, vertical, done, finished;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    SubmitJobRequest v = MakeRequest("v");
    v.mutable_spec()->set_partitioning(fedanon::v1::PARTITIONING_VERTICAL);
    ASSERT_OK_AND_ASSIGN(submitted, store->Create(MakeRequest("s"), "a"));
    ASSERT_OK_AND_ASSIGN(validating, store->Create(MakeRequest("va"), "a"));
    ASSERT_OK_AND_ASSIGN(running, store->Create(MakeRequest("r"), "a"));
    ASSERT_OK_AND_ASSIGN(vertical, store->Create(v, "a"));
    ASSERT_OK_AND_ASSIGN(done, store->Create(MakeRequest("d"), "a"));
    ASSERT_OK_AND_ASSIGN(finished, store->Create(MakeRequest("fi"), "a"));
    ASSERT_OK(store->SetState(finished, kRunning));
    ASSERT_OK(store->SetReport(finished, fedanon::v1::Report()));  // then killed during EndJob
    ASSERT_OK(store->SetState(validating, kValidating));
    ASSERT_OK(store->SetState(running, kRunning));
    ASSERT_OK(store->SetState(vertical, kRunning));
    ASSERT_OK(store->SetState(done, kDone));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(Recovery recovery, store->RecoverForResume());
  EXPECT_THAT(recovery.resume, ElementsAre(running, vertical));
  EXPECT_THAT(recovery.requeue, ElementsAre(submitted));
  EXPECT_THAT(recovery.failed, ElementsAre(validating));
  EXPECT_THAT(recovery.unended, ElementsAre(finished));
  ASSERT_OK_AND_ASSIGN(JobInfo finished_info, store->Get(finished));
  EXPECT_EQ(finished_info.state(), kDone);
  ASSERT_OK_AND_ASSIGN(JobInfo info, store->Get(running));
  EXPECT_EQ(info.state(), kRunning);
  ASSERT_OK_AND_ASSIGN(auto trail, store->AuditTrail(running));
  EXPECT_EQ(trail.back().action, "resuming");
  ASSERT_OK_AND_ASSIGN(info, store->Get(submitted));
  EXPECT_EQ(info.state(), kSubmitted);
  ASSERT_OK_AND_ASSIGN(info, store->Get(validating));
  EXPECT_EQ(info.state(), kFailed);
  EXPECT_THAT(info.failure_reason(), HasSubstr("while validating the job: it cannot resume"));
  // A vertical job resumes like a horizontal one (its replies are recorded; leader/vertical_job.h).
  ASSERT_OK_AND_ASSIGN(info, store->Get(vertical));
  EXPECT_EQ(info.state(), kRunning);
  ASSERT_OK_AND_ASSIGN(trail, store->AuditTrail(vertical));
  EXPECT_EQ(trail.back().action, "resuming");
  ASSERT_OK_AND_ASSIGN(info, store->Get(done));
  EXPECT_EQ(info.state(), kDone);
  // Each resume is counted and audited with its round.
  ASSERT_OK_AND_ASSIGN(int n, store->RecordResume(running, 4));
  EXPECT_EQ(n, 1);
  ASSERT_OK_AND_ASSIGN(n, store->RecordResume(running, 9));
  EXPECT_EQ(n, 2);
  ASSERT_OK_AND_ASSIGN(trail, store->AuditTrail(running));
  EXPECT_EQ(trail.back().action, "resumed");
  EXPECT_EQ(trail.back().detail, "resume 2 from round 9");
  ASSERT_OK_AND_ASSIGN(n, store->Resumes(running));
  EXPECT_EQ(n, 2);
}

// Calls recorded complete at once (a vertical job's replies, with the key of their request): read
// back in order with their keys, refused twice at one index and for an unknown job, deleted with
// the job's other calls.
TEST_F(JobStoreTest, CallsRecordedCompleteAtOnceAreReadInOrderAndSurviveReopening) {
  std::string id;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    SubmitJobRequest v = MakeRequest("v");
    v.mutable_spec()->set_partitioning(fedanon::v1::PARTITIONING_VERTICAL);
    ASSERT_OK_AND_ASSIGN(id, store->Create(v, "a"));
    ASSERT_OK(store->RecordCompleteCall(id, 0, "hospital-a#0\nd0", "reply0"));
    ASSERT_OK(store->RecordCompleteCall(id, 1, "hospital-b#0\nd1", std::string("r\0e", 3)));
    EXPECT_THAT(store->RecordCompleteCall(id, 1, "hospital-b#1\nd2", "other"),
                StatusIs(absl::StatusCode::kAlreadyExists, ""));
    EXPECT_THAT(store->RecordCompleteCall(id, 1, "hospital-b#0\nd1", std::string("r\0e", 3)),
                StatusIs(absl::StatusCode::kAlreadyExists, ""));
    EXPECT_THAT(store->RecordCompleteCall("job-000000000000", 0, "k", "r"),
                StatusIs(absl::StatusCode::kNotFound, "unknown job"));
    // A complete call has no open request: no second reply, no request recorded after it.
    EXPECT_THAT(store->RecordCallReply(id, 0, "reply0"),
                StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> recorded, store->Calls(id));
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].digest, "hospital-a#0\nd0");
  EXPECT_EQ(recorded[0].reply, "reply0");
  EXPECT_TRUE(recorded[0].done);
  EXPECT_EQ(recorded[0].masks, "");
  EXPECT_EQ(recorded[1].digest, "hospital-b#0\nd1");
  EXPECT_EQ(recorded[1].reply, std::string("r\0e", 3));
  ASSERT_OK(store->DeleteCalls(id));
  ASSERT_OK_AND_ASSIGN(recorded, store->Calls(id));
  EXPECT_TRUE(recorded.empty());
}

// A reply of kCallReplyFileBytes or more is a file of its own in <data_dir>/calls/ (its row holds
// its SHA-256): read back whole after reopening, refused by name when the file is gone or altered,
// a refused second record leaves the first file alone, and DeleteCalls removes the files.
TEST_F(JobStoreTest, LargeRepliesLiveInFilesReadBackWholeAndCheckedByTheirDigest) {
  const std::string large(kCallReplyFileBytes, 'x');
  std::string larger(kCallReplyFileBytes + 17, '\0');
  for (size_t i = 0; i < larger.size(); ++i) larger[i] = static_cast<char>(i * 131 % 251);
  const std::string calls_dir = dir_ + "/calls";
  auto files = [&calls_dir] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(calls_dir)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  std::string id, other;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    SubmitJobRequest v = MakeRequest("v");
    v.mutable_spec()->set_partitioning(fedanon::v1::PARTITIONING_VERTICAL);
    ASSERT_OK_AND_ASSIGN(id, store->Create(v, "a"));
    ASSERT_OK_AND_ASSIGN(other, store->Create(v, "a"));
    ASSERT_OK(store->RecordCompleteCall(id, 0, "hospital-a#0\nd0", large));
    ASSERT_OK(store->RecordCompleteCall(id, 1, "hospital-b#0\nd1", "small"));
    ASSERT_OK(store->RecordCallRequest(id, 2, "d2", "masks"));
    ASSERT_OK(store->RecordCallReply(id, 2, larger));
    ASSERT_OK(store->RecordCompleteCall(other, 0, "hospital-a#0\nd0", large));
    EXPECT_EQ(files().size(), 3u);  // two of `id`, one of `other`; the small reply in its row
    // A second record of call 0 is refused; the first one's file stays, and no other is left.
    EXPECT_THAT(store->RecordCompleteCall(id, 0, "hospital-a#0\nd0", larger),
                StatusIs(absl::StatusCode::kAlreadyExists, ""));
    EXPECT_THAT(store->RecordCallReply(id, 2, large),
                StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
    EXPECT_EQ(files().size(), 3u);
  }
  // The database holds digests, not the replies.
  EXPECT_LT(fs::file_size(dir_ + "/jobs.db"), kCallReplyFileBytes);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> recorded, store->Calls(id));
  ASSERT_EQ(recorded.size(), 3u);
  EXPECT_EQ(recorded[0].reply, large);
  EXPECT_EQ(recorded[1].reply, "small");
  EXPECT_EQ(recorded[2].reply, larger);
  EXPECT_TRUE(recorded[2].done);
  EXPECT_EQ(recorded[2].masks, "");
  // A file altered (one byte) or gone: the calls are refused by name, not replayed.
  std::vector<std::string> of_id;
  for (const std::string& f : files()) {
    if (f.find(id) != std::string::npos) of_id.push_back(f);
  }
  ASSERT_EQ(of_id.size(), 2u);
  {
    std::fstream f(of_id[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    f.put('\x7f');
  }
  EXPECT_THAT(store->Calls(id),
              StatusIs(absl::StatusCode::kDataLoss, "is not the one recorded: its digest differs"));
  fs::remove(of_id[0]);
  EXPECT_THAT(store->Calls(id), StatusIs(absl::StatusCode::kDataLoss, "cannot be read"));
  // Deleting a job's calls removes its files (and those of no other job).
  ASSERT_OK(store->DeleteCalls(id));
  ASSERT_OK_AND_ASSIGN(recorded, store->Calls(id));
  EXPECT_TRUE(recorded.empty());
  ASSERT_EQ(files().size(), 1u);
  EXPECT_NE(files()[0].find(other), std::string::npos);
  ASSERT_OK_AND_ASSIGN(recorded, store->Calls(other));
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].reply, large);
}

// A hand-made version-2 database (as the leader before durable jobs wrote it) gains the recorded
// calls (v3, v5) and the resume count (v3), then the parties to tell (v4); its jobs read as before.
TEST_F(JobStoreTest, MigratesAVersionTwoDatabaseToTheCurrentVersion) {
  {
    auto store = OpenStore();  // creates the current schema; turned back into version 2 below
    ASSERT_NE(store, nullptr);
  }
  const std::string path = dir_ + "/jobs.db";
  SubmitJobRequest request = MakeRequest("v2 job");
  std::string blob;
  ASSERT_TRUE(request.SerializeToString(&blob));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // Version 2 exactly: no recorded calls or untold table, no resumes column.
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE untold; DROP TABLE calls; "
                         "ALTER TABLE jobs DROP COLUMN resumes; "
                         "UPDATE schema_version SET version = 2;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_stmt* insert = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO jobs (job_id, request, state, submitted_by, "
                               "created_unix, updated_unix, round, started_unix) VALUES "
                               "('job-0123456789ab', ?1, 3, 'alice', 1700000000, 1700000100, 5, "
                               "1700000010)",
                               -1, &insert, nullptr),
            SQLITE_OK);
  sqlite3_bind_blob(insert, 1, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE);
  sqlite3_finalize(insert);
  sqlite3_close(db);

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(JobInfo old, store->Get("job-0123456789ab"));
  EXPECT_EQ(old.state(), kRunning);
  EXPECT_EQ(old.round(), 5u);
  EXPECT_EQ(old.started_unix(), 1700000010);
  ASSERT_OK_AND_ASSIGN(int resumes, store->Resumes("job-0123456789ab"));
  EXPECT_EQ(resumes, 0);
  // A running job of a version-2 leader recorded no calls: it resumes by replaying none.
  ASSERT_OK_AND_ASSIGN(auto calls, store->Calls("job-0123456789ab"));
  EXPECT_THAT(calls, SizeIs(0));
  ASSERT_OK(store->RecordCallRequest("job-0123456789ab", 0, "d", "m"));
  ASSERT_OK(store->RecordUntold({{"job-0123456789ab", "bob", false, "leader restarted"}}));
  ASSERT_OK_AND_ASSIGN(auto untold, store->Untold());
  EXPECT_THAT(untold, SizeIs(1));
  store.reset();
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT MAX(version) FROM schema_version", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), kJobStoreSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A hand-made version-4 database (as the leader before the `calls` table wrote it), with the rows
// of a horizontal job's collects (one complete, one open) and of a vertical job's replies in
// `collects`: opened, it is at version 5, `collects` is gone, and every row reads back through
// Calls() as it was (collect -> index, sum -> reply) and goes on recording.
TEST_F(JobStoreTest, MigratesAVersionFourDatabaseMovingItsCollectsToCalls) {
  std::string horizontal, vertical, ended;
  {
    auto store = OpenStore();  // creates the current schema; turned back into version 4 below
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(horizontal, store->Create(MakeRequest("h"), "a"));
    ASSERT_OK_AND_ASSIGN(vertical, store->Create(MakeRequest("v"), "a"));
    ASSERT_OK_AND_ASSIGN(ended, store->Create(MakeRequest("e"), "a"));
    ASSERT_OK(store->SetState(horizontal, kRunning));
    ASSERT_OK(store->SetState(vertical, kRunning));
    ASSERT_OK(store->SetState(ended, kFailed, "cancelled while telling"));
  }
  const std::string path = dir_ + "/jobs.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // Version 4 exactly: the version-3 `collects` table (its DDL, verbatim) in place of `calls`.
  ASSERT_EQ(sqlite3_exec(db, R"sql(
DROP TABLE calls;
CREATE TABLE collects (
  job_id  TEXT    NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  collect INTEGER NOT NULL,
  digest  BLOB    NOT NULL,
  masks   BLOB,
  sum     BLOB,
  PRIMARY KEY (job_id, collect)
);
UPDATE schema_version SET version = 4;
)sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  // A row as the version-4 leader wrote it (blobs; masks and sum NULL where absent).
  const auto add_collect = [db](const std::string& job, int collect, const std::string& digest,
                                const std::string* masks, const std::string* sum) {
    sqlite3_stmt* insert = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO collects (job_id, collect, digest, masks, sum) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)",
                                 -1, &insert, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_bind_text(insert, 1, job.data(), static_cast<int>(job.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(insert, 2, collect);
    sqlite3_bind_blob(insert, 3, digest.data(), static_cast<int>(digest.size()), SQLITE_TRANSIENT);
    if (masks != nullptr) {
      sqlite3_bind_blob(insert, 4, masks->data(), static_cast<int>(masks->size()),
                        SQLITE_TRANSIENT);
    }
    if (sum != nullptr) {
      sqlite3_bind_blob(insert, 5, sum->data(), static_cast<int>(sum->size()), SQLITE_TRANSIENT);
    }
    EXPECT_EQ(sqlite3_step(insert), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(insert);
  };
  const std::string sum0("\x01\0\0\0\0\0\0\0", 8);
  const std::string masks1 = "masks-1";
  const std::string reply0("r\0e", 3);
  const std::string reply1 = "reply1";
  const std::string sum_e = "sum-e";
  add_collect(horizontal, 0, "digest-0", nullptr, &sum0);
  add_collect(horizontal, 1, "digest-1", &masks1, nullptr);
  add_collect(vertical, 0, "hospital-a#0\nd0", nullptr, &reply0);
  add_collect(vertical, 1, "hospital-b#0\nd1", nullptr, &reply1);
  add_collect(ended, 0, "digest-e", nullptr, &sum_e);
  sqlite3_close(db);
  ASSERT_FALSE(HasFailure());

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, store->Calls(horizontal));
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].index, 0u);
  EXPECT_EQ(calls[0].digest, "digest-0");
  EXPECT_TRUE(calls[0].done);
  EXPECT_EQ(calls[0].masks, "");
  EXPECT_EQ(calls[0].reply, sum0);
  EXPECT_EQ(calls[1].index, 1u);
  EXPECT_EQ(calls[1].digest, "digest-1");
  EXPECT_FALSE(calls[1].done);
  EXPECT_EQ(calls[1].masks, "masks-1");
  ASSERT_OK_AND_ASSIGN(calls, store->Calls(vertical));
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].digest, "hospital-a#0\nd0");
  EXPECT_TRUE(calls[0].done);
  EXPECT_EQ(calls[0].reply, reply0);
  EXPECT_EQ(calls[1].digest, "hospital-b#0\nd1");
  EXPECT_EQ(calls[1].reply, reply1);
  // The open collect goes on as an open call: the same request again, then its reply.
  ASSERT_OK(store->RecordCallRequest(horizontal, 1, "digest-1", "masks-1"));
  ASSERT_OK(store->RecordCallReply(horizontal, 1, "sum-1"));
  ASSERT_OK(store->RecordCompleteCall(vertical, 2, "hospital-a#1\nd2", "reply2"));
  // An ended job whose collects were kept (its parties were being told) is still to be told.
  ASSERT_OK_AND_ASSIGN(Recovery recovery, store->RecoverForResume());
  EXPECT_THAT(recovery.unended, ElementsAre(ended));
  store.reset();

  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT (SELECT MAX(version) FROM schema_version), (SELECT COUNT(*) "
                               "FROM sqlite_master WHERE name = 'collects'), (SELECT COUNT(*) "
                               "FROM calls)",
                               -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), kJobStoreSchemaVersion);
  EXPECT_EQ(sqlite3_column_int(stmt, 1), 0) << "the collects table is dropped";
  EXPECT_EQ(sqlite3_column_int(stmt, 2), 6);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

}  // namespace fedanon::leader
