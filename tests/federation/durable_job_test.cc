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

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using fedanon::v1::JobInfo;

// Forwards to the in-process parties; at call number `crash_at` (1-based) runs `crash` instead,
// which decides what the caller gets. Counts every call.
class CrashingChannel : public common::PartyChannel {
 public:
  explicit CrashingChannel(common::PartyChannel* inner) : inner_(inner) {}
  using Crash = std::function<absl::StatusOr<fedanon::v1::PartyMessage>(
      const std::string& party, const fedanon::v1::LeaderMessage& request)>;
  void CrashAt(int call, Crash crash) {
    absl::MutexLock lock(&mu_);
    crash_at_ = call;
    crash_ = std::move(crash);
  }
  // From now on nobody is connected and every call fails (a leader that was killed).
  void Die() { dead_ = true; }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    if (dead_) return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
    Crash crash;
    {
      absl::MutexLock lock(&mu_);
      if (++calls_ == crash_at_) crash = std::move(crash_);
    }
    if (crash) return crash(party, request);
    return inner_->Call(party, request, timeout);
  }
  std::vector<common::ConnectedParty> Parties() const override {
    if (dead_) return {};
    return inner_->Parties();
  }

 private:
  common::PartyChannel* inner_;
  std::atomic<bool> dead_{false};
  mutable absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_at_ ABSL_GUARDED_BY(mu_) = -1;
  Crash crash_ ABSL_GUARDED_BY(mu_);
};

// The federation of worked example A with the leader behind a CrashingChannel; the parties'
// options are kept (to restart one) and the leader's (to restart it on a copy of its directory).
struct DurableFederation {
  std::unique_ptr<InProcessFederation> fed;
  std::map<std::string, party::PartyAgentOptions> party_options;
  leader::LeaderOptions leader_options;
  std::unique_ptr<CrashingChannel> crashing;
  std::vector<std::unique_ptr<party::PartyAgent>> restarted;  // replacements (old ones stay alive)

  // The leader first: it calls through `crashing` into the parties.
  ~DurableFederation() {
    if (fed) fed->leader.reset();
  }

  static std::unique_ptr<DurableFederation> Create(const std::string& name) {
    auto d = std::make_unique<DurableFederation>();
    auto fed = InProcessFederation::Create(
        name, PartyFiles(ExampleA()),
        [&](party::PartyAgentOptions& o) { d->party_options[o.name] = o; },
        [&](leader::LeaderOptions& o) {
          o.resume_timeout = absl::Seconds(10);
          d->leader_options = o;
        });
    EXPECT_TRUE(fed.ok()) << fed.status();
    if (!fed.ok()) return nullptr;
    d->fed = *std::move(fed);
    // The leader the tests use talks through the crashing channel (its own data directory).
    d->fed->leader.reset();
    d->crashing = std::make_unique<CrashingChannel>(&d->fed->channel);
    d->leader_options.data_dir = d->fed->dir + "/leader-1";
    auto leader = leader::Leader::Create(d->leader_options, d->crashing.get());
    EXPECT_TRUE(leader.ok()) << leader.status();
    if (!leader.ok()) return nullptr;
    d->fed->leader = *std::move(leader);
    return d;
  }

  // A new process of `party` over the same directories (nothing in memory), now the connected one.
  absl::Status RestartParty(const std::string& party) {
    ASSIGN_OR_RETURN(std::unique_ptr<party::PartyAgent> agent,
                     party::PartyAgent::Create(party_options.at(party)));
    fed->channel.Add(agent.get());
    restarted.push_back(std::move(agent));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Submit() {
    ASSIGN_OR_RETURN(auto req, MakeRequest(ExampleA(), fed->names));
    ASSIGN_OR_RETURN(JobInfo info, fed->Submit(req));
    return info.job_id();
  }
};

struct Central {
  fedanon::v1::Report report;
  Table table;
};

Central RunCentral(const std::string& name) {
  const Scenario s = ExampleA();
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

// Every party's durable state goes with the job (once the leader told it, after recording the
// job as done: waited for, at most 10 s).
void ExpectDurableStateGone(DurableFederation& d, const std::string& job_id) {
  for (const auto& [name, o] : d.party_options) {
    const std::string state = o.output_dir + "/" + job_id + ".state";
    for (int i = 0; i < 1000 && fs::exists(state); ++i) absl::SleepFor(absl::Milliseconds(10));
    EXPECT_FALSE(fs::exists(state)) << name;
  }
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
  auto d = DurableFederation::Create("durable_clean");
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
  auto d = DurableFederation::Create(absl::StrCat("durable_leader_", CrashCall()));
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  d->crashing->CrashAt(
      CrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        // The party answers (and keeps its answer), the leader dies before it reads the reply: its
        // directory as of now is what a restarted leader finds.
        d->fed->channel.Call(party, request, absl::Seconds(20)).IgnoreError();
        fs::copy(d->leader_options.data_dir, snapshot, fs::copy_options::recursive);
        d->crashing->Die();
        crashed.Notify();
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(120)));
  d->fed->leader.reset();  // the old process is gone
  const absl::Time restart = absl::Now();
  leader::LeaderOptions options = d->leader_options;
  options.data_dir = snapshot;
  ASSERT_OK_AND_ASSIGN(d->fed->leader, leader::Leader::Create(options, &d->fed->channel));
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
  auto d = DurableFederation::Create(absl::StrCat("durable_party_after_", PartyCrashCall()));
  ASSERT_NE(d, nullptr);
  std::string victim;
  d->crashing->CrashAt(
      PartyCrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        d->fed->channel.Call(party, request, absl::Seconds(20)).IgnoreError();
        victim = party;
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  ASSERT_FALSE(victim.empty()) << "the crash point was not reached";
  ExpectSameAsCentralized(*d, info, *central_);
}

// kill -9 of a party before it read the request, restarted at once: the request is its first.
TEST_P(DurableJob, PartyKilledBeforeAnsweringResumesFromItsDurableState) {
  ASSERT_GT(clean_calls_, 10);
  auto d = DurableFederation::Create(absl::StrCat("durable_party_before_", PartyCrashCall()));
  ASSERT_NE(d, nullptr);
  std::string victim;
  d->crashing->CrashAt(
      PartyCrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage&) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        victim = party;
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  ASSERT_FALSE(victim.empty()) << "the crash point was not reached";
  ExpectSameAsCentralized(*d, info, *central_);
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, DurableJob, ::testing::Values(0.05, 0.3, 0.6, 0.85, 0.97));

// A party that lost its state file cannot resume: the job fails naming it and why, nothing is
// released, and the other parties are told.
TEST(DurableJobLimits, APartyWithoutItsStateFailsTheJobByName) {
  auto d = DurableFederation::Create("durable_lost_state");
  ASSERT_NE(d, nullptr);
  d->crashing->CrashAt(
      12,
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage&) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        const party::PartyAgentOptions& o = d->party_options.at(party);
        for (const auto& entry : fs::directory_iterator(o.output_dir)) {
          if (entry.path().extension() == ".state") fs::remove(entry.path());
        }
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("without its durable state"));
  EXPECT_FALSE(d->fed->leader->Result(job_id).ok());
}

}  // namespace
}  // namespace fedanon::testing
