// Local recoding jobs (`recoding: local`, issue #31) under real-daemon faults: the fault suite's
// harness (tests/fault/fault_federation.h, fixture tests/support/fault_scenario.h) running
// gen-data's 300 rows with a local-recoding spec, the daemons killed with SIGKILL and restarted
// on their data directories:
//
// - horizontal (3 parties, LKC with C < 1): the leader killed mid-waves (at a seeded step);
// - horizontal: a party killed mid-waves (seeded party and step) and restarted at once;
// - vertical (2 parties, k-anonymity): the leader, and in another case a seeded party, killed
//   after the ID matching, after a seeded wave (read from the leader's log line "job=J wave=W
//   local recoding", written when the wave is committed).
//
// Each job must end DONE with the release of an uninterrupted run on the same federation and of
// `fedanon anonymize` on the union (the joined table) with the same spec, as a multiset of rows,
// and the report's steps equal to both runs' steps; the table stored once at the leader, none at
// any party, no temporary file left anywhere; every party's durable state let go. One `[ fault ]`
// line per case; FEDANON_FAULT_SEED=N replays the seeded points.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/fault/fault_federation.h"
#include "tests/support/fault_scenario.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JOB_STATE_DONE;
using fedanon::v1::JobInfo;

constexpr uint32_t kRoundTimeoutSeconds = 5;

// tests/cli/local_recoding_daemons_test.cc's specs (gen-data's Adult-like schema).
constexpr char kHorizontalSpec[] = R"(name: fault-local-horizontal
partitioning: horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: education, role: qid, taxonomy: tax/education.csv}
  - {name: marital-status, role: sensitive}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}
  - {name: sex, role: qid, taxonomy: tax/sex.csv}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 2, K: 20, C: 0.5, sensitive_values: [Divorced, Separated]}
score: infogain
missing: drop
recoding: local
)";

// `party: partyN` is renamed to the federation's parties by the harness.
constexpr char kVerticalSpec[] = R"(name: fault-local-vertical
partitioning: vertical
attributes:
  - {name: id, role: id}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1, party: party1}
  - {name: education, role: qid, taxonomy: tax/education.csv, party: party1}
  - {name: marital-status, role: sensitive, party: party1}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv, party: party1}
  - {name: sex, role: qid, taxonomy: tax/sex.csv, party: party2}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1, party: party2}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv, party: party2}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy:
  model: templates
  templates:
    - {qid: [age, education, occupation, sex, hours-per-week, native-country], k: 20}
score: infogain
missing: drop
recoding: local
)";

// One step as "round attribute value [children] records score", comparable across the proto and
// the centralized JSON report (the score printed with full precision).
std::string StepLine(const std::string& attribute, const std::string& value,
                     const std::vector<std::string>& children, uint64_t records, double score) {
  std::string line = absl::StrCat(attribute, " ", value, " [");
  for (const std::string& c : children) absl::StrAppend(&line, c, ";");
  absl::StrAppendFormat(&line, "] %u %.17g", records, score);
  return line;
}

std::vector<std::string> StepLines(const fedanon::v1::Report& report) {
  std::vector<std::string> lines;
  for (const auto& s : report.steps()) {
    lines.push_back(StepLine(s.attribute(), s.value(), {s.children().begin(), s.children().end()},
                             s.records(), s.score()));
  }
  return lines;
}

class LocalResumeTest : public FaultScenarioTest {
 protected:
  void SetUp() override {
    SkipUnlessBuiltThenDrawSeed({"fedanon", "fedanon-leader", "fedanon-party"});
  }

  // The federation (300 rows) with the local spec, an uninterrupted run (the reference) and the
  // centralized run on the union (or joined table).
  void StartWithReferences(bool vertical, const std::string& leader_yaml_extra = "", int rows = 300,
                           const std::string& spec = "") {
    FaultFederationOptions options;
    options.rows = rows;
    options.vertical = vertical;
    options.parties = vertical ? 2 : 3;
    options.spec = !spec.empty() ? spec : vertical ? kVerticalSpec : kHorizontalSpec;
    options.leader_yaml_extra = leader_yaml_extra;
    ASSERT_NO_FATAL_FAILURE(StartFederation(options));
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> job = fed_->Submit({}, kRoundTimeoutSeconds);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << fed_->Log("leader");
    clean_seconds_ = Seconds(absl::Now() - start);
    ASSERT_EQ(end->report().recoding(), fedanon::v1::RECODING_LOCAL);
    reference_steps_ = StepLines(end->report());
    reference_groups_ = end->report().groups();
    ASSERT_GT(reference_steps_.size(), 4u) << "the job needs a few waves to be hit mid-way";
    absl::StatusOr<std::string> csv = fed_->Result(*job);
    ASSERT_TRUE(csv.ok()) << csv.status();
    reference_ = SortedLines(*csv);
    ASSERT_EQ(reference_.size(), static_cast<size_t>(fed_->total_rows()) + 1);
    if (vertical) {
      // The leader's log names each wave of the job.
      for (uint32_t w = 1; absl::StrContains(fed_->Log("leader"), WaveLine(*job, w)); ++w) {
        waves_ = w;
      }
      ASSERT_GE(waves_, 2u) << fed_->Log("leader");
    }

    // `fedanon anonymize` on gen-data's table.csv (the union; the joined table for vertical)
    // with the job's own spec.
    const std::string central = fed_->dir() + "/capture/central.csv";
    const std::string report = fed_->dir() + "/capture/central.json";
    const CliResult run = RunBinary(
        BinaryDir() + "/bin/fedanon",
        {"anonymize", "--spec", fed_->spec_path(), "--input", fed_->gen_dir() + "/table.csv",
         "--output", central, "--report", report, "--quiet"},
        fed_->dir() + "/capture");
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    std::ifstream in(central);
    central_ = SortedLines(std::string(std::istreambuf_iterator<char>(in), {}));
    std::ifstream rin(report);
    const nlohmann::json json = nlohmann::json::parse(rin, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(json.is_object() && json["steps"].is_array()) << report;
    for (const auto& s : json["steps"]) {
      // The report is proto JSON: a uint64 is a string.
      const nlohmann::json& r = s["records"];
      const uint64_t records = r.is_string() ? std::stoull(r.get<std::string>())
                                             : (r.is_number() ? r.get<uint64_t>() : 0);
      central_steps_.push_back(StepLine(s.value("attribute", ""), s.value("value", ""),
                                        s.value("children", std::vector<std::string>{}), records,
                                        s.value("score", -1.0)));
    }
    EXPECT_EQ(reference_, central_) << "an uninterrupted run differs from the centralized one";
    EXPECT_EQ(reference_steps_, central_steps_);
  }

  static std::string WaveLine(const std::string& job_id, uint32_t wave) {
    return absl::StrCat("job=", job_id, " wave=", wave, " local recoding");
  }

  // With every proxy 15 ms per chunk, submits the vertical job and waits until the leader logged
  // the end of a seeded wave in [1, waves - 1] (the ID matching over, the closing wave not yet
  // run) and the job is still RUNNING; returns the job id and that wave.
  void StartVerticalJobAfterAWave(std::string* job_id, uint32_t* at_wave) {
    *at_wave = 1 + static_cast<uint32_t>(rng_() % (waves_ - 1));
    DelayAll(absl::Milliseconds(15));
    absl::StatusOr<std::string> id = fed_->Submit({}, kRoundTimeoutSeconds);
    ASSERT_TRUE(id.ok()) << id.status();
    *job_id = *id;
    const absl::Time deadline = absl::Now() + kJobBound;
    while (!absl::StrContains(fed_->Log("leader"), WaveLine(*id, *at_wave)) &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_TRUE(absl::StrContains(fed_->Log("leader"), WaveLine(*id, *at_wave)))
        << "wave " << *at_wave << " never ended\n"
        << fed_->Log("leader");
    absl::StatusOr<JobInfo> reached = fed_->Get(*id);
    ASSERT_TRUE(reached.ok()) << reached.status();
    ASSERT_EQ(reached->state(), fedanon::v1::JOB_STATE_RUNNING) << reached->ShortDebugString();
  }

  // Party `victim` killed and restarted at once during `job_id`: the job ends DONE with the
  // reference release, the restarted process went on with it (one job-start, told it is done)
  // and no party keeps its state file. `*resume_s`: kill to done; `*reloaded`: the new process
  // reloaded the job from its state file.
  void KillAndRestartPartyExpectSameRelease(const std::string& job_id, int victim, double* resume_s,
                                            bool* reloaded) {
    const std::string name = fed_->parties()[static_cast<size_t>(victim)];
    fed_->KillParty(victim);
    const absl::Time killed = absl::Now();
    ASSERT_TRUE(fed_->StartParty(victim).ok());
    absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job_id, kJobBound);
    ASSERT_TRUE(end.ok()) << end.status();
    *resume_s = Seconds(absl::Now() - killed);
    DelayAll(absl::ZeroDuration());
    ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log(name);
    ExpectSameReleaseOnce(job_id, *end);
    ExpectNoDurableStateLeft(job_id);
    const std::vector<std::string> kinds = fed_->AuditKinds(victim, job_id);
    ASSERT_FALSE(kinds.empty());
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "job-start"), 1);
    EXPECT_EQ(fed_->AuditEnd(victim, job_id), "success=true reason=done");
    *reloaded = absl::StrContains(fed_->Log(name), "reloaded from its durable state");
  }

  // A step in [1, steps / 2], drawn from the seed (well inside the waves: a wave may take
  // several steps at once).
  uint32_t SeededStep() {
    const uint32_t half = static_cast<uint32_t>(reference_steps_.size() / 2);
    return 1 + static_cast<uint32_t>(rng_() % half);
  }

  // The resumed job's release: the reference's and the centralized table and steps, stored once
  // at the leader, no table at any party, no temporary file at the leader or any party.
  void ExpectSameReleaseOnce(const std::string& job_id, const JobInfo& end) {
    EXPECT_EQ(end.report().recoding(), fedanon::v1::RECODING_LOCAL);
    EXPECT_EQ(StepLines(end.report()), reference_steps_) << "the resumed job took other steps";
    EXPECT_EQ(end.report().groups(), reference_groups_);
    absl::StatusOr<std::string> csv = fed_->Result(job_id);
    ASSERT_TRUE(csv.ok()) << csv.status();
    EXPECT_EQ(SortedLines(*csv), reference_) << "the resumed job released another table";
    EXPECT_EQ(SortedLines(*csv), central_) << "the resumed job differs from the centralized run";
    ExpectStoredOnceAtTheLeader(job_id);
    std::vector<std::string> dirs = {fed_->leader_data_dir() + "/results"};
    for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
      dirs.push_back(fed_->party_output_dir(i));
    }
    for (const std::string& dir : dirs) {
      for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const std::string file = e.path().filename().string();
        EXPECT_FALSE(absl::StrContains(file, ".tmp.")) << dir << "/" << file;
        if (dir != dirs.front()) {
          EXPECT_FALSE(absl::StrContains(file, job_id + ".csv")) << file;
        }
      }
    }
  }

  std::vector<std::string> reference_, central_, reference_steps_, central_steps_;
  uint64_t reference_groups_ = 0;
  uint32_t waves_ = 0;
  double clean_seconds_ = 0;
};

TEST_F(LocalResumeTest, HorizontalLeaderKilledMidWavesResumesToTheSameRelease) {
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/false));
  const uint32_t at_step = SeededStep();
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_step, &job));
  ASSERT_LT(job.reached.round(), reference_steps_.size()) << "the waves ended before the kill";
  absl::Time restart;
  double reconnect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(job.id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double resume = Seconds(absl::Now() - restart);
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log("leader");
  ExpectDoneAfterOneLeaderRestart(job.id, *end);
  ExpectSameReleaseOnce(job.id, *end);
  EXPECT_THAT(end->report().final_check(),
              ::testing::StartsWith("passed at every data party: 3 parties re-checked"));
  PrintFigures(absl::StrFormat(
      "%s seed=%u kill_step=%u of %u parties_reconnected_s=%.2f restart_to_done_s=%.3f "
      "clean_job_s=%.2f",
      Name(), seed_, job.reached.round(), reference_steps_.size(), reconnect, resume,
      clean_seconds_));
}

TEST_F(LocalResumeTest, HorizontalPartyKilledMidWavesAndRestartedResumesToTheSameRelease) {
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/false));
  const int victim = SeededParty();
  const uint32_t at_step = SeededStep();
  RunningJob job;
  ASSERT_NO_FATAL_FAILURE(StartJobAtRound(kRoundTimeoutSeconds, at_step, &job));
  ASSERT_LT(job.reached.round(), reference_steps_.size()) << "the waves ended before the kill";
  double resume = 0;
  bool reloaded = false;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartPartyExpectSameRelease(job.id, victim, &resume, &reloaded));
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_step=%u of %u reloaded=%s kill_to_done_s=%.3f clean_job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(victim)], job.reached.round(),
      reference_steps_.size(), reloaded ? "yes" : "no", resume, clean_seconds_));
}

TEST_F(LocalResumeTest, VerticalLeaderKilledAfterIdMatchingDuringTheWavesResumes) {
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/true));
  std::string id;
  uint32_t at_wave = 0;
  ASSERT_NO_FATAL_FAILURE(StartVerticalJobAfterAWave(&id, &at_wave));
  absl::Time restart;
  double reconnect = 0;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartLeader(&restart, &reconnect));
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(id, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  const double resume = Seconds(absl::Now() - restart);
  ASSERT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason() << "\n" << fed_->Log("leader");
  ExpectDoneAfterOneLeaderRestart(id, *end);
  ExpectSameReleaseOnce(id, *end);
  PrintFigures(absl::StrFormat(
      "%s seed=%u kill_after_wave>=%u of %u parties_reconnected_s=%.2f restart_to_done_s=%.3f "
      "clean_job_s=%.2f",
      Name(), seed_, at_wave, waves_, reconnect, resume, clean_seconds_));
}

TEST_F(LocalResumeTest, VerticalPartyKilledDuringTheWavesAndRestartedResumesToTheSameRelease) {
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/true));
  const int victim = SeededParty();
  std::string id;
  uint32_t at_wave = 0;
  ASSERT_NO_FATAL_FAILURE(StartVerticalJobAfterAWave(&id, &at_wave));
  double resume = 0;
  bool reloaded = false;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartPartyExpectSameRelease(id, victim, &resume, &reloaded));
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_after_wave>=%u of %u reloaded=%s kill_to_done_s=%.3f "
      "clean_job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(victim)], at_wave, waves_,
      reloaded ? "yes" : "no", resume, clean_seconds_));
}

// Issue #47: a kill during paged waves on real daemons. Under max_message_bytes: 4096 every wave's
// instructions travel in 2 KiB chunks (and proposals and verdicts in pages when they outgrow
// it); the reference run under that limit must equal the centralized release, and a party killed
// after a seeded wave and restarted at once must end the job with the same release.
TEST_F(LocalResumeTest, VerticalPartyKilledDuringChunkedWavesUnderASmallMessageLimitResumes) {
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/true, "max_message_bytes: 4096\n"));
  EXPECT_THAT(fed_->Log("leader"), ::testing::HasSubstr("payload chunks under 4096 bytes"));
  const int victim = SeededParty();
  std::string id;
  uint32_t at_wave = 0;
  ASSERT_NO_FATAL_FAILURE(StartVerticalJobAfterAWave(&id, &at_wave));
  const std::vector<std::string> before = fed_->AuditKinds(victim, id);
  double resume = 0;
  bool reloaded = false;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartPartyExpectSameRelease(id, victim, &resume, &reloaded));
  const std::vector<std::string> after = fed_->AuditKinds(victim, id);
  const auto chunks = [](const std::vector<std::string>& kinds) {
    return static_cast<int>(std::count(kinds.begin(), kinds.end(), "payload-chunk"));
  };
  EXPECT_GT(chunks(after), chunks(before)) << "no chunk went from the victim after the kill";
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_after_wave>=%u of %u reloaded=%s chunks_before=%d "
      "chunks_after=%d kill_to_done_s=%.3f clean_job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(victim)], at_wave, waves_,
      reloaded ? "yes" : "no", chunks(before), chunks(after), resume, clean_seconds_));
}

// Issue #47: a restart in a job whose waves travel in pages, on real daemons. With k = 3 over
// 2,400 records a wave has enough live groups that a party's proposals outgrow half a 2 KiB chunk
// and travel in pages (asserted from the audit files). A party killed as soon as the leader logged
// a seeded wave, and restarted at once, answers the next waves' paged requests from its state file
// and the job ends with the release of the same job unkilled.
TEST_F(LocalResumeTest, VerticalPartyKilledDuringPagedWavesResumes) {
  std::string spec = kVerticalSpec;
  const std::string k20 = "k: 20}";
  spec.replace(spec.find(k20), k20.size(), "k: 3}");
  ASSERT_NO_FATAL_FAILURE(StartWithReferences(/*vertical=*/true, "max_message_bytes: 4096\n",
                                              /*rows=*/2400, spec));
  const int victim = SeededParty();
  std::string id;
  uint32_t at_wave = 0;
  ASSERT_NO_FATAL_FAILURE(StartVerticalJobAfterAWave(&id, &at_wave));
  double resume = 0;
  bool reloaded = false;
  ASSERT_NO_FATAL_FAILURE(KillAndRestartPartyExpectSameRelease(id, victim, &resume, &reloaded));
  // The proposals went in pages: some audit line of a proposal says more than one page.
  int most_pages = 0;
  for (int i = 0; i < static_cast<int>(fed_->parties().size()); ++i) {
    std::ifstream audit(fed_->party_output_dir(i) + "/" + id + ".audit.jsonl");
    std::string line;
    const std::regex pages("\"kind\":\"proposal\".*\"pages\":([0-9]+)");
    std::smatch m;
    while (std::getline(audit, line)) {
      if (std::regex_search(line, m, pages)) most_pages = std::max(most_pages, std::stoi(m[1]));
    }
  }
  EXPECT_GT(most_pages, 1) << "every proposal fit one page: the paged transfer was not hit";
  PrintFigures(absl::StrFormat(
      "%s seed=%u victim=%s kill_after_wave>=%u of %u reloaded=%s most_proposal_pages=%d "
      "kill_to_done_s=%.3f clean_job_s=%.2f",
      Name(), seed_, fed_->parties()[static_cast<size_t>(victim)], at_wave, waves_,
      reloaded ? "yes" : "no", most_pages, resume, clean_seconds_));
}

}  // namespace
}  // namespace fedanon::testing
