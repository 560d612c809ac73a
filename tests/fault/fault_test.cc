// The fault suite (CTest label `fault`, issue #28 "Proven under faults"): real daemons on
// loopback with mutual TLS — fedanon-leader and one fedanon-party per hospital as child processes,
// each party dialling the leader through a TCP proxy the test controls — and, per scenario, a
// fault: kill -9 of a party or of the leader at a seeded random round, a link that black-holes
// for longer or shorter than the round timeout, a cut link, a party slowed to 200 ms per message,
// a party that sends malformed or oversized replies.
//
// Every scenario asserts its outcome and that no partial table exists anywhere (no result at the
// leader, none at any party, no `*.tmp.*` file), that the leader keeps serving, and that a NEW job
// afterwards succeeds. Each prints its measured figures on one `[ fault ]` line.
//
// Durable jobs (docs/operations.md "Durable jobs"): a job whose leader or party is killed and
// restarted, or whose link is cut, resumes and ends DONE with the centralized engine's table
// (released once); a party that stays away past the rejoin deadline (leader.yaml
// `resume_timeout_seconds`, kResumeTimeoutSeconds here) fails the job naming it, and nothing is
// released anywhere. Each resume scenario prints its time to resume.
//
// Replay: the seed is printed (`seed=N`); FEDANON_FAULT_SEED=N reruns the same rounds and victims.
// FEDANON_KEEP_TEST_DIR=1 keeps the kit, data and daemon logs (also kept on any failure).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "spdlog/spdlog.h"
#include "tests/fault/fake_party.h"
#include "tests/fault/fault_federation.h"
#include "tests/support/fault_scenario.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JOB_STATE_DONE;
using fedanon::v1::JOB_STATE_FAILED;
using fedanon::v1::JobInfo;
using ::testing::HasSubstr;

// The round timeout of the jobs a fault hits: short enough that detection is fast, long enough
// for a loaded 2-core CI machine (a round's call takes well under 0.1 s here). Jobs that must
// succeed get kCleanRoundTimeoutSeconds, so that load alone never fails them.
constexpr uint32_t kRoundTimeoutSeconds = 3;
constexpr uint32_t kCleanRoundTimeoutSeconds = 10;

// Data rows of a CSV file (lines after the header).
size_t CsvRows(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines == 0 ? 0 : lines - 1;
}

size_t FileRows(const std::string& path) {
  std::ifstream in(path);
  return CsvRows(std::string(std::istreambuf_iterator<char>(in), {}));
}

// The fixture (seed, federation, the scenarios' common steps): tests/support/fault_scenario.h.
class FaultTest : public FaultScenarioTest {
 protected:
  void SetUp() override {
    SkipUnlessBuiltThenDrawSeed({"fedanon", "fedanon-leader", "fedanon-party"});
  }

  // A job over `ring` (all parties when empty) that must end DONE with every row of the ring's
  // tables at the leader; returns its wall time (submission to DONE) and its rounds.
  void RunCleanJob(const std::vector<std::string>& ring, double* seconds, uint32_t* rounds,
                   uint32_t round_timeout = kCleanRoundTimeoutSeconds) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> job = fed_->Submit(ring, round_timeout);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    if (seconds != nullptr) *seconds = Seconds(absl::Now() - start);
    ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
    if (rounds != nullptr) *rounds = end->round();
    absl::StatusOr<std::string> csv = fed_->Result(*job);
    ASSERT_TRUE(csv.ok()) << csv.status();
    size_t expected = 0;
    for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
      const std::string& p = fed_->parties()[static_cast<size_t>(i)];
      if (ring.empty() || std::find(ring.begin(), ring.end(), p) != ring.end()) {
        expected += FileRows(fed_->party_data_dir(i) + "/table.csv");
      }
    }
    EXPECT_EQ(CsvRows(*csv), expected) << "the integrated table lost or gained rows";
  }

  // The job shows (JobInfo and `fedanonctl status`) that it waits for `party` to connect, within
  // 10 s of its submission.
  void ExpectWaitingFor(const std::string& job_id, const std::string& party) {
    absl::StatusOr<JobInfo> info = absl::NotFoundError("not polled");
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      info = fed_->Get(job_id);
      ASSERT_TRUE(info.ok()) << info.status();
      if (info->waiting_for_parties_size() > 0) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_THAT(info->waiting_for_parties(), ::testing::ElementsAre(party))
        << info->ShortDebugString();
    const CliResult status =
        RunBinary(BinaryDir() + "/bin/fedanonctl",
                  {"--config", fed_->dir() + "/kit/admin/admin.yaml", "status", job_id},
                  fed_->dir() + "/capture");
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_THAT(status.out, HasSubstr("waiting for:   party " + party));
  }

  // A round in [1, rounds - 1] (or 1), drawn from the seed.
  uint32_t SeededRound(uint32_t rounds) {
    if (rounds <= 2) return 1;
    return 1 + static_cast<uint32_t>(rng_() % (rounds - 1));
  }
};

// ---------------------------------------------------------------------------------------------
// Slow party

TEST_F(FaultTest, PartySlowedTo200MsPerMessageStillCompletes) {
  StartFederation();
  double plain = 0, slow = 0;
  uint32_t rounds = 0;
  RunCleanJob({}, &plain, &rounds);
  if (HasFatalFailure()) return;
  // Every chunk either way between hospital-b and the leader arrives 200 ms late.
  fed_->proxy(1).SetDelay(absl::Milliseconds(200));
  RunCleanJob({}, &slow, nullptr);
  if (HasFatalFailure()) return;
  fed_->proxy(1).SetDelay(absl::ZeroDuration());
  PrintFigures(absl::StrFormat("%s rounds=%u job_s=%.2f job_slowed_s=%.2f slowdown_s=%.2f", Name(),
                               rounds, plain, slow, slow - plain));
  EXPECT_GT(slow, plain + 0.4) << "the delay did not apply";
}

// Every party behind a wide-area link (issue #47): delay with jitter, a rate limit and stalls.
// The job ends DONE with the centralized table; every one of its waves of calls (the leader's
// end-of-run line) cost at least one round trip; the links carried the job's bytes at their rate.
TEST_F(FaultTest, AJobOverWideAreaLinksWithStallsReleasesTheCentralizedTable) {
  StartFederation();
  constexpr double kRttSeconds = 0.04;
  constexpr double kBytesPerSecond = 20e6 / 8;  // 20 Mbit/s
  std::vector<LinkStats> before;
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    before.push_back(fed_->proxy(i).stats());
    fed_->proxy(i).SetLink({.one_way_delay = absl::Seconds(kRttSeconds / 2),
                            .jitter = absl::Milliseconds(5),
                            .bytes_per_second = kBytesPerSecond,
                            .stall_every = absl::Milliseconds(700),
                            .stall_length = absl::Milliseconds(200),
                            .seed = seed_ + static_cast<uint64_t>(i)});
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> id = fed_->Submit({}, kCleanRoundTimeoutSeconds);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double wall = Seconds(absl::Now() - start);
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  ExpectReleasedOnceAsCentralized(*id);

  // The leader's count of the job's calls, logged once its run returned.
  const std::regex calls_line("job=" + *id +
                              " round=\\d+ calls to parties: (\\d+) in (\\d+) waves");
  std::smatch m;
  std::string log;
  for (int tries = 0; tries < 100; ++tries) {
    log = fed_->Log("leader");
    if (std::regex_search(log, m, calls_line)) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_FALSE(m.empty()) << "no calls line for " << *id << " in the leader's log";
  const double calls = std::stod(m[1]), waves = std::stod(m[2]);
  EXPECT_GE(calls, waves);
  EXPECT_GE(wall, waves * kRttSeconds) << "a wave took less than the link's round trip";
  uint64_t bytes = 0;
  int stalls = 0;
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    const LinkStats link = fed_->proxy(i).stats();
    const LinkStats& was = before[static_cast<size_t>(i)];
    bytes = std::max(bytes, link.bytes_up - was.bytes_up + link.bytes_down - was.bytes_down);
    stalls += link.stalls_hit - was.stalls_hit;
  }
  EXPECT_GE(wall, static_cast<double>(bytes) / kBytesPerSecond / 2)
      << "a link carried its bytes faster than its rate (each direction has its own)";
  PrintFigures(
      absl::StrFormat("%s job_s=%.2f calls=%.0f waves=%.0f busiest_link_bytes=%u "
                      "stalls_hit=%d",
                      Name(), wall, calls, waves, bytes, stalls));
}

// ---------------------------------------------------------------------------------------------
// kill -9 of a party

TEST_F(FaultTest, PartyKilledAndNotRestartedFailsTheJobPastItsRejoinDeadline) {
  StartFederation();
  uint32_t rounds = 0;
  RunCleanJob({}, nullptr, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound(rounds);
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  RunningJob job;
  double detect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAPartyForGood(kRoundTimeoutSeconds, at_round, victim, &job, &detect));
  EXPECT_LT(detect, kResumeTimeoutSeconds + kRoundTimeoutSeconds + 2.0);
  EXPECT_TRUE(fed_->Health().ok());
  // What an operator sees: `fedanonctl watch` exits 1 with the reason.
  const CliResult watch =
      RunBinary(BinaryDir() + "/bin/fedanonctl",
                {"--config", fed_->dir() + "/kit/admin/admin.yaml", "watch", job.id},
                fed_->dir() + "/capture");
  EXPECT_EQ(watch.exit_code, 1) << watch.out << watch.err;
  EXPECT_THAT(watch.out + watch.err, HasSubstr("party '" + name + "'"));

  // A new job naming the party waits for it (party_wait_seconds), showing whom it waits for,
  // then fails naming it ...
  const absl::Time submitted = absl::Now();
  absl::StatusOr<std::string> with_dead = fed_->Submit({}, kRoundTimeoutSeconds);
  ASSERT_TRUE(with_dead.ok()) << with_dead.status();
  ASSERT_NO_FATAL_FAILURE(ExpectWaitingFor(*with_dead, name));
  absl::StatusOr<JobInfo> refused = fed_->WaitForEnd(*with_dead, kJobBound);
  ASSERT_TRUE(refused.ok()) << refused.status();
  const double waited = Seconds(absl::Now() - submitted);
  EXPECT_EQ(refused->state(), JOB_STATE_FAILED);
  EXPECT_THAT(refused->failure_reason(),
              HasSubstr(absl::StrCat("party '", name, "' did not connect within ",
                                     kPartyWaitSeconds, " s (party_wait_seconds)")));
  EXPECT_GE(waited, kPartyWaitSeconds - 0.1);
  EXPECT_EQ(refused->waiting_for_parties_size(), 0);
  // ... and the survivors run a new job to the end.
  std::vector<std::string> survivors;
  for (const std::string& p : fed_->parties()) {
    if (p != name) survivors.push_back(p);
  }
  double again = 0;
  RunCleanJob(survivors, &again, nullptr);
  // The survivors were told the job failed, with the leader's reason (EndJob success=false, sent
  // before the leader took the next job), and recorded it in their audit files.
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    if (i == victim) continue;
    const std::vector<std::string> kinds = fed_->AuditKinds(i, job.id);
    ASSERT_FALSE(kinds.empty());
    EXPECT_EQ(kinds.front(), "job-start");
    EXPECT_THAT(kinds, ::testing::Not(::testing::Contains("released-table")));
    EXPECT_EQ(fed_->AuditEnd(i, job.id), "success=false reason=" + job.end.failure_reason())
        << fed_->parties()[static_cast<size_t>(i)];
  }
  ExpectNoDurableStateLeft(job.id, /*except=*/victim);
  // The victim still holds the job's state file. The leader restarts before the victim is back;
  // when the victim starts again, the restarted leader tells it that the job failed (issue #47:
  // the parties to tell are kept in the job store), and it deletes its state file.
  const std::string victim_state = fed_->party_output_dir(victim) + "/" + job.id + ".state";
  EXPECT_TRUE(std::filesystem::exists(victim_state));
  fed_->KillLeader();
  fed_->ResetAdmin();
  ASSERT_TRUE(fed_->StartLeader().ok());
  ASSERT_TRUE(fed_->WaitForParties(survivors)) << fed_->Log("leader");
  const absl::Time back = absl::Now();
  ASSERT_TRUE(fed_->StartParty(victim).ok());
  ExpectNoDurableStateLeft(job.id);
  const double told_s = Seconds(absl::Now() - back);
  EXPECT_EQ(fed_->AuditEnd(victim, job.id), "success=false reason=" + job.end.failure_reason());
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_round=%u of %u detect_s=%.3f reason=\"%s\" "
      "new_job_with_it_failed_after_s=%.2f new_job_s=%.2f victim_told_after_leader_restart_s=%.2f",
      Name(), seed_, name, job.reached.round(), rounds, detect, job.end.failure_reason(), waited,
      again, told_s));
}

// Issue #47: a job submitted while a party is away, or while the parties reconnect after a
// leader restart, waits for them (party_wait_seconds) instead of failing at once, and runs.
TEST_F(FaultTest, ANewJobWaitsForItsPartiesToConnectThenRuns) {
  FaultFederationOptions options;
  options.leader_yaml_extra = "party_wait_seconds: 60\n";  // never reached here
  StartFederation(options);
  const int victim = SeededParty();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  fed_->KillParty(victim);
  ASSERT_TRUE(fed_->WaitForPartyGone(name));
  const absl::Time submitted = absl::Now();
  absl::StatusOr<std::string> id = fed_->Submit({}, kCleanRoundTimeoutSeconds);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_NO_FATAL_FAILURE(ExpectWaitingFor(*id, name));
  // Back after a while: the job was waiting, not failed.
  absl::SleepFor(absl::Seconds(1));
  absl::StatusOr<JobInfo> still = fed_->Get(*id);
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_FALSE(admin::IsFinalState(still->state())) << still->ShortDebugString();
  ASSERT_TRUE(fed_->StartParty(victim).ok());
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double party_case = Seconds(absl::Now() - submitted);
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  EXPECT_EQ(end->waiting_for_parties_size(), 0);
  ExpectReleasedOnceAsCentralized(*id);

  // The leader restarted and a job submitted as soon as it listens, while its parties reconnect
  // (the case: it failed with "party 'x' is not connected").
  fed_->KillLeader();
  fed_->ResetAdmin();
  const absl::Time restart = absl::Now();
  ASSERT_TRUE(fed_->StartLeader().ok());
  absl::StatusOr<std::string> after = absl::UnavailableError("not submitted");
  while (absl::Now() < restart + absl::Seconds(20)) {
    after = fed_->Submit({}, kCleanRoundTimeoutSeconds);
    if (after.ok() || !absl::IsUnavailable(after.status())) break;
    fed_->ResetAdmin();
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(after.ok()) << after.status();
  const double submitted_after_restart_s = Seconds(absl::Now() - restart);
  absl::StatusOr<JobInfo> after_end = fed_->WaitForEnd(*after, kJobBound);
  ASSERT_TRUE(after_end.ok()) << after_end.status();
  EXPECT_EQ(after_end->state(), JOB_STATE_DONE) << after_end->failure_reason();
  // Whether the leader had to wait (parties may reconnect before the first submission lands).
  const bool waited = absl::StrContains(fed_->Log("leader"), "job=" + *after + " waiting for");
  PrintFigures(
      absl::StrFormat("%s seed=%u victim=%s party_back_job_s=%.2f submitted_after_restart_s=%.2f "
                      "waited_after_restart=%s restart_to_done_s=%.2f",
                      Name(), seed_, name, party_case, submitted_after_restart_s,
                      waited ? "yes" : "no", Seconds(absl::Now() - restart)));
}

TEST_F(FaultTest, PartyKilledAtASeededRoundAndRestartedResumesTheJob) {
  StartFederation();
  uint32_t rounds = 0;
  double clean = 0;
  RunCleanJob({}, &clean, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound(rounds);
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  fed_->KillParty(victim);
  const absl::Time killed = absl::Now();
  // Restarted at once: it reconnects, the leader repeats the request it lost (or sends the next
  // one), and the party goes on from its durable state.
  ASSERT_TRUE(fed_->StartParty(victim).ok());
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double resume = Seconds(absl::Now() - killed);
  DelayAll(absl::ZeroDuration());
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log(name);
  ExpectReleasedOnceAsCentralized(job.id);
  ExpectNoDurableStateLeft(job.id);
  // The restarted process went on writing the job's audit file, up to its end.
  const std::vector<std::string> kinds = fed_->AuditKinds(victim, job.id);
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), "job-start");
  EXPECT_EQ(fed_->AuditEnd(victim, job.id), "success=true reason=done");
  // Whether the new process had to reload the job (it was asked something of it after the kill).
  const bool reloaded = absl::StrContains(fed_->Log(name), "reloaded from its durable state");
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_round=%u of %u outcome=%s reloaded=%s kill_to_done_s=%.3f "
      "clean_job_s=%.2f",
      Name(), seed_, name, job.reached.round(), rounds, fedanon::v1::JobState_Name(end->state()),
      reloaded ? "yes" : "no", resume, clean));
}

// Issue #47 (resume gaps): kills in the job's last steps on real daemons. A job whose recipient
// is hospital-a (so its rows travel the secure union): one party is killed as soon as it answered
// its first final-check hop, another as soon as it sent its union rows; each is started again at
// once. The job ends DONE at the recipient with every row, written once.
TEST_F(FaultTest, PartiesKilledDuringTheFinalCheckAndTheUnionResumeTheJob) {
  StartFederation();
  RunCleanJob({}, nullptr, nullptr);
  if (HasFatalFailure()) return;
  const int recipient = 0;
  const int in_check = SeededParty();
  const int in_union = 1 + static_cast<int>(rng_() % (fed_->parties().size() - 1));
  DelayAll(absl::Milliseconds(15));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job =
      fed_->Submit({}, kCleanRoundTimeoutSeconds, fed_->parties()[recipient]);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(WaitForAudit(in_check, *job, "final-check")) << "the final check was never reached";
  fed_->KillParty(in_check);
  ASSERT_TRUE(fed_->StartParty(in_check).ok());
  ASSERT_TRUE(WaitForAudit(in_union, *job, "union-rows")) << "the union was never reached";
  fed_->KillParty(in_union);
  ASSERT_TRUE(fed_->StartParty(in_union).ok());
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double job_s = Seconds(absl::Now() - start);
  DelayAll(absl::ZeroDuration());
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log("leader");
  size_t expected = 0;
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    expected += FileRows(fed_->party_data_dir(i) + "/table.csv");
  }
  EXPECT_EQ(FileRows(fed_->party_output_dir(recipient) + "/" + *job + ".csv"), expected);
  for (const auto& entry : std::filesystem::directory_iterator(fed_->party_output_dir(recipient))) {
    EXPECT_FALSE(absl::StrContains(entry.path().filename().string(), ".tmp."))
        << entry.path() << " left behind";
  }
  ExpectNoDurableStateLeft(*job);
  // Whether each restarted process had to reload the job (it was asked a step of it afterwards).
  auto reloaded = [&](int i) {
    return absl::StrContains(fed_->Log(fed_->parties()[static_cast<size_t>(i)]),
                             "reloaded from its durable state")
               ? "yes"
               : "no";
  };
  // The party killed in the final check is asked again after it (its next hop, its union step):
  // the new process went on from its state file.
  EXPECT_STREQ(reloaded(in_check), "yes") << fed_->Log(fed_->parties()[in_check]);
  PrintFigures(absl::StrFormat(
      "%s seed=%u killed_in_final_check=%s reloaded=%s killed_in_union=%s reloaded=%s job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(in_check)], reloaded(in_check),
      fed_->parties()[static_cast<size_t>(in_union)], reloaded(in_union), job_s));
}

// Issue #47 (resume gaps): the secure union's list in chunks. Under max_message_bytes: 4096 every
// union list travels in 2 KiB chunks. A seeded party before the recipient is killed as soon as
// it answered its hop (its list is being fetched chunk by chunk), and the recipient, hospital-a,
// as soon as it has received a chunk of the whole list; each is started again at once. The one
// derives its chunks again from its state file, the other has the chunks it had received. The
// job ends DONE at the recipient with the centralized table, written once, no state left.
TEST_F(FaultTest, UnderASmallMessageLimitKillsDuringTheChunkedUnionResumeTheJob) {
  FaultFederationOptions options;
  options.leader_yaml_extra = "max_message_bytes: 4096\n";
  StartFederation(options);
  if (HasFatalFailure()) return;
  EXPECT_THAT(fed_->Log("leader"), HasSubstr("payload chunks under 4096 bytes"));
  const int recipient = 0;
  const int in_union = 1 + static_cast<int>(rng_() % (fed_->parties().size() - 1));
  const auto count = [](const std::vector<std::string>& kinds, const char* kind) {
    return static_cast<int>(std::count(kinds.begin(), kinds.end(), kind));
  };
  DelayAll(absl::Milliseconds(15));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job =
      fed_->Submit({}, kCleanRoundTimeoutSeconds, fed_->parties()[recipient]);
  ASSERT_TRUE(job.ok()) << job.status();
  // 1. A hop answered, its list not yet fetched whole.
  ASSERT_TRUE(WaitForAudit(in_union, *job, "union-rows", absl::Seconds(30)))
      << "the union was never reached";
  // The recipient's chunk receipts so far are the bin check's (protocol 4.0: its comparison
  // messages travel in chunks too); the list reaches it only after every hop.
  const int receipts_before_the_list = count(fed_->AuditKinds(recipient, *job), "chunk-receipt");
  // The audit line is written as the reply is built, the state file's record just after
  // (synced before the reply leaves): give it that moment.
  absl::SleepFor(absl::Milliseconds(100));
  const int served_before = count(fed_->AuditKinds(in_union, *job), "payload-chunk");
  fed_->KillParty(in_union);
  ASSERT_TRUE(fed_->StartParty(in_union).ok());
  // 2. The recipient, once it holds part of the whole list.
  ASSERT_TRUE(
      WaitForAudit(recipient, *job, "chunk-receipt", absl::Seconds(30), receipts_before_the_list))
      << "no chunk of the list reached the recipient";
  absl::SleepFor(absl::Milliseconds(30));
  const int received_before = count(fed_->AuditKinds(recipient, *job), "chunk-receipt");
  // The chunks it received are in its spill directory (ExpectNoDurableStateLeft: gone at the end).
  EXPECT_TRUE(
      std::filesystem::is_directory(fed_->party_output_dir(recipient) + "/" + *job + ".spill"));
  fed_->KillParty(recipient);
  ASSERT_TRUE(fed_->StartParty(recipient).ok());
  DelayAll(absl::ZeroDuration());  // both kills are done: the rest at full speed
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double job_s = Seconds(absl::Now() - start);
  ASSERT_EQ(end->state(), JOB_STATE_DONE)
      << end->failure_reason() << "\n"
      << fed_->Log(fed_->parties()[static_cast<size_t>(in_union)]) << "\n"
      << fed_->Log(fed_->parties()[recipient]) << "\n"
      << fed_->Log("leader");
  absl::StatusOr<std::string> table =
      base::ReadFile(fed_->party_output_dir(recipient) + "/" + *job + ".csv");
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<std::string> expected;
  ASSERT_NO_FATAL_FAILURE(CentralizedLines(fed_->spec_path(), "central", &expected));
  EXPECT_EQ(SortedLines(*table), expected) << "the recipient's table differs from the centralized";
  for (const auto& entry : std::filesystem::directory_iterator(fed_->party_output_dir(recipient))) {
    EXPECT_FALSE(absl::StrContains(entry.path().filename().string(), ".tmp."))
        << entry.path() << " left behind";
  }
  ExpectNoDurableStateLeft(*job);
  // Both were asked the job again after their restart, and went on from their state files:
  // the killed hop served chunks of its list after the kill, the recipient received the rest.
  const auto reloaded = [&](int i) {
    return absl::StrContains(fed_->Log(fed_->parties()[static_cast<size_t>(i)]),
                             "reloaded from its durable state");
  };
  EXPECT_TRUE(reloaded(in_union)) << fed_->Log(fed_->parties()[static_cast<size_t>(in_union)]);
  EXPECT_TRUE(reloaded(recipient)) << fed_->Log(fed_->parties()[recipient]);
  const int served_after = count(fed_->AuditKinds(in_union, *job), "payload-chunk");
  const int received_after = count(fed_->AuditKinds(recipient, *job), "chunk-receipt");
  EXPECT_GT(served_after, served_before) << "no chunk of the hop's list went after the kill";
  EXPECT_GT(received_after, received_before) << "no chunk reached the recipient after the kill";
  PrintFigures(absl::StrFormat(
      "%s seed=%u killed_in_union=%s chunks_served=%d->%d recipient_chunks_received=%d->%d "
      "rows=%d job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(in_union)], served_before, served_after,
      received_before, received_after, static_cast<int>(expected.size()) - 1, job_s));
}

// The party's host crashes (no FIN reaches the leader: its link is black-holed when the party
// is killed) and the party comes back at once on a fresh connection (here straight to the
// leader): the leader replaces the stale stream with the new one, and the new process, which
// knows nothing of the job, is the one asked next.
TEST_F(FaultTest, PartyHostCrashAndRestartReplacesTheStaleStreamAndResumesTheJob) {
  StartFederation();
  uint32_t rounds = 0;
  RunCleanJob({}, nullptr, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const uint32_t at_round = SeededRound(rounds);
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  // A long round timeout, so that an end caused by the new connection cannot be mistaken for
  // the timeout (the restarted process's start-up counts in the time to detect).
  constexpr uint32_t kTimeout = 10;
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kTimeout, at_round, &job));
  fed_->proxy(victim).BlackHole(true);
  fed_->KillParty(victim);
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(fed_->StartParty(victim, /*direct=*/true).ok());
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, absl::Seconds(30));
  const double detect = Seconds(absl::Now() - killed);
  fed_->proxy(victim).BlackHole(false);
  DelayAll(absl::ZeroDuration());
  ASSERT_TRUE(end.ok()) << end.status();
  // The new connection ends the wait for the old one ("disconnected (replaced by a new
  // connection ...)"), the request is repeated to the new process, which goes on from its
  // durable state: never the round timeout.
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  EXPECT_LT(detect, kTimeout - 2.0);
  ExpectReleasedOnceAsCentralized(job.id);
  ExpectNoDurableStateLeft(job.id);
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  double again = 0;
  RunCleanJob({}, &again, nullptr);
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_round=%u of %u outcome=%s kill_to_done_s=%.3f new_job_s=%.2f",
      Name(), seed_, name, job.reached.round(), rounds, fedanon::v1::JobState_Name(end->state()),
      detect, again));
}

// ---------------------------------------------------------------------------------------------
// kill -9 of the leader

TEST_F(FaultTest, LeaderKilledMidJobAndRestartedResumesTheJob) {
  StartFederation();
  uint32_t rounds = 0;
  double clean = 0;
  RunCleanJob({}, &clean, &rounds);
  if (HasFatalFailure()) return;
  const uint32_t at_round = SeededRound(rounds);
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  absl::Time restart;
  double reconnect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  // The job resumes by itself once its parties are back: replayed from the job store, the
  // interrupted round re-sent byte-identical, answered from the parties' stored replies.
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double resume = Seconds(absl::Now() - restart);
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log("leader");
  ExpectDoneAfterOneLeaderRestart(job.id, *end);
  ExpectReleasedOnceAsCentralized(job.id);
  double again = 0;
  RunCleanJob({}, &again, nullptr);
  PrintFigures(
      absl::StrFormat("%s seed=%u kill_round=%u of %u parties_reconnected_s=%.2f outcome=%s "
                      "restart_to_done_s=%.3f clean_job_s=%.2f new_job_s=%.2f",
                      Name(), seed_, job.reached.round(), rounds, reconnect,
                      fedanon::v1::JobState_Name(end->state()), resume, clean, again));
}

// ---------------------------------------------------------------------------------------------
// Link faults (the proxy)

TEST_F(FaultTest, LinkDownLongerThanTheRoundTimeoutFailsTheJobNamingTheParty) {
  StartFederation();
  uint32_t rounds = 0;
  RunCleanJob({}, nullptr, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  const uint32_t at_round = SeededRound(rounds);
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  fed_->proxy(victim).BlackHole(true);
  const absl::Time down = absl::Now();
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, absl::Seconds(30));
  const double detect = Seconds(absl::Now() - down);
  fed_->proxy(victim).BlackHole(false);
  DelayAll(absl::ZeroDuration());
  ASSERT_TRUE(end.ok()) << end.status();
  // A link down past the round timeout fails the job by design: a request that is not answered
  // in time is not repeated (only a dropped connection is waited for).
  EXPECT_EQ(end->state(), JOB_STATE_FAILED);
  EXPECT_THAT(end->failure_reason(), HasSubstr("party '" + name + "' did not answer within " +
                                               std::to_string(kRoundTimeoutSeconds) + " s"));
  // The leader waits for the party only while it has a request out to it: at most the round
  // timeout, plus the other parties' hops of the round before it turns to this one.
  EXPECT_GE(detect, kRoundTimeoutSeconds - 0.1);
  EXPECT_LT(detect, 2.0 * kRoundTimeoutSeconds + 2.0);
  fed_->ExpectNothingReleased(job.id);
  // The link is back: the party's stream survived (its late reply is dropped by the leader) and
  // the next job runs.
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  double again = 0;
  RunCleanJob({}, &again, nullptr);
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s down_at_round=%u round_timeout_s=%u detect_s=%.2f reason=\"%s\" "
      "new_job_s=%.2f proxy_connections=%d",
      Name(), seed_, name, job.reached.round(), kRoundTimeoutSeconds, detect, end->failure_reason(),
      again, fed_->proxy(victim).accepted()));
}

TEST_F(FaultTest, LinkDownShorterThanTheRoundTimeoutDoesNotFailTheJob) {
  StartFederation();
  uint32_t rounds = 0;
  double plain = 0;
  RunCleanJob({}, &plain, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  const uint32_t at_round = SeededRound(rounds);
  constexpr uint32_t kTimeout = 6;
  const absl::Duration outage = absl::Milliseconds(2500);
  const absl::Time start = absl::Now();
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kTimeout, at_round, &job));
  fed_->proxy(victim).BlackHole(true);
  absl::SleepFor(outage);
  fed_->proxy(victim).BlackHole(false);
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  const double total = Seconds(absl::Now() - start);
  DelayAll(absl::ZeroDuration());
  ASSERT_TRUE(end.ok()) << end.status();
  // Bytes held back by the outage arrive late but intact (TCP would retransmit them); keepalive
  // (20 s / 10 s) does not fire in 2.5 s; the pending call's deadline is not reached.
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  EXPECT_EQ(fed_->proxy(victim).accepted(), 1) << "the party had to reconnect";
  absl::StatusOr<std::string> csv = fed_->Result(job.id);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(CsvRows(*csv), static_cast<size_t>(fed_->total_rows()));
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s down_at_round=%u outage_s=%.1f round_timeout_s=%u job_s=%.2f "
      "clean_job_s=%.2f",
      Name(), seed_, name, job.reached.round(), Seconds(outage), kTimeout, total, plain));
}

TEST_F(FaultTest, LinkCutMidJobIsAbsorbedAndTheJobFinishes) {
  StartFederation();
  uint32_t rounds = 0;
  RunCleanJob({}, nullptr, &rounds);
  if (HasFatalFailure()) return;
  const int victim = SeededParty();
  const std::string name = fed_->parties()[static_cast<size_t>(victim)];
  const uint32_t at_round = SeededRound(rounds);
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_round, &job));
  fed_->proxy(victim).Cut();
  const absl::Time cut = absl::Now();
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, absl::Seconds(30));
  const double detect = Seconds(absl::Now() - cut);
  DelayAll(absl::ZeroDuration());
  ASSERT_TRUE(end.ok()) << end.status();
  // The party reconnects (its job state intact in its process) and the leader repeats the request
  // the cut lost: the job ends done, well within the rejoin deadline.
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  EXPECT_LT(detect, kResumeTimeoutSeconds + kRoundTimeoutSeconds + 2.0);
  ExpectReleasedOnceAsCentralized(job.id);
  ExpectNoDurableStateLeft(job.id);
  const absl::Time back = absl::Now();
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  const double rejoin = Seconds(absl::Now() - back);
  EXPECT_GE(fed_->proxy(victim).accepted(), 2) << "the party did not reconnect";
  double again = 0;
  RunCleanJob({}, &again, nullptr);
  PrintFigures(
      absl::StrFormat("%s seed=%u victim=%s cut_at_round=%u outcome=%s cut_to_done_s=%.3f "
                      "listed_again_after_s=%.2f new_job_s=%.2f",
                      Name(), seed_, name, job.reached.round(),
                      fedanon::v1::JobState_Name(end->state()), detect, rejoin, again));
}

// ---------------------------------------------------------------------------------------------
// A party sending malformed or oversized replies (the in-process fake party has hospital-c's
// real certificate; tests/fuzz/fuzz_leader.cc covers malformed replies in depth in-process, this
// is one pass through a real leader process and its gRPC server).

TEST_F(FaultTest, MalformedAndOversizedRepliesFailTheJobButNotTheLeader) {
  spdlog::set_level(spdlog::level::warn);  // the in-process party's own progress lines
  FaultFederationOptions options;
  options.external = {2};
  StartFederation(options);
  if (HasFatalFailure()) return;
  const std::string name = fed_->parties()[2];
  absl::StatusOr<std::unique_ptr<FakeParty>> fake =
      FakeParty::Create(name, fed_->party_dir(2), fed_->party_data_dir(2),
                        fed_->party_output_dir(2), fed_->proxy(2).address());
  ASSERT_TRUE(fake.ok()) << fake.status();
  (*fake)->Start();
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  double honest = 0;
  RunCleanJob({}, &honest, nullptr);  // the fake party answers honestly until told otherwise
  if (HasFatalFailure()) return;

  struct Case {
    Corruption corruption;
    const char* label;
    std::string reason;  // expected in the failure reason; empty: the job must end DONE
  };
  const std::vector<Case> cases = {
      // The leader cannot open the last hop (sealed for it by the ring's last party): the reason
      // names that party, then the sealed box's own error.
      {Corruption::kGarbageCiphertext, "garbage_ciphertext",
       "party '" + name + "' sent a secure-sum reply the leader cannot open: "},
      {Corruption::kWrongReplyKind, "wrong_reply_kind", "party '" + name + "'"},
      // Read (the leader's server reads every parsable message) and refused by name and size.
      {Corruption::kOversized, "oversized_65MiB", "party '" + name + "' sent a reply of 65.0 MiB"},
      // Over what the leader's server once read (128 MiB, then the stream just ended and the
      // request went again after the party reconnected): refused by name and size too.
      {Corruption::kOversized200MiB, "oversized_200MiB",
       "party '" + name + "' sent a reply of 200.0 MiB"},
  };
  std::string figures;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
    (*fake)->CorruptNext(c.corruption);
    const absl::Time start = absl::Now();
    // Building, sending and parsing an oversized reply takes 1.7 s (65 MiB) and 5 s (200 MiB)
    // here, and three times that on a loaded CI machine (65 MiB once took over 3 s there and the
    // job failed on the round timeout instead): those cases get 30 s.
    const bool oversized =
        c.corruption == Corruption::kOversized || c.corruption == Corruption::kOversized200MiB;
    absl::StatusOr<std::string> job = fed_->Submit({}, oversized ? 30 : kRoundTimeoutSeconds);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_TRUE((*fake)->corrupted());
    EXPECT_EQ(end->state(), JOB_STATE_FAILED);
    EXPECT_THAT(end->failure_reason(), HasSubstr(c.reason));
    if (oversized) {
      EXPECT_THAT(end->failure_reason(), HasSubstr("over the 64 MiB message limit"));
      // Refused on the stream it came on: the party did not have to reconnect.
      EXPECT_EQ((*fake)->sessions(), 1);
    }
    fed_->ExpectNothingReleased(*job);
    EXPECT_TRUE(fed_->LeaderRunning()) << fed_->Log("leader");
    EXPECT_TRUE(fed_->Health().ok());
    absl::StrAppendFormat(&figures, " %s: %s_after_s=%.2f reason=\"%s\";", c.label,
                          c.reason.empty() ? "done" : "failed", Seconds(absl::Now() - start),
                          end->failure_reason());
  }
  // The leader serves the next job, with the same (now honest) party.
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  double again = 0;
  RunCleanJob({}, &again, nullptr);
  PrintFigures(absl::StrFormat(
      "%s honest_job_s=%.2f%s new_job_s=%.2f fake_sessions=%d leader_peak_rss_mib=%.0f", Name(),
      honest, figures, again, (*fake)->sessions(), PeakRssMiB(fed_->leader_pid())));
  (*fake)->Stop();
}

}  // namespace
}  // namespace fedanon::testing
