#include "tests/support/fault_scenario.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {

using fedanon::v1::JobInfo;

std::string FaultScenarioTest::Name() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

std::vector<std::string> FaultScenarioTest::SortedLines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (!lines.empty()) std::sort(lines.begin() + 1, lines.end());
  return lines;
}

void FaultScenarioTest::SkipUnlessBuiltThenDrawSeed(const std::vector<std::string>& programs) {
  for (const std::string& bin : programs) {
    if (!std::filesystem::exists(BinaryDir() + "/bin/" + bin)) {
      GTEST_SKIP() << "build " << absl::StrJoin(programs.begin(), programs.end() - 1, ", ")
                   << " and " << programs.back() << " first";
    }
  }
  seed_ = FaultSeed();
  rng_.seed(seed_);
  std::cout << "[ fault ] " << Name() << " seed=" << seed_
            << " (replay: FEDANON_FAULT_SEED=" << seed_ << ")" << std::endl;
}

void FaultScenarioTest::StartFederation(FaultFederationOptions options) {
  options.leader_yaml_extra +=
      absl::StrCat("resume_timeout_seconds: ", kResumeTimeoutSeconds, "\n");
  if (!absl::StrContains(options.leader_yaml_extra, "party_wait_seconds:")) {
    options.leader_yaml_extra += absl::StrCat("party_wait_seconds: ", kPartyWaitSeconds, "\n");
  }
  fed_ = std::make_unique<FaultFederation>(options);
  const absl::Status st = fed_->Start();
  ASSERT_TRUE(st.ok()) << st << "\n" << fed_->Log("leader");
}

void FaultScenarioTest::DelayAll(absl::Duration d) {
  for (size_t i = 0; i < fed_->parties().size(); ++i) {
    fed_->proxy(static_cast<int>(i)).SetDelay(d);
  }
}

void FaultScenarioTest::StartJobAtRound(uint32_t round_timeout_seconds, uint32_t at_round,
                                        RunningJob* job) {
  DelayAll(absl::Milliseconds(15));
  absl::StatusOr<std::string> id = fed_->Submit({}, round_timeout_seconds);
  ASSERT_TRUE(id.ok()) << id.status();
  job->id = *id;
  absl::StatusOr<JobInfo> reached = fed_->WaitForRound(job->id, at_round, kJobBound);
  ASSERT_TRUE(reached.ok()) << reached.status();
  ASSERT_EQ(reached->state(), fedanon::v1::JOB_STATE_RUNNING)
      << "the job ended before round " << at_round << ": " << reached->ShortDebugString();
  job->reached = *reached;
}

void FaultScenarioTest::KillAndRestartLeader(absl::Time* restart, double* reconnect_s) {
  fed_->KillLeader();
  fed_->ResetAdmin();
  DelayAll(absl::ZeroDuration());
  const absl::Time started = absl::Now();
  if (restart != nullptr) *restart = started;
  ASSERT_TRUE(fed_->StartLeader().ok());
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties())) << fed_->Log("leader");
  if (reconnect_s != nullptr) *reconnect_s = Seconds(absl::Now() - started);
}

void FaultScenarioTest::KillAPartyForGood(uint32_t round_timeout_seconds, uint32_t at_round,
                                          int victim, RunningJob* job, double* detect_s) {
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(round_timeout_seconds, at_round, job));
  fed_->KillParty(victim);
  const absl::Time killed = absl::Now();
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job->id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  *detect_s = Seconds(absl::Now() - killed);
  DelayAll(absl::ZeroDuration());
  job->end = *end;
  // The leader waits for it up to the rejoin deadline (seen when its socket closes, or at the
  // leader's next request to it), then fails the job naming it.
  const std::string& name = fed_->parties()[static_cast<size_t>(victim)];
  EXPECT_EQ(end->state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(end->failure_reason(),
              ::testing::HasSubstr("party '" + name + "' did not come back within " +
                                   std::to_string(kResumeTimeoutSeconds) + " s"));
  EXPECT_GE(*detect_s, kResumeTimeoutSeconds - 0.1);
  fed_->ExpectNothingReleased(job->id);
}

void FaultScenarioTest::ExpectDoneAfterOneLeaderRestart(const std::string& job_id,
                                                        const JobInfo& end) {
  ExpectNoDurableStateLeft(job_id);
  EXPECT_THAT(
      end.report().warnings(),
      ::testing::Contains(::testing::HasSubstr("resumed 1 time(s) after a leader restart")));
  // The parties: one job from start to end, told that it is done.
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    const std::vector<std::string> kinds = fed_->AuditKinds(i, job_id);
    ASSERT_FALSE(kinds.empty()) << fed_->parties()[static_cast<size_t>(i)];
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "job-start"), 1);
    EXPECT_EQ(fed_->AuditEnd(i, job_id), "success=true reason=done")
        << fed_->parties()[static_cast<size_t>(i)];
  }
}

void FaultScenarioTest::ExpectStoredOnceAtTheLeader(const std::string& job_id) {
  size_t results = 0;
  for (const auto& e : std::filesystem::directory_iterator(fed_->leader_data_dir() + "/results")) {
    results += absl::StrContains(e.path().filename().string(), job_id) ? 1 : 0;
  }
  EXPECT_EQ(results, 1u) << "the released table must be written exactly once";
}

void FaultScenarioTest::CentralizedLines(const std::string& spec_path, const std::string& name,
                                         std::vector<std::string>* lines) {
  const std::string central = fed_->dir() + "/capture/" + name + ".csv";
  if (!std::filesystem::exists(central)) {
    std::ifstream federated(spec_path);
    std::string spec, line;
    while (std::getline(federated, line)) {
      if (!absl::StartsWith(line, "partitioning:")) spec += line + "\n";
    }
    const std::string central_spec = fed_->gen_dir() + "/" + name + ".yaml";  // beside tax/
    std::ofstream(central_spec) << spec;
    const CliResult run = RunBinary(BinaryDir() + "/bin/fedanon",
                                    {"anonymize", "--spec", central_spec, "--input",
                                     fed_->gen_dir() + "/table.csv", "--output", central},
                                    fed_->dir() + "/capture");
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  }
  std::ifstream in(central);
  *lines = SortedLines(std::string(std::istreambuf_iterator<char>(in), {}));
}

void FaultScenarioTest::ExpectReleasedOnceAsCentralized(const std::string& job_id) {
  absl::StatusOr<std::string> csv = fed_->Result(job_id);
  ASSERT_TRUE(csv.ok()) << csv.status();
  std::vector<std::string> expected;
  ASSERT_NO_FATAL_FAILURE(CentralizedLines(fed_->spec_path(), "central", &expected));
  EXPECT_EQ(SortedLines(*csv), expected) << "the released table differs from the centralized one";
  ExpectStoredOnceAtTheLeader(job_id);
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    for (const auto& e : std::filesystem::directory_iterator(fed_->party_output_dir(i))) {
      const std::string file = e.path().filename().string();
      EXPECT_FALSE(absl::StrContains(file, job_id + ".csv")) << file;
      // A table's temporary file never; the ledger's may be there while a party rewrites it.
      EXPECT_FALSE(absl::StrContains(file, job_id) && absl::StrContains(file, ".tmp.")) << file;
    }
  }
}

bool FaultScenarioTest::WaitForAudit(int i, const std::string& job_id, const std::string& kind,
                                     absl::Duration timeout, int more_than) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const std::vector<std::string> kinds = fed_->AuditKinds(i, job_id);
    if (std::count(kinds.begin(), kinds.end(), kind) > more_than) return true;
    absl::StatusOr<JobInfo> info = fed_->Get(job_id);
    if (info.ok() && admin::IsFinalState(info->state())) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return false;
}

void FaultScenarioTest::ExpectNoDurableStateLeft(const std::string& job_id, int except) {
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    if (i == except) continue;
    const std::string state = fed_->party_output_dir(i) + "/" + job_id + ".state";
    for (int t = 0;
         t < 1000 && (std::filesystem::exists(state) || fed_->AuditEnd(i, job_id).empty()); ++t) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_FALSE(std::filesystem::exists(state)) << fed_->parties()[static_cast<size_t>(i)];
    // The secure union's spill files go with it (party/chunk_file.h).
    const std::string spill = fed_->party_output_dir(i) + "/" + job_id + ".spill";
    EXPECT_FALSE(std::filesystem::exists(spill)) << fed_->parties()[static_cast<size_t>(i)];
  }
}

}  // namespace fedanon::testing
