// `fedanon anonymize --previous-release` as a process: exit 0 with the outputs written, exit 1
// with the reason on stderr and nothing written, exit 2 for usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/sequential/seq_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

SeqJob Table61Job(const std::string& t2_job_value) {
  return WriteSeqJob(
      "seqcli",
      "attributes:\n"
      "  - {name: Name, role: qid, taxonomy: name.csv}\n"
      "  - {name: Job, role: qid, taxonomy: job.csv}\n"
      "  - {name: Class, role: class}\n"
      "sequential:\n"
      "  anonymity:\n"
      "    - {x: [Name, Disease], y: [current.@record, previous.@record], k: 2}\n",
      {{"Name", "Job", "Class"},
       {{"Alice", "Banker", "c1"},
        {"Alice", "Banker", "c1"},
        {"Bob", "Clerk", "c2"},
        {"Bob", "Driver", "c3"},
        {"Cathy", "Engineer", "c4"}}},
      {{"Job", "Disease"},
       {{"Banker", "Cancer"},
        {"Banker", "Cancer"},
        {"Clerk", "HIV"},
        {t2_job_value, "Cancer"},
        {"Engineer", "HIV"}}},
      {{"name.csv", "Alice;ANY_Name\nBob;ANY_Name\nCathy;ANY_Name\n"},
       {"job.csv",
        "Banker;Professional;ANY_Job\nEngineer;Professional;ANY_Job\nClerk;Service;ANY_Job\n"
        "Driver;Service;ANY_Job\n"}});
}

std::vector<std::string> Args(const SeqJob& s) {
  return {
      "anonymize",     "--spec",          s.job.spec_path, "--input",         s.job.input_path,
      "--output",      s.job.output_path, "--report",      s.job.report_path, "--previous-release",
      s.previous_path, "--quiet"};
}

TEST(SequentialCliTest, WritesTheGeneralizedCurrentRelease) {
  const SeqJob s = Table61Job("Driver");
  const CliResult r = RunFedanon(Args(s));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  EXPECT_EQ(out.header, (std::vector<std::string>{"Name", "Job", "Class"}));
  for (const auto& row : out.rows) EXPECT_EQ(row[1], "ANY_Job");  // the lossy join of Table 6.1
  EXPECT_THAT(ReadAll(s.job.report_path), HasSubstr("\"smallest_group\": \"2\""));
}

TEST(SequentialCliTest, BadPreviousReleaseExitsOneAndWritesNothing) {
  const SeqJob s = Table61Job("Pilot");
  const CliResult r = RunFedanon(Args(s));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("previous.csv:5:1: value 'Pilot' of join attribute 'Job'"));
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
  EXPECT_FALSE(std::filesystem::exists(s.job.report_path));
}

TEST(SequentialCliTest, MissingOptionValueIsAUsageError) {
  const SeqJob s = Table61Job("Driver");
  std::vector<std::string> args = Args(s);
  args.pop_back();  // --quiet
  args.pop_back();  // the path after --previous-release
  const CliResult r = RunFedanon(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
}

// Two previous releases, each given with its own --previous-release (T2 then T3): the worked
// example of tests/common/sequential/sequential_star_test.cc (Job generalized once, Sex kept at
// ANY_Sex because of T3's salaries).
TEST(SequentialCliTest, RepeatedPreviousReleaseJoinsEveryOne) {
  const StarJob s = WriteStarJob(
      "seqcli-star",
      "attributes:\n"
      "  - {name: Job, role: qid, taxonomy: job.csv}\n"
      "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
      "  - {name: Class, role: class}\n"
      "sequential:\n"
      "  anonymity:\n"
      "    - {x: [current.Job, previous1.Disease, previous2.Salary], y: [current.@record], "
      "k: 2}\n",
      {{"Job", "Sex", "Class"},
       {{"Banker", "M", "Y"},
        {"Banker", "M", "Y"},
        {"Engineer", "F", "Y"},
        {"Clerk", "F", "N"},
        {"Driver", "M", "N"}}},
      {{{"Job", "Disease"},
        {{"Banker", "Cancer"},
         {"Banker", "Cancer"},
         {"Engineer", "HIV"},
         {"Clerk", "HIV"},
         {"Driver", "Flu"}}},
       {{"Sex", "Salary"},
        {{"M", "High"}, {"M", "High"}, {"F", "Low"}, {"F", "High"}, {"M", "High"}}}},
      {{"job.csv",
        "Banker;Professional;ANY_Job\nEngineer;Professional;ANY_Job\nClerk;Service;ANY_Job\n"
        "Driver;Service;ANY_Job\n"},
       {"sex.csv", "M;ANY_Sex\nF;ANY_Sex\n"}});
  std::vector<std::string> args = {"anonymize",       "--spec",         s.job.spec_path,
                                   "--input",         s.job.input_path, "--output",
                                   s.job.output_path, "--report",       s.job.report_path};
  for (const std::string& p : s.previous_paths) {
    args.push_back("--previous-release");
    args.push_back(p);
  }
  args.push_back("--quiet");
  const CliResult r = RunFedanon(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  ASSERT_EQ(out.rows.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out.rows[i][0], i < 3 ? "Professional" : "Service");
    EXPECT_EQ(out.rows[i][1], "ANY_Sex");
  }
  EXPECT_THAT(ReadAll(s.job.report_path), HasSubstr("\"smallest_group\": \"2\""));

  // Only the first previous release: Sex is no join attribute, so previous2.Salary is unknown.
  std::vector<std::string> first_only(args.begin(), args.end() - 3);
  first_only.push_back("--quiet");
  const CliResult one = RunFedanon(first_only);
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_THAT(one.err, HasSubstr("'previous2.Salary' names previous release 2 but 1 was given"));
}

}  // namespace
}  // namespace fedanon::testing
