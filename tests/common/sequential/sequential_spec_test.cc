// The `sequential` spec section and the errors of `fedanon anonymize --previous-release`: every
// problem is refused with a message naming what is wrong (and file:line:column for data), and a
// refused job writes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/spec/job_spec_loader.h"
#include "tests/common/sequential/seq_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

const char kHead[] =
    "attributes:\n"
    "  - {name: Name, role: qid, taxonomy: name.csv}\n"
    "  - {name: Job, role: qid, taxonomy: job.csv}\n"
    "  - {name: Class, role: class}\n";

const std::map<std::string, std::string> kTax = {
    {"name.csv", "Alice;ANY_Name\nBob;ANY_Name\nCathy;ANY_Name\n"},
    {"job.csv",
     "Banker;Professional;ANY_Job\nEngineer;Professional;ANY_Job\nClerk;Service;ANY_Job\n"
     "Driver;Service;ANY_Job\n"}};

Table T1() {
  return {{"Name", "Job", "Class"},
          {{"Alice", "Banker", "c1"},
           {"Alice", "Banker", "c1"},
           {"Bob", "Clerk", "c2"},
           {"Bob", "Driver", "c3"},
           {"Cathy", "Engineer", "c4"}}};
}
Table T2() {
  return {{"Job", "Disease"},
          {{"Banker", "Cancer"},
           {"Banker", "Cancer"},
           {"Clerk", "HIV"},
           {"Driver", "Cancer"},
           {"Engineer", "HIV"}}};
}

absl::Status ValidateYaml(const std::string& yaml) {
  auto spec = spec::ParseJobSpecYaml(yaml, "spec.yaml");
  if (!spec.ok()) return spec.status();
  return spec::ValidateJobSpec(*spec);
}

absl::Status RunWith(const std::string& sequential, const Table& t2 = T2(), bool previous = true) {
  SeqJob s = WriteSeqJob("seqspec", std::string(kHead) + sequential, T1(), t2, kTax);
  if (!previous) s.previous_path.clear();
  auto report = RunSeqJob(s);
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path) && !report.ok());
  EXPECT_FALSE(std::filesystem::exists(s.job.report_path) && !report.ok());
  return report.status();
}

TEST(SequentialSpecTest, SectionParsesAndRoundTrips) {
  const std::string yaml = std::string(kHead) +
                           "sequential:\n"
                           "  anonymity:\n"
                           "    - x: [Name, previous.Disease]\n"
                           "      y: [current.@record, previous.@record]\n"
                           "      k: 2\n"
                           "  confidentiality:\n"
                           "    - {x: [Name], attribute: previous.Disease, "
                           "sensitive_values: [HIV], max: 0.5}\n";
  ASSERT_OK_AND_ASSIGN(auto spec, spec::ParseJobSpecYaml(yaml, "spec.yaml"));
  ASSERT_EQ(spec.sequential().anonymity_size(), 1);
  EXPECT_EQ(spec.sequential().anonymity(0).y(1), "previous.@record");
  EXPECT_EQ(spec.sequential().anonymity(0).k(), 2u);
  EXPECT_DOUBLE_EQ(spec.sequential().confidentiality(0).max(), 0.5);
  EXPECT_OK(spec::ValidateJobSpec(spec));
  ASSERT_OK_AND_ASSIGN(auto again, spec::ParseJobSpecYaml(spec::JobSpecToYaml(spec), "again.yaml"));
  EXPECT_EQ(again.SerializeAsString(), spec.SerializeAsString());
}

TEST(SequentialSpecTest, ValidationNamesTheProblem) {
  const std::string seq = "sequential:\n  anonymity:\n";
  EXPECT_THAT(ValidateYaml(std::string(kHead) + "privacy: {model: lkc, L: 1, K: 2}\n" + seq +
                           "    - {x: [Name], y: [previous.Disease], k: 2}\n")
                  .message(),
              HasSubstr("leave privacy out"));
  EXPECT_THAT(ValidateYaml(std::string(kHead) + "sequential: {}\n").message(),
              HasSubstr("at least one entry"));
  EXPECT_THAT(
      ValidateYaml(std::string(kHead) + seq + "    - {x: [Name], y: [Disease], k: 0}\n").message(),
      HasSubstr("sequential.anonymity template 1: k = 0 must be >= 1"));
  EXPECT_THAT(
      ValidateYaml(std::string(kHead) + seq + "    - {x: [], y: [Disease], k: 2}\n").message(),
      HasSubstr("has no x attributes"));
  EXPECT_THAT(ValidateYaml(std::string(kHead) + seq + "    - {x: [Name], y: [\"@record\"], k: 2}\n")
                  .message(),
              HasSubstr("write current.@record or previous.@record"));
  EXPECT_THAT(ValidateYaml(std::string(kHead) +
                           "sequential:\n  confidentiality:\n"
                           "    - {x: [Name], attribute: Disease, sensitive_values: [HIV], "
                           "max: 1.5}\n")
                  .message(),
              HasSubstr("sequential.confidentiality template 1: max = 1.5 must be in (0, 1]"));
  EXPECT_THAT(ValidateYaml(std::string(kHead) + "partitioning: horizontal\n" + seq +
                           "    - {x: [Name], y: [Disease], k: 2}\n")
                  .message(),
              HasSubstr("sequential releases are anonymized centrally"));
  EXPECT_THAT(ValidateYaml(std::string(kHead) + "score: discernibility\n" + seq +
                           "    - {x: [Name], y: [Disease], k: 2}\n")
                  .message(),
              HasSubstr("discernibility is not supported"));
}

TEST(SequentialSpecTest, PreviousReleaseAndSectionGoTogether) {
  EXPECT_THAT(RunWith("sequential:\n  anonymity:\n    - {x: [Name], y: [Disease], k: 2}\n", T2(),
                      /*previous=*/false)
                  .message(),
              HasSubstr("give the earlier release with --previous-release"));
  SeqJob s = WriteSeqJob("seqspec", std::string(kHead) + "privacy: {model: lkc, L: 1, K: 2}\n",
                         T1(), T2(), kTax);
  EXPECT_THAT(RunSeqJob(s).status().message(), HasSubstr("needs a sequential section"));
}

TEST(SequentialSpecTest, AttributesAreResolvedAgainstBothReleases) {
  const std::string a = "sequential:\n  anonymity:\n";
  EXPECT_THAT(RunWith(a + "    - {x: [Name, Zip], y: [Disease], k: 2}\n").message(),
              HasSubstr("x names unknown attribute 'Zip'"));
  EXPECT_THAT(RunWith(a + "    - {x: [previous.Name], y: [Disease], k: 2}\n").message(),
              HasSubstr("not a column of the previous release"));
  EXPECT_THAT(RunWith(a + "    - {x: [Class], y: [Disease], k: 2}\n").message(),
              HasSubstr("x names 'Class', which is not a QID attribute"));
  EXPECT_THAT(RunWith(a + "    - {x: [Disease], y: [current.Name], k: 2}\n").message(),
              HasSubstr("a QID attribute; Y is the fixed reference point"));
  EXPECT_THAT(RunWith(a + "    - {x: [Name], y: [Job], k: 2}\n").message(),
              HasSubstr("which both releases have; write current.Job or previous.Job"));
  EXPECT_THAT(RunWith(a + "    - {x: [Name, Disease], y: [Disease], k: 2}\n").message(),
              HasSubstr("previous.Disease is in both x and y"));
  EXPECT_THAT(RunWith("sequential:\n  confidentiality:\n"
                      "    - {x: [Name], attribute: Disease, sensitive_values: [Flu], max: 0.5}\n")
                  .message(),
              HasSubstr("sensitive value 'Flu' does not occur in previous.Disease"));
}

TEST(SequentialSpecTest, BadPreviousReleaseIsReportedWithFileLineAndColumn) {
  const std::string seq = "sequential:\n  anonymity:\n    - {x: [Name], y: [Disease], k: 1}\n";
  Table t2 = T2();
  t2.rows[3][0] = "Pilot";
  const absl::Status st = RunWith(seq, t2);
  EXPECT_THAT(st.message(), HasSubstr("previous.csv:5:1: value 'Pilot' of join attribute 'Job' is "
                                      "not in its taxonomy"));
  t2 = T2();
  t2.rows[1].push_back("extra");
  EXPECT_THAT(RunWith(seq, t2).message(), HasSubstr("previous.csv:3"));
  Table no_common = {{"Zip", "Disease"}, {{"Z1", "HIV"}}};
  EXPECT_THAT(RunWith(seq, no_common).message(), HasSubstr("no column in common"));
}

TEST(SequentialSpecTest, JoinAttributeMustBeMatchableThroughATaxonomy) {
  SeqJob s = WriteSeqJob("seqspec",
                         "attributes:\n"
                         "  - {name: Name, role: qid, taxonomy: name.csv}\n"
                         "  - {name: Job, role: qid}\n"
                         "  - {name: Class, role: class}\n"
                         "sequential:\n  anonymity:\n"
                         "    - {x: [Name], y: [Disease], k: 1}\n",
                         T1(), T2(), kTax);
  EXPECT_THAT(RunSeqJob(s).status().message(),
              HasSubstr("'Job' is in both releases (a join attribute) but is a QID without a "
                        "taxonomy"));
}

TEST(SequentialSpecTest, InconsistencyRulesAreChecked) {
  const std::string a = "    - {x: [Name], y: [Disease], k: 1}\n";
  auto rule = [&](const std::string& r) {
    return RunWith("sequential:\n  inconsistent:\n    - " + r + "\n  anonymity:\n" + a);
  };
  EXPECT_THAT(
      ValidateYaml(std::string(kHead) +
                   "sequential:\n  inconsistent:\n    - {current: Name}\n  anonymity:\n" + a)
          .message(),
      HasSubstr("sequential.inconsistent rule 1 needs current, current_value, previous "
                "and previous_value"));
  EXPECT_THAT(
      rule("{current: Age, current_value: x, previous: Disease, previous_value: HIV}").message(),
      HasSubstr("current 'Age' is not an attribute this job releases"));
  EXPECT_THAT(
      rule("{current: Name, current_value: Alice, previous: Zip, previous_value: Z1}").message(),
      HasSubstr("previous 'Zip' is not a column of the previous release"));
  EXPECT_THAT(
      rule("{current: Job, current_value: Banker, previous: Job, previous_value: Clerk}").message(),
      HasSubstr("the consistency predicate already matches a common attribute"));
  EXPECT_THAT(
      rule("{current: Name, current_value: Zed, previous: Disease, previous_value: HIV}").message(),
      HasSubstr("current_value 'Zed' is not in the taxonomy of 'Name'"));
  EXPECT_THAT(
      rule("{current: Name, current_value: Alice, previous: Job, previous_value: Pilot}").message(),
      HasSubstr("previous_value 'Pilot' is not in the taxonomy of 'Job'"));
  // A rule that contradicts the data leaves records without a partner: refused.
  EXPECT_THAT(rule("{current: Name, current_value: Cathy, previous: Disease, previous_value: HIV}")
                  .message(),
              HasSubstr("matches no record of the previous release"));
  EXPECT_OK(rule("{current: Name, current_value: Alice, previous: Disease, previous_value: HIV}"));
}

// Corollary 6.2.2: if the most general T1 violates a template, no generalized T1 can satisfy it
// (under anti-monotonicity); the job is refused, naming the template and the worst x.
TEST(SequentialSpecTest, TemplateThatEvenTheMostGeneralJoinViolatesIsRefused) {
  const absl::Status st = RunWith(
      "sequential:\n  anonymity:\n    - {x: [Name, Disease], y: [current.@record], k: 6}\n");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("privacy template <{Name, Disease}, {current.@record}, 6> "
                                      "cannot be met"));
  // Every T1 record matches every T2 record: each x co-occurs with all 5 T1 records.
  EXPECT_THAT(st.message(), HasSubstr("a_Y(x) = 5 for x = {current.Name=ANY_Name, "
                                      "previous.Disease="));
}

}  // namespace
}  // namespace fedanon::testing
