// Durable vertical jobs under faults (issue #28 "Durable jobs", docs/operations.md): real daemons
// on loopback with mutual TLS (the fault suite's harness, tests/fault/fault_federation.h) running
// gen-data's vertical job over three parties (private ID matching, then rounds with a judge that
// holds the sensitive column, then the release to the leader).
//
// - a party killed (kill -9) during the ID matching, and another at a seeded round, each
//   restarted at once: the job ends DONE with the table an uninterrupted run released, once;
// - the leader killed at a seeded round and restarted: the same;
// - under a 4 KiB message limit (leader.yaml max_message_bytes; ID lists in small batches, the
//   other per-record payloads in chunks): the leader killed during the ID matching and a party
//   at a seeded round: the same;
// - a party killed and kept away past the rejoin deadline: FAILED naming it, nothing released;
// - the leader killed, restarted while a party stays away, and the job cancelled while it waits
//   for that party: CANCELLED, nothing released, and every party (the absent one once it is back)
//   told and without the job's state file.
//
// Each scenario prints its figures on one `[ fault ]` line, among them the time from the restart
// to the job going on. FEDANON_FAULT_SEED=N replays the rounds and victims of a run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/fault/fault_federation.h"
#include "tests/support/fault_scenario.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JOB_STATE_CANCELLED;
using fedanon::v1::JOB_STATE_DONE;
using fedanon::v1::JOB_STATE_FAILED;
using fedanon::v1::JobInfo;
using ::testing::HasSubstr;

constexpr uint32_t kRoundTimeoutSeconds = 5;
// The tests that delay every message by 15 ms are about resuming, not about timeouts: a request
// may take this long. Under 5 s, one CI run (a full suite alongside, seed 851865) failed with
// "party 'hospital-c' did not answer within 5 s" late in round 3, a request to a party that
// computes nothing there; not reproduced here, alone or beside three busy loops. Every answer a
// daemon sends is synced to disk first (the journal's fdatasync), and a sync can wait that long
// on a disk the whole suite writes to.
constexpr uint32_t kDelayedRoundTimeoutSeconds = 30;

// The fixture (seed, federation, the scenarios' common steps): tests/support/fault_scenario.h.
class VerticalResumeTest : public FaultScenarioTest {
 protected:
  void SetUp() override {
    SkipUnlessBuiltThenDrawSeed({"fedanon", "fedanonctl", "fedanon-leader", "fedanon-party"});
    if (IsSkipped()) return;
    FaultFederationOptions options;
    options.vertical = true;
    options.rows = 300;
    StartFederation(options);
  }

  // An uninterrupted run: its released table (the reference) and its rounds.
  void RunReference() {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> job = fed_->Submit({}, kRoundTimeoutSeconds);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << fed_->Log("leader");
    clean_seconds_ = Seconds(absl::Now() - start);
    rounds_ = end->round();
    absl::StatusOr<std::string> csv = fed_->Result(*job);
    ASSERT_TRUE(csv.ok()) << csv.status();
    reference_ = SortedLines(*csv);
    ASSERT_GT(reference_.size(), 1u);
    ASSERT_GE(rounds_, 2u) << "the generated job needs a few rounds to be hit mid-way";
  }

  // The reference under the default 64 MiB limit (nothing chunked), then the federation started
  // again under leader.yaml max_message_bytes: 4096, which the leader announces.
  void ReferenceThenASmallMessageLimit() {
    ASSERT_NO_FATAL_FAILURE(RunReference());
    fed_.reset();
    FaultFederationOptions options;
    options.vertical = true;
    options.rows = 300;
    options.leader_yaml_extra = "max_message_bytes: 4096\n";
    ASSERT_NO_FATAL_FAILURE(StartFederation(options));
    EXPECT_THAT(fed_->Log("leader"), HasSubstr("payload chunks under 4096 bytes"));
  }

  // A round in [1, rounds - 1], drawn from the seed.
  uint32_t SeededRound() { return 1 + static_cast<uint32_t>(rng_() % (rounds_ - 1)); }

  // The job is DONE with the reference table, stored once at the leader, none at any party.
  void ExpectSameTableOnce(const std::string& job_id) {
    absl::StatusOr<std::string> csv = fed_->Result(job_id);
    ASSERT_TRUE(csv.ok()) << csv.status();
    EXPECT_EQ(SortedLines(*csv), reference_) << "the resumed job released another table";
    ExpectStoredOnceAtTheLeader(job_id);
    for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
      EXPECT_FALSE(std::filesystem::exists(fed_->party_output_dir(i) + "/" + job_id + ".csv"));
    }
  }

  // Polls the job until it is RUNNING (or final).
  absl::StatusOr<JobInfo> WaitRunning(const std::string& job_id) {
    const absl::Time deadline = absl::Now() + kJobBound;
    while (absl::Now() < deadline) {
      absl::StatusOr<JobInfo> info = fed_->Get(job_id);
      if (info.ok() &&
          (info->state() == fedanon::v1::JOB_STATE_RUNNING || info->state() == JOB_STATE_DONE ||
           info->state() == JOB_STATE_FAILED || info->state() == JOB_STATE_CANCELLED)) {
        return info;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return absl::DeadlineExceededError("the job never ran");
  }

  // Kills party `i` and starts it again at once; returns when it is connected again.
  void KillAndRestartParty(int i) {
    fed_->KillParty(i);
    ASSERT_TRUE(fed_->StartParty(i).ok());
  }

  std::vector<std::string> reference_;
  uint32_t rounds_ = 0;
  double clean_seconds_ = 0;
};

// Issue #47: chunked payloads resume on real daemons too. Under leader.yaml max_message_bytes:
// 4096 the ID lists travel in batches that fit half of it, and every instruction and released
// column in 2 KiB chunks; the leader is killed once a party has sent its first list, and a party
// at a seeded round; the job ends DONE with the table a run under the default 64 MiB limit
// released.
TEST_F(VerticalResumeTest,
       UnderASmallMessageLimitKillsDuringChunkedTransfersResumeWithTheSameTable) {
  ASSERT_NO_FATAL_FAILURE(ReferenceThenASmallMessageLimit());
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound();
  DelayAll(absl::Milliseconds(15));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job = fed_->Submit({}, kDelayedRoundTimeoutSeconds);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(WaitRunning(*job).ok());
  WaitForAudit(victim, *job, "id-list", absl::Seconds(4));
  absl::StatusOr<JobInfo> before = fed_->Get(*job);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->round(), 0u) << "the ID matching ended before the kill";
  absl::Time restart;
  double reconnect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  DelayAll(absl::Milliseconds(15));
  absl::StatusOr<JobInfo> reached = fed_->WaitForRound(*job, at_round, kJobBound);
  ASSERT_TRUE(reached.ok()) << reached.status();
  fed_->KillParty(victim);
  ASSERT_TRUE(fed_->StartParty(victim).ok());
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  DelayAll(absl::ZeroDuration());
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n"
                                          << fed_->Log(name) << "\n"
                                          << fed_->Log("leader");
  ExpectSameTableOnce(*job);
  ExpectNoDurableStateLeft(*job);
  EXPECT_THAT(end->report().warnings(),
              ::testing::Contains(HasSubstr("resumed 1 time(s) after a leader restart")));
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s party_kill_round=%u of %u parties_reconnected_s=%.2f job_s=%.2f "
      "clean_job_64MiB_s=%.2f",
      Name(), seed_, name, reached->round(), rounds_, reconnect, Seconds(absl::Now() - start),
      clean_seconds_));
}

// Issue #47: a kill during the vertical release, on real daemons. Under max_message_bytes: 4096
// the released columns travel in 2 KiB chunks the leader fetches one after the other; a seeded
// party is killed as soon as its audit file shows its release sealed (its columns not yet all
// fetched), then started again at once — or, with the other seed parity, the leader is. The job
// ends DONE with the table an unchunked run released, stored once, no state left.
TEST_F(VerticalResumeTest, UnderASmallMessageLimitAKillDuringTheReleaseResumesWithTheSameTable) {
  ASSERT_NO_FATAL_FAILURE(ReferenceThenASmallMessageLimit());
  const int victim = SeededParty();
  const bool kill_leader = rng_() % 2 == 0;
  DelayAll(absl::Milliseconds(15));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job = fed_->Submit({}, kDelayedRoundTimeoutSeconds);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(WaitForAudit(victim, *job, "release", kJobBound))
      << "the release was never reached";
  const std::vector<std::string> before = fed_->AuditKinds(victim, *job);
  double reconnect = 0;
  if (kill_leader) {
    absl::Time restart;
    ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  } else {
    ASSERT_NO_FATAL_FAILURE(KillAndRestartParty(victim));
  }
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  DelayAll(absl::ZeroDuration());
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n"
                                          << fed_->Log(name) << "\n"
                                          << fed_->Log("leader");
  ExpectSameTableOnce(*job);
  ExpectNoDurableStateLeft(*job);
  // The columns were still travelling when the kill came: chunks of them went after it.
  const std::vector<std::string> after = fed_->AuditKinds(victim, *job);
  const auto chunks = [](const std::vector<std::string>& kinds) {
    return std::count(kinds.begin(), kinds.end(), "payload-chunk");
  };
  EXPECT_GT(chunks(after), chunks(before)) << "no released column went after the kill";
  PrintFigures(absl::StrFormat(
      "%s seed=%u killed=%s chunks_before=%d chunks_after=%d job_s=%.2f clean_job_64MiB_s=%.2f",
      Name(), seed_, kill_leader ? "leader" : name, static_cast<int>(chunks(before)),
      static_cast<int>(chunks(after)), Seconds(absl::Now() - start), clean_seconds_));
}

TEST_F(VerticalResumeTest, PartiesKilledDuringIdMatchingAndAtARoundResumeWithTheSameTable) {
  RunReference();
  if (HasFatalFailure()) return;
  const int first = SeededParty();
  const int second = SeededParty();
  const uint32_t at_round = SeededRound();
  DelayAll(absl::Milliseconds(15));
  absl::StatusOr<std::string> job = fed_->Submit({}, kDelayedRoundTimeoutSeconds);
  ASSERT_TRUE(job.ok()) << job.status();
  // 1. During the ID matching, once the party sent its own encrypted list (so the restarted
  //    process must re-encrypt the others' lists with the same key, and align in the same order).
  absl::StatusOr<JobInfo> running = WaitRunning(*job);
  ASSERT_TRUE(running.ok()) << running.status();
  WaitForAudit(first, *job, "id-list", absl::Seconds(4));
  // The audit line is written as the reply is built, the state file's record just after (synced
  // before the reply leaves): give it that moment, so that the kill comes after the answer.
  absl::SleepFor(absl::Milliseconds(200));
  running = fed_->Get(*job);
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->state(), fedanon::v1::JOB_STATE_RUNNING) << running->ShortDebugString();
  ASSERT_EQ(running->round(), 0u) << "the ID matching ended before the kill";
  const std::vector<std::string> sent_before = fed_->AuditKinds(first, *job);
  ASSERT_GE(std::count(sent_before.begin(), sent_before.end(), "id-list"), 1);
  const absl::Time killed_first = absl::Now();
  KillAndRestartParty(first);
  const double restart_first = Seconds(absl::Now() - killed_first);
  // 2. At a seeded round.
  absl::StatusOr<JobInfo> reached = fed_->WaitForRound(*job, at_round, kJobBound);
  ASSERT_TRUE(reached.ok()) << reached.status();
  ASSERT_EQ(reached->state(), fedanon::v1::JOB_STATE_RUNNING)
      << reached->ShortDebugString() << fed_->Log("leader");
  const double first_to_round = Seconds(absl::Now() - killed_first);
  const absl::Time killed_second = absl::Now();
  KillAndRestartParty(second);
  absl::StatusOr<JobInfo> next = fed_->WaitForRound(*job, reached->round() + 1, kJobBound);
  ASSERT_TRUE(next.ok()) << next.status();
  const double second_to_next_round = Seconds(absl::Now() - killed_second);
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  DelayAll(absl::ZeroDuration());
  const std::string first_name = fed_->parties()[static_cast<size_t>(first)];
  const std::string second_name = fed_->parties()[static_cast<size_t>(second)];
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n"
                                          << fed_->Log(first_name) << "\n"
                                          << fed_->Log(second_name) << "\n"
                                          << fed_->Log("leader");
  ExpectSameTableOnce(*job);
  ExpectNoDurableStateLeft(*job);
  for (int i : {first, second}) {
    EXPECT_EQ(fed_->AuditEnd(i, *job), "success=true reason=done");
  }
  // The restarted processes reloaded the job from their state files when asked for it: the first
  // with its ID-matching key and order (it had answered at least its own encryption).
  EXPECT_TRUE(absl::StrContains(fed_->Log(second_name), "reloaded from its durable state"))
      << fed_->Log(second_name);
  EXPECT_FALSE(absl::StrContains(fed_->Log(first_name),
                                 "reloaded from its durable state after "
                                 "a restart of this party: 0 answered"))
      << fed_->Log(first_name);
  PrintFigures(absl::StrFormat(
      "%s seed=%u first=%s (ID matching) second=%s kill_round=%u of %u restart_s=%.3f "
      "first_kill_to_round_s=%.3f second_kill_to_next_round_s=%.3f clean_job_s=%.2f",
      Name(), seed_, first_name, second_name, reached->round(), rounds_, restart_first,
      first_to_round, second_to_next_round, clean_seconds_));
}

TEST_F(VerticalResumeTest, LeaderKilledAtARoundAndRestartedResumesWithTheSameTable) {
  RunReference();
  if (HasFatalFailure()) return;
  const uint32_t at_round = SeededRound();
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  absl::Time restart;
  double reconnect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  absl::StatusOr<JobInfo> next = fed_->WaitForRound(job.id, job.reached.round() + 1, kJobBound);
  ASSERT_TRUE(next.ok()) << next.status();
  const double to_next_round = Seconds(absl::Now() - restart);
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double resume = Seconds(absl::Now() - restart);
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log("leader");
  ExpectSameTableOnce(job.id);
  ExpectDoneAfterOneLeaderRestart(job.id, *end);
  // The view log holds no line twice from the replay: as many proposals as an uninterrupted run.
  PrintFigures(absl::StrFormat(
      "%s seed=%u kill_round=%u of %u parties_reconnected_s=%.2f restart_to_next_round_s=%.3f "
      "restart_to_done_s=%.3f clean_job_s=%.2f",
      Name(), seed_, job.reached.round(), rounds_, reconnect, to_next_round, resume,
      clean_seconds_));
}

TEST_F(VerticalResumeTest, PartyAwayPastTheRejoinDeadlineFailsTheJobNamingIt) {
  RunReference();
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  RunningJob job;
  double detect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAPartyForGood(kRoundTimeoutSeconds, at_round, victim, &job, &detect));
  ExpectNoDurableStateLeft(job.id, /*except=*/victim);
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    if (i == victim) continue;
    EXPECT_EQ(fed_->AuditEnd(i, job.id), "success=false reason=" + job.end.failure_reason());
  }
  PrintFigures(absl::StrFormat("%s seed=%u victim=%s kill_round=%u of %u detect_s=%.3f", Name(),
                               seed_, name, job.reached.round(), rounds_, detect));
}

TEST_F(VerticalResumeTest, CancelWhileTheRestartedLeaderWaitsForAPartyEndsCancelled) {
  RunReference();
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  // The leader and one party go down; the leader comes back, the party does not (yet).
  fed_->KillLeader();
  fed_->KillParty(victim);
  fed_->ResetAdmin();
  DelayAll(absl::ZeroDuration());
  ASSERT_TRUE(fed_->StartLeader().ok());
  std::vector<std::string> others;
  for (const std::string& p : fed_->parties()) {
    if (p != name) others.push_back(p);
  }
  ASSERT_TRUE(fed_->WaitForParties(others)) << fed_->Log("leader");
  absl::StatusOr<JobInfo> waiting = fed_->Get(job.id);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_EQ(waiting->state(), fedanon::v1::JOB_STATE_RUNNING) << "resuming: waits for its ring";
  const absl::Time cancel_at = absl::Now();
  const CliResult cancel = RunBinary(
      BinaryDir() + "/bin/fedanonctl",
      {"--config", fed_->admin_config("admin"), "cancel", job.id, "--reason", "operator stop"},
      fed_->dir() + "/capture");
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double cancel_s = Seconds(absl::Now() - cancel_at);
  EXPECT_EQ(end->state(), JOB_STATE_CANCELLED) << end->failure_reason();
  fed_->ExpectNothingReleased(job.id);
  // The parties that are there are told at once; the absent one when it comes back.
  ExpectNoDurableStateLeft(job.id, /*except=*/victim);
  EXPECT_TRUE(std::filesystem::exists(fed_->party_output_dir(victim) + "/" + job.id + ".state"));
  ASSERT_TRUE(fed_->StartParty(victim).ok());
  ExpectNoDurableStateLeft(job.id);
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    EXPECT_THAT(fed_->AuditEnd(i, job.id), HasSubstr("success=false reason=cancelled"))
        << fed_->parties()[static_cast<size_t>(i)];
  }
  PrintFigures(absl::StrFormat("%s seed=%u victim=%s kill_round=%u of %u cancel_to_end_s=%.3f",
                               Name(), seed_, name, job.reached.round(), rounds_, cancel_s));
}

}  // namespace
}  // namespace fedanon::testing
