// Several jobs at once over the same parties (leader max_concurrent_jobs, party job slots): each
// releases exactly what it releases alone; the jobs really overlap (both RUNNING while a party
// handles a request of each at the same time); the queue and its limit; cancelling one of two
// running jobs leaves the other done.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "party/testing/observing_party.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JobInfo;

// Example A with k = 3 instead of 2: another job over the same tables with another release.
Scenario ExampleAWithK3() {
  Scenario s = ExampleA();
  s.spec_yaml = absl::StrReplaceAll(s.spec_yaml,
                                    {{"name: example-a", "name: example-a-k3"}, {"K: 2", "K: 3"}});
  return s;
}

// What a done job released: its specializations and its table (rows sorted).
struct Release {
  std::vector<std::string> steps;
  std::vector<std::string> rows;
  friend bool operator==(const Release&, const Release&) = default;
};

Release ReleaseOf(InProcessFederation& fed, const JobInfo& info) {
  Release r;
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  for (const auto& step : info.report().steps()) {
    r.steps.push_back(absl::StrCat(step.attribute(), " ", step.value()));
  }
  auto csv = fed.leader->Result(info.job_id());
  EXPECT_TRUE(csv.ok()) << csv.status();
  if (!csv.ok()) return r;
  auto table = ParseCsvText(*csv, fed.dir);
  EXPECT_TRUE(table.ok()) << table.status();
  if (table.ok()) r.rows = RowsByColumns(*table, table->header);
  return r;
}

// The release of `s` run alone in a federation of its own.
Release AloneRelease(const Scenario& s, const std::string& name) {
  auto fed = InProcessFederation::Create(name, PartyFiles(s));
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return {};
  auto req = MakeRequest(s, (*fed)->names);
  EXPECT_TRUE(req.ok()) << req.status();
  auto info = (*fed)->Submit(*req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return {};
  return ReleaseOf(**fed, (*fed)->Wait(info->job_id()));
}

// Holds the first requests that reach a party's secure-sum step (where it opens its
// predecessor's sealed payload) until `want` of them are inside the party at the same time, or
// the test lets them go. With one lock per party (one job at a time) the second would never
// come in.
class Gate {
 public:
  explicit Gate(int want) : want_(want) {}
  void Enter() {
    absl::MutexLock lock(&mu_);
    if (open_) return;
    ++inside_;
    mu_.AwaitWithTimeout(absl::Condition(&open_), absl::Seconds(60));
  }
  // True when `want` requests were inside at once within `timeout`.
  bool WaitFull(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(this, &Gate::Full), timeout);
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }

 private:
  bool Full() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return inside_ >= want_; }

  const int want_;
  mutable absl::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

// A federation of example A's three hospitals whose second hospital passes its secure-sum
// openings through `gate`.
std::unique_ptr<InProcessFederation> GatedFederation(
    const std::string& name, Gate* gate,
    const std::function<void(leader::LeaderOptions&)>& customize_leader = nullptr) {
  auto fed = InProcessFederation::Create(
      name, PartyFiles(ExampleA()),
      [gate](party::PartyAgentOptions& o) {
        if (o.name != "hospital-b") return;
        o.observer = party_testing::ObservingParty(
            [gate](const std::string&, const std::string&, const std::string&) { gate->Enter(); });
      },
      customize_leader);
  EXPECT_TRUE(fed.ok()) << fed.status();
  return fed.ok() ? *std::move(fed) : nullptr;
}

JobInfo Current(InProcessFederation& fed, const std::string& job_id) {
  // `last` differs in state from any real job: returns the current info at once.
  JobInfo unset;
  auto info = fed.leader->WaitForChange(job_id, unset, absl::Seconds(1));
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() ? *info : JobInfo();
}

TEST(ConcurrentJobs, TwoJobsOverTheSameThreePartiesOverlapAndReleaseWhatEachReleasesAlone) {
  const Release alone_k2 = AloneRelease(ExampleA(), "conc_alone_k2");
  const Release alone_k3 = AloneRelease(ExampleAWithK3(), "conc_alone_k3");
  ASSERT_FALSE(alone_k2.rows.empty());
  ASSERT_NE(alone_k2, alone_k3);  // two different releases, so a mix-up would show

  Gate gate(2);
  auto fed = GatedFederation("conc_two", &gate);
  ASSERT_NE(fed, nullptr);
  ASSERT_OK_AND_ASSIGN(auto req_k2, MakeRequest(ExampleA(), fed->names));
  ASSERT_OK_AND_ASSIGN(auto req_k3, MakeRequest(ExampleAWithK3(), fed->names));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(const JobInfo k2, fed->Submit(req_k2));
  ASSERT_OK_AND_ASSIGN(const JobInfo k3, fed->Submit(req_k3));

  // Both jobs are inside hospital-b at once, and the leader shows both RUNNING.
  const bool overlapped = gate.WaitFull(absl::Seconds(60));
  const JobInfo k2_then = Current(*fed, k2.job_id());
  const JobInfo k3_then = Current(*fed, k3.job_id());
  gate.Open();
  ASSERT_TRUE(overlapped) << "hospital-b never handled requests of both jobs at the same time";
  EXPECT_EQ(k2_then.state(), fedanon::v1::JOB_STATE_RUNNING);
  EXPECT_EQ(k3_then.state(), fedanon::v1::JOB_STATE_RUNNING);
  EXPECT_EQ(fed->leader->Queue().running, 2);

  const JobInfo k2_done = fed->Wait(k2.job_id());
  const JobInfo k3_done = fed->Wait(k3.job_id());
  std::printf("two example-A jobs at once: %.3f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(ReleaseOf(*fed, k2_done), alone_k2);
  EXPECT_EQ(ReleaseOf(*fed, k3_done), alone_k3);
  EXPECT_GT(k2_done.started_unix(), 0);
  // Both ended at every party: nothing is held for either job any more.
  for (const auto& agent : fed->agents) EXPECT_EQ(agent->held_jobs(), 0u) << agent->name();
}

TEST(ConcurrentJobs, BeyondTheQueueLimitSubmissionsAreRefused) {
  Gate gate(1);
  auto fed = GatedFederation("conc_queue", &gate, [](leader::LeaderOptions& o) {
    o.max_concurrent_jobs = 1;
    o.max_queued_jobs = 2;
  });
  ASSERT_NE(fed, nullptr);
  ASSERT_OK_AND_ASSIGN(auto req, MakeRequest(ExampleA(), fed->names));
  ASSERT_OK_AND_ASSIGN(const JobInfo running, fed->Submit(req));
  ASSERT_TRUE(gate.WaitFull(absl::Seconds(60)));  // the one worker is busy with it
  ASSERT_OK_AND_ASSIGN(const JobInfo first, fed->Submit(req));
  ASSERT_OK_AND_ASSIGN(const JobInfo second, fed->Submit(req));
  EXPECT_EQ(first.state(), fedanon::v1::JOB_STATE_SUBMITTED);
  EXPECT_EQ(first.queue_position(), 1u);
  EXPECT_EQ(second.queue_position(), 2u);
  EXPECT_EQ(first.started_unix(), 0);
  EXPECT_THAT(fed->Submit(req), StatusIs(absl::StatusCode::kResourceExhausted,
                                         "job queue is full (2 queued, limit 2)"));
  // List shows the queue too; the refused submission left no job behind.
  ASSERT_OK_AND_ASSIGN(auto jobs, fed->leader->List());
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].queue_position(), 2u);  // newest first
  EXPECT_EQ(jobs[1].queue_position(), 1u);
  EXPECT_EQ(jobs[2].queue_position(), 0u);
  const leader::QueueStats stats = fed->leader->Queue();
  EXPECT_EQ(stats.running, 1);
  EXPECT_EQ(stats.queued, 2);

  gate.Open();
  for (const JobInfo& job : {running, first, second}) {
    EXPECT_EQ(fed->Wait(job.job_id()).state(), fedanon::v1::JOB_STATE_DONE) << job.job_id();
  }
  // Cancelling a queued job takes it off the queue (the one behind it moves up).
  Gate hold(1);
  auto fed2 = GatedFederation("conc_queue_cancel", &hold,
                              [](leader::LeaderOptions& o) { o.max_concurrent_jobs = 1; });
  ASSERT_NE(fed2, nullptr);
  ASSERT_OK_AND_ASSIGN(const JobInfo busy, fed2->Submit(req));
  ASSERT_TRUE(hold.WaitFull(absl::Seconds(60)));
  ASSERT_OK_AND_ASSIGN(const JobInfo a, fed2->Submit(req));
  ASSERT_OK_AND_ASSIGN(const JobInfo b, fed2->Submit(req));
  ASSERT_OK_AND_ASSIGN(const JobInfo cancelled, fed2->leader->Cancel(a.job_id(), "admin", "no"));
  EXPECT_EQ(cancelled.state(), fedanon::v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(Current(*fed2, b.job_id()).queue_position(), 1u);
  hold.Open();
  EXPECT_EQ(fed2->Wait(busy.job_id()).state(), fedanon::v1::JOB_STATE_DONE);
  EXPECT_EQ(fed2->Wait(b.job_id()).state(), fedanon::v1::JOB_STATE_DONE);
}

TEST(ConcurrentJobs, CancellingOneOfTwoRunningJobsLeavesTheOtherDone) {
  const Release alone_k3 = AloneRelease(ExampleAWithK3(), "conc_cancel_alone");
  Gate gate(2);
  auto fed = GatedFederation("conc_cancel", &gate);
  ASSERT_NE(fed, nullptr);
  ASSERT_OK_AND_ASSIGN(auto req_k2, MakeRequest(ExampleA(), fed->names));
  ASSERT_OK_AND_ASSIGN(auto req_k3, MakeRequest(ExampleAWithK3(), fed->names));
  ASSERT_OK_AND_ASSIGN(const JobInfo k2, fed->Submit(req_k2));
  ASSERT_OK_AND_ASSIGN(const JobInfo k3, fed->Submit(req_k3));
  ASSERT_TRUE(gate.WaitFull(absl::Seconds(60)));
  ASSERT_EQ(Current(*fed, k2.job_id()).state(), fedanon::v1::JOB_STATE_RUNNING);
  ASSERT_EQ(Current(*fed, k3.job_id()).state(), fedanon::v1::JOB_STATE_RUNNING);
  // Both are held inside hospital-b: the cancellation is flagged before k2 can take another step
  // (Cancel then waits its 5 s for the job to stop, in vain while the gate is shut).
  ASSERT_OK_AND_ASSIGN(const JobInfo flagged,
                       fed->leader->Cancel(k2.job_id(), "admin", "not needed"));
  EXPECT_EQ(flagged.state(), fedanon::v1::JOB_STATE_RUNNING);
  gate.Open();
  const JobInfo k2_end = fed->Wait(k2.job_id());
  const JobInfo k3_end = fed->Wait(k3.job_id());
  EXPECT_EQ(k2_end.state(), fedanon::v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(k2_end.failure_reason(), ::testing::HasSubstr("not needed"));
  EXPECT_FALSE(fed->leader->Result(k2.job_id()).ok());
  EXPECT_EQ(ReleaseOf(*fed, k3_end), alone_k3);
  // The cancelled job was ended at the parties too (EndJob), so they hold nothing.
  for (const auto& agent : fed->agents) EXPECT_EQ(agent->held_jobs(), 0u) << agent->name();
}

TEST(ConcurrentJobs, LimitsOutsideTheirRangesAreRefused) {
  for (auto [concurrent, queued] : {std::pair{0, 4}, {65, 4}, {4, -1}, {4, 100'001}}) {
    auto fed =
        InProcessFederation::Create(absl::StrCat("conc_limits_", concurrent, "_", queued),
                                    PartyFiles(ExampleA()), nullptr, [&](leader::LeaderOptions& o) {
                                      o.max_concurrent_jobs = concurrent;
                                      o.max_queued_jobs = queued;
                                    });
    EXPECT_THAT(fed, StatusIs(absl::StatusCode::kInvalidArgument, "must be in"))
        << concurrent << " " << queued;
  }
}

}  // namespace
}  // namespace fedanon::testing
