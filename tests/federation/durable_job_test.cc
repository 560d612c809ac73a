// Durable horizontal jobs (docs/operations.md "Durable jobs") in one process: the leader and
// three PartyAgents of worked example A, with a channel in front of the parties that "crashes"
// at a chosen call — the leader (its data directory copied at that instant, as kill -9 would leave
// it, then a new Leader started on the copy) or one party (a new PartyAgent over the same
// directories, the reply lost or not). Each job must end DONE with the centralized engine's
// specializations and released table, and the released table must exist once. The crash points
// are spread over the whole job (secure sums, the final check, the released counts), as fractions
// of the calls an uninterrupted run makes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/durable_federation.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JobInfo;

// The federation of worked example A (or `s`) with the leader behind a CrashingChannel
// (tests/support/durable_federation.h).
std::unique_ptr<DurableFederation> CreateFederation(const std::string& name,
                                                    const Scenario& s = ExampleA()) {
  return DurableFederation::Create(name, PartyFiles(s), [s](const std::vector<std::string>& names) {
    return MakeRequest(s, names);
  });
}

struct Central {
  fedanon::v1::Report report;
  Table table;
};

Central RunCentral(const std::string& name, const Scenario& s = ExampleA()) {
  std::map<std::string, std::string> tax_files(s.taxonomies.begin(), s.taxonomies.end());
  const Job job = WriteJob(name + "_central", s.spec_yaml, s.table, tax_files);
  Central c;
  auto report = RunJob(job);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) c.report = *report;
  auto table = ReadCsvTable(job.output_path);
  EXPECT_TRUE(table.ok()) << table.status();
  if (table.ok()) c.table = *table;
  return c;
}

// The job ended DONE with the centralized run's specializations and table, stored once.
void ExpectSameAsCentralized(DurableFederation& d, const JobInfo& info, const Central& central) {
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_EQ(info.report().steps_size(), central.report.steps_size());
  for (int i = 0; i < central.report.steps_size(); ++i) {
    EXPECT_EQ(info.report().steps(i).attribute(), central.report.steps(i).attribute()) << i;
    EXPECT_EQ(info.report().steps(i).value(), central.report.steps(i).value()) << i;
  }
  ASSERT_OK_AND_ASSIGN(const std::string csv, d.fed->leader->Result(info.job_id()));
  ASSERT_OK_AND_ASSIGN(const Table fed_table, ParseCsvText(csv, d.fed->dir));
  EXPECT_EQ(RowsByColumns(fed_table, central.table.header),
            RowsByColumns(central.table, central.table.header));
  ExpectDurableStateGone(d, info.job_id());
}

// Calls an uninterrupted run makes (the crash points are fractions of it).
int CallsOfACleanRun() {
  auto d = CreateFederation("durable_clean");
  if (d == nullptr) return 0;
  auto id = d->Submit();
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return 0;
  const JobInfo info = d->fed->Wait(*id);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  return d->crashing->calls();
}

class DurableJob : public ::testing::TestWithParam<double> {
 protected:
  static void SetUpTestSuite() {
    clean_calls_ = CallsOfACleanRun();
    central_ = new Central(RunCentral("durable"));
  }
  static void TearDownTestSuite() { delete central_; }
  // Party crashes: before the EndJob calls, which follow the job's DONE (the test stops there).
  int PartyCrashCall() const { return std::min(CrashCall(), clean_calls_ - 3); }
  int CrashCall() const {
    // After the three Prepares (a job not yet prepared everywhere is not resumed).
    return std::max(4, static_cast<int>(GetParam() * static_cast<double>(clean_calls_)));
  }
  static int clean_calls_;
  static Central* central_;
};
int DurableJob::clean_calls_ = 0;
Central* DurableJob::central_ = nullptr;

// kill -9 of the leader while a request is out (its reply lost with it), then a new leader on the
// data directory as the crash left it: the job resumes once the parties are connected.
TEST_P(DurableJob, LeaderKilledMidJobResumesAfterItsRestart) {
  ASSERT_GT(clean_calls_, 10);
  auto d = CreateFederation(absl::StrCat("durable_leader_", CrashCall()));
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  // The party answers (and keeps its answer), the leader dies before it reads the reply: its
  // directory as of now is what a restarted leader finds.
  d->crashing->CrashAt(CrashCall(), d->LeaderDiesAfterTheReply(snapshot, &crashed));
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(120)));
  d->fed->leader.reset();  // the old process is gone
  const absl::Time restart = absl::Now();
  ASSERT_OK(d->StartLeaderOn(snapshot));
  ASSERT_OK_AND_ASSIGN(const JobInfo at_restart, d->fed->leader->Get(job_id));
  const JobInfo info = d->fed->Wait(job_id);
  const double resume_s = absl::ToDoubleSeconds(absl::Now() - restart);
  ExpectSameAsCentralized(*d, info, *central_);
  if (at_restart.state() == fedanon::v1::JOB_STATE_DONE) {
    // Killed while telling the parties that the job is done: the restarted leader tells them
    // again (ExpectSameAsCentralized saw their durable state go).
    EXPECT_THAT(info.report().warnings(),
                ::testing::Not(::testing::Contains(::testing::HasSubstr("resumed"))));
  } else {
    EXPECT_THAT(
        info.report().warnings(),
        ::testing::Contains(::testing::HasSubstr("resumed 1 time(s) after a leader restart")));
  }
  std::printf(
      "[ durable ] leader crash at call %d of %d (job %s at the restart): restart to "
      "done %.3f s\n",
      CrashCall(), clean_calls_, fedanon::v1::JobState_Name(at_restart.state()).c_str(), resume_s);
}

// kill -9 of a party after it answered (its reply lost with it) and at once a new process over its
// directories: the leader repeats the request, the party answers from its durable state.
TEST_P(DurableJob, PartyKilledAfterAnsweringResumesFromItsDurableState) {
  ASSERT_GT(clean_calls_, 10);
  auto d = CreateFederation(absl::StrCat("durable_party_after_", PartyCrashCall()));
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(
      const JobInfo info,
      d->RunWithCrash(PartyCrashCall(), d->PartyRestarts(/*after_answering=*/true)));
  ExpectSameAsCentralized(*d, info, *central_);
}

// kill -9 of a party before it read the request, restarted at once: the request is its first.
TEST_P(DurableJob, PartyKilledBeforeAnsweringResumesFromItsDurableState) {
  ASSERT_GT(clean_calls_, 10);
  auto d = CreateFederation(absl::StrCat("durable_party_before_", PartyCrashCall()));
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(
      const JobInfo info,
      d->RunWithCrash(PartyCrashCall(), d->PartyRestarts(/*after_answering=*/false)));
  ExpectSameAsCentralized(*d, info, *central_);
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, DurableJob, ::testing::Values(0.05, 0.3, 0.6, 0.85, 0.97));

// A party that lost its state file cannot resume: the job fails naming it and why, nothing is
// released, and the other parties are told.
TEST(DurableJobLimits, APartyWithoutItsStateFailsTheJobByName) {
  auto d = CreateFederation("durable_lost_state");
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(const JobInfo info, d->RunWithCrash(12, d->PartyLosesItsState()));
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("without its durable state"));
  EXPECT_FALSE(d->fed->leader->Result(info.job_id()).ok());
}

// A reply that stops the leader is recorded before use and replayed at every start (issue: a
// deviating data party, finding 2): a job resumed more than `max_resumes` times fails by name
// instead of running again, and the parties are told (their durable state goes). Here the limit
// is 0: the first resume already fails.
TEST(DurableJobLimits, AJobResumedMoreThanMaxResumesFailsByName) {
  auto d = DurableFederation::Create(
      "durable_max_resumes", PartyFiles(ExampleA()),
      [](const std::vector<std::string>& names) { return MakeRequest(ExampleA(), names); },
      [](leader::LeaderOptions& o) { o.max_resumes = 0; });
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  d->crashing->CrashAt(12, d->LeaderDiesAfterTheReply(snapshot, &crashed));
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(120)));
  d->fed->leader.reset();
  ASSERT_OK(d->StartLeaderOn(snapshot));
  const JobInfo info = d->fed->Wait(job_id);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr(leader::kResumedTooOften));
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("resumed 1 time(s)"));
  EXPECT_FALSE(d->fed->leader->Result(job_id).ok());
  ExpectDurableStateGone(*d, job_id);
}

// ---- The bin check (numeric_split: binned, protocol 4.0) interrupted at each of its calls. ----

struct BinnedClean {
  std::vector<std::string> kinds;  // CallKind of every call of an uninterrupted run
  Central central;
};

// Worked example A with Age binned (its job runs one bin check): an uninterrupted run's calls and
// the centralized run.
const BinnedClean& BinnedCleanRun() {
  static BinnedClean* clean = [] {
    auto* c =
        new BinnedClean{.kinds = {}, .central = RunCentral("durable_binned", ExampleABinned())};
    auto d = CreateFederation("durable_binned_clean", ExampleABinned());
    if (d == nullptr) return c;
    auto id = d->Submit();
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return c;
    const JobInfo info = d->fed->Wait(*id);
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
    c->kinds = d->crashing->kinds();
    return c;
  }();
  return *clean;
}

// The call number (1-based) of the `nth` bin-check call of the uninterrupted run (the sixth
// brings the first party's mask since protocol 5.0: no SumUnmask follows), 0 when there is none.
int BinCheckCall(int nth) {
  const std::vector<std::string>& kinds = BinnedCleanRun().kinds;
  int seen = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == "sum_unmask") ADD_FAILURE() << "a SumUnmask after a bin check that held";
    if (kinds[i] == "sum_bin_check" && ++seen == nth) return static_cast<int>(i + 1);
  }
  return 0;
}

class DurableBinCheck : public ::testing::TestWithParam<int> {};

// kill -9 of the leader after the party answered the bin check's call `nth`: the restarted
// leader sends the collect and the check again, the parties answer the same bytes (the answer
// ledger checks), and the job releases the centralized table.
TEST_P(DurableBinCheck, LeaderKilledDuringTheBinCheckResumes) {
  const int call = BinCheckCall(GetParam());
  ASSERT_GT(call, 0) << absl::StrJoin(BinnedCleanRun().kinds, ", ");
  auto d = CreateFederation(absl::StrCat("durable_bins_leader_", GetParam()), ExampleABinned());
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  d->crashing->CrashAt(call, d->LeaderDiesAfterTheReply(snapshot, &crashed));
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(120)));
  d->fed->leader.reset();
  ASSERT_OK(d->StartLeaderOn(snapshot));
  const JobInfo info = d->fed->Wait(job_id);
  ExpectSameAsCentralized(*d, info, BinnedCleanRun().central);
  EXPECT_EQ(d->answers->differing(), std::vector<std::string>{});
}

// kill -9 of the party answering the bin check's call `nth`, after it answered: a new process
// over its directories answers the repeated request from its durable state and goes on.
TEST_P(DurableBinCheck, PartyKilledDuringTheBinCheckResumes) {
  const int call = BinCheckCall(GetParam());
  ASSERT_GT(call, 0);
  auto d = CreateFederation(absl::StrCat("durable_bins_party_", GetParam()), ExampleABinned());
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(const JobInfo info,
                       d->RunWithCrash(call, d->PartyRestarts(/*after_answering=*/true)));
  ExpectSameAsCentralized(*d, info, BinnedCleanRun().central);
}

INSTANTIATE_TEST_SUITE_P(Calls, DurableBinCheck, ::testing::Values(1, 2, 3, 4, 5, 6));

}  // namespace
}  // namespace fedanon::testing
