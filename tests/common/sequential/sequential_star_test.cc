// Several previous releases (fung2007 thesis §6.5, the star join of T1 with T2 and T3): a worked
// example computed by hand, confirmed on the brute-force checker, and the errors that only
// several previous releases have (release numbers, ambiguous names, a dangling record of T3, a
// history table too large).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tests/common/sequential/join_checker.h"
#include "tests/common/sequential/seq_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

// T1 = (Job, Sex, Class) of five people; T2 = (Job, Disease) and T3 = (Sex, Salary) are earlier
// projections of the same five records (in the same order here, which the join cannot see).
Table T1() {
  return {{"Job", "Sex", "Class"},
          {{"Banker", "M", "Y"},
           {"Banker", "M", "Y"},
           {"Engineer", "F", "Y"},
           {"Clerk", "F", "N"},
           {"Driver", "M", "N"}}};
}
Table T2() {
  return {{"Job", "Disease"},
          {{"Banker", "Cancer"},
           {"Banker", "Cancer"},
           {"Engineer", "HIV"},
           {"Clerk", "HIV"},
           {"Driver", "Flu"}}};
}
Table T3() {
  return {{"Sex", "Salary"},
          {{"M", "High"}, {"M", "High"}, {"F", "Low"}, {"F", "High"}, {"M", "High"}}};
}
const std::map<std::string, std::string> kTax = {
    {"job.csv",
     "Banker;Professional;ANY_Job\nEngineer;Professional;ANY_Job\nClerk;Service;ANY_Job\n"
     "Driver;Service;ANY_Job\n"},
    {"sex.csv", "M;ANY_Sex\nF;ANY_Sex\n"}};

std::string Spec(int k, const std::string& extra = "") {
  return absl::StrCat(
      "attributes:\n"
      "  - {name: Job, role: qid, taxonomy: job.csv}\n"
      "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
      "  - {name: Class, role: class}\n"
      "sequential:\n"
      "  anonymity:\n"
      "    - {x: [current.Job, previous1.Disease, previous2.Salary], y: [current.@record], k: ",
      k,
      "}\n"
      "  confidentiality:\n"
      "    - {x: [current.Job], attribute: previous1.Disease, sensitive_values: [HIV, Cancer], "
      "max: 0.9}\n",
      extra);
}

// Worked by hand. Most general T1 (ANY_Job, ANY_Sex): every T1 record matches every record of T2
// and of T3, so each x = (Job, Disease, Salary) has all 5 T1 records, except none. Round 1, both
// candidates are valid:
//  * Job -> {Professional (r1 r2 r3), Service (r4 r5)}: Sex is still ANY_Sex, so every record
//    still matches every T3 salary; (Service, HIV, Low) has {r4, r5}: 2 >= 2, the rest more;
//  * Sex -> {M, F}: only F records match the Low salary of T3: (ANY_Job, *, Low) = {r3, r4}: 2.
// Job wins on InfoGain (it separates Class exactly). Round 2, every candidate is invalid:
//  * Sex -> {M, F}: (Professional, Cancer, Low) = {r3}, the only professional woman: 1;
//  * Professional -> {Banker, Engineer}: (Engineer, HIV, Low) = {r3}: 1;
//  * Service -> {Clerk, Driver}: (Clerk, HIV, Low) = {r4}: 1.
// So the output has Professional / Service and ANY_Sex, the smallest group is 2, and the
// confidences of the star join (a(x) += |P1||P2||P3|, a(x, y) += |P1||P2[y]||P3|) are, for
// Professional, HIV 3*1*5 / (3*3*5) = 1/3 and Cancer 3*2*5 / 45 = 2/3 (T2's two Banker/Cancer
// records count twice), for Service HIV 2*1*5 / (2*2*5) = 1/2: the largest is 2/3 <= 0.9 (it
// was 5*2*5 / (5*5*5) = 0.4 before).
// With T2 alone (no salary), Sex is not a join attribute and would be specialized as well: the
// second previous release is what keeps ANY_Sex.
TEST(SequentialStarTest, TwoPreviousReleasesWorkedByHand) {
  const StarJob s = WriteStarJob("seqstar-hand", Spec(2), T1(), {T2(), T3()}, kTax);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, RunStarJob(s));
  ASSERT_EQ(report.steps_size(), 1);
  EXPECT_EQ(report.steps(0).attribute(), "Job");
  EXPECT_EQ(report.steps(0).value(), "ANY_Job");
  EXPECT_EQ(report.smallest_group(), 2u);
  EXPECT_NEAR(report.largest_confidence(), 2.0 / 3, 1e-12);
  EXPECT_EQ(report.stop_reason(), "no valid candidate left");
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  const std::vector<std::vector<std::string>> expected = {{"Professional", "ANY_Sex", "Y"},
                                                          {"Professional", "ANY_Sex", "Y"},
                                                          {"Professional", "ANY_Sex", "Y"},
                                                          {"Service", "ANY_Sex", "N"},
                                                          {"Service", "ANY_Sex", "N"}};
  EXPECT_EQ(out.rows, expected);

  // The brute-force checker agrees: the star join has 3*3*5 + 2*2*5 = 65 records, the smallest
  // group is 2, and specializing Sex leaves (Professional, Cancer, Low) with r3 alone.
  const seqcheck::Taxonomies tax = {{"Job", seqcheck::ParseParents(kTax.at("job.csv"))},
                                    {"Sex", seqcheck::ParseParents(kTax.at("sex.csv"))}};
  const std::vector<seqcheck::Release> previous = {{T2().header, T2().rows},
                                                   {T3().header, T3().rows}};
  const std::vector<seqcheck::StarRef> x = {seqcheck::ParseStarRef("current.Job"),
                                            seqcheck::ParseStarRef("previous1.Disease"),
                                            seqcheck::ParseStarRef("previous2.Salary")};
  const std::vector<seqcheck::StarRef> y = {seqcheck::ParseStarRef("current.@record")};
  seqcheck::Release released{out.header, out.rows};
  const auto join = seqcheck::StarJoin(released, previous, tax);
  EXPECT_EQ(join.size(), 65u);
  EXPECT_EQ(seqcheck::StarAnonymity(released, previous, join, x, y), 2u);
  EXPECT_NEAR(
      seqcheck::StarConfidence(released, previous, join, {seqcheck::ParseStarRef("current.Job")},
                               seqcheck::ParseStarRef("previous1.Disease"), {"HIV"}),
      0.5, 1e-12);
  EXPECT_NEAR(
      seqcheck::StarConfidence(released, previous, join, {seqcheck::ParseStarRef("current.Job")},
                               seqcheck::ParseStarRef("previous1.Disease"), {"Cancer"}),
      2.0 / 3, 1e-12);
  seqcheck::Release more = released;
  for (size_t i = 0; i < more.rows.size(); ++i) more.rows[i][1] = T1().rows[i][1];
  EXPECT_EQ(seqcheck::StarAnonymity(more, previous, seqcheck::StarJoin(more, previous, tax), x, y),
            1u);

  // With T2 alone the same template without the salary lets Sex be specialized too.
  const SeqJob one =
      WriteSeqJob("seqstar-one",
                  "attributes:\n"
                  "  - {name: Job, role: qid, taxonomy: job.csv}\n"
                  "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
                  "  - {name: Class, role: class}\n"
                  "sequential:\n"
                  "  anonymity:\n"
                  "    - {x: [current.Job, previous.Disease], y: [current.@record], k: 2}\n",
                  T1(), T2(), kTax);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report one_report, RunSeqJob(one));
  ASSERT_OK_AND_ASSIGN(Table one_out, ReadCsvTable(one.job.output_path));
  EXPECT_EQ(one_out.rows[0][1], "M");
  EXPECT_EQ(one_out.rows[0][0], "Professional");
}

// k = 6 cannot be met: even the most general T1 matches every record of T2 and T3, so every
// value on X has the 5 records of T1 only. The refusal names the value on X with the release of
// each previous attribute.
TEST(SequentialStarTest, RefusalNamesTheReleases) {
  const StarJob s = WriteStarJob("seqstar-refuse", Spec(6), T1(), {T2(), T3()}, kTax);
  const auto report = RunStarJob(s);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("cannot be met"));
  EXPECT_THAT(report.status().message(), HasSubstr(", previous2.Salary="));
  EXPECT_THAT(report.status().message(), HasSubstr("{current.Job=ANY_Job, previous1.Disease="));
  EXPECT_THAT(report.status().message(), HasSubstr("a_Y(x) = 5"));
  EXPECT_THAT(report.status().message(), HasSubstr("previous1.csv, "));
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
}

// `previous.NAME` in x names the column in every previous release that has it (thesis §6.5: X
// holds every Ti.A): here previous.Salary is previous2.Salary, so the run equals the one above.
TEST(SequentialStarTest, UnnumberedPreviousInXNamesEveryReleaseWithTheColumn) {
  std::string spec = Spec(2);
  spec.replace(spec.find("previous2.Salary"), 16, "previous.Salary");
  const StarJob s = WriteStarJob("seqstar-any", spec, T1(), {T2(), T3()}, kTax);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, RunStarJob(s));
  EXPECT_EQ(report.steps_size(), 1);
  EXPECT_EQ(report.smallest_group(), 2u);
}

absl::Status RunWithSpec(const std::string& name, const std::string& spec,
                         const std::vector<Table>& previous) {
  const StarJob s = WriteStarJob(name, spec, T1(), previous, kTax);
  const auto report = RunStarJob(s);
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
  return report.status();
}

TEST(SequentialStarTest, Errors) {
  const std::string head =
      "attributes:\n"
      "  - {name: Job, role: qid, taxonomy: job.csv}\n"
      "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
      "  - {name: Class, role: class}\n"
      "sequential:\n"
      "  anonymity:\n";
  // A release number beyond those given.
  EXPECT_THAT(RunWithSpec("seqstar-e1",
                          head + "    - {x: [current.Job, previous3.Disease], y: "
                                 "[current.@record], k: 2}\n",
                          {T2(), T3()})
                  .message(),
              HasSubstr("'previous3.Disease' names previous release 3 but 2 were given"));
  // previous.@record is ambiguous with several previous releases.
  EXPECT_THAT(
      RunWithSpec("seqstar-e2", head + "    - {x: [current.Job], y: [previous.@record], k: 2}\n",
                  {T2(), T3()})
          .message(),
      HasSubstr("write previous1.@record or previous2.@record"));
  // A column that two previous releases have is ambiguous in y.
  Table t3 = T3();
  t3.header.push_back("Disease");
  for (auto& r : t3.rows) r.push_back("Flu");
  EXPECT_THAT(
      RunWithSpec("seqstar-e3", head + "    - {x: [current.Job], y: [previous.Disease], k: 2}\n",
                  {T2(), t3})
          .message(),
      HasSubstr("which several previous releases have; write previous1.Disease or "
                "previous2.Disease"));
  // A record of T3 that no T1 record matches (each pair must be population-related).
  Table dangling = T3();
  dangling.rows[3][0] = "X";
  const absl::Status st =
      RunWithSpec("seqstar-e4", head + "    - {x: [current.Job], y: [current.@record], k: 2}\n",
                  {T2(), dangling});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;  // X is not in the taxonomy
  EXPECT_THAT(st.message(), HasSubstr("previous2.csv:5:1: value 'X' of join attribute 'Sex'"));
  // A T3 salary that a rule makes unmatchable: population-related fails, naming T3's record.
  const absl::Status rule =
      RunWithSpec("seqstar-e5",
                  head +
                      "    - {x: [current.Job], y: [current.@record], k: 1}\n"
                      "  inconsistent:\n"
                      "    - {current: Job, current_value: ANY_Job, previous: previous2.Salary, "
                      "previous_value: Low}\n",
                  {T2(), T3()});
  EXPECT_EQ(rule.code(), absl::StatusCode::kFailedPrecondition) << rule;
  EXPECT_THAT(rule.message(),
              HasSubstr("previous2.csv:4: this record (Sex=F, Salary=Low) matches no record of "
                        "the current release"));
}

// The history table (every combination of the distinct rows of T2 and T3 that the most general
// T1 matches) is held in memory up to a bound; beyond it the job is refused, not run slowly.
TEST(SequentialStarTest, HistoryTableTooLargeIsRefused) {
  Table t1{{"Job", "Sex", "Class"}, {}};
  Table t2{{"Job", "Disease"}, {}};
  Table t3{{"Sex", "Salary"}, {}};
  const std::vector<std::string> jobs = {"Banker", "Engineer", "Clerk", "Driver"};
  for (int i = 0; i < 1500; ++i) {
    t1.rows.push_back({jobs[i % 4], i % 2 ? "M" : "F", "Y"});
    t2.rows.push_back({jobs[i % 4], absl::StrCat("d", i)});
    t3.rows.push_back({i % 2 ? "M" : "F", absl::StrCat("s", i)});
  }
  const StarJob s = WriteStarJob("seqstar-big",
                                 "attributes:\n"
                                 "  - {name: Job, role: qid, taxonomy: job.csv}\n"
                                 "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
                                 "  - {name: Class, role: class}\n"
                                 "sequential:\n"
                                 "  anonymity:\n"
                                 "    - {x: [current.Job], y: [previous1.Disease, "
                                 "previous2.Salary], k: 2}\n",
                                 t1, {t2, t3}, kTax);
  const auto report = RunStarJob(s);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("combine into"));
  EXPECT_THAT(report.status().message(), HasSubstr("more than the 2000000"));
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
}

}  // namespace
}  // namespace fedanon::testing
