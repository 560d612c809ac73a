// `fedanon evaluate` and `fedanon sweep` as processes on a small synthetic table (gen-data):
// outputs, --json, exit codes (0 ok, 1 failed command, 2 usage) and no files left behind when a
// command fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EvaluateCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("evaluate_cli");
    const CliResult gen = RunFedanon({"gen-data", "--rows", "800", "--seed", "2", "--out", dir_});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const CliResult anon =
        RunFedanon({"anonymize", "--spec", dir_ + "/job.yaml", "--input", dir_ + "/table.csv",
                    "--output", dir_ + "/anon.csv", "--report", dir_ + "/report.json", "--quiet"});
    ASSERT_EQ(anon.exit_code, 0) << anon.err;
  }
  std::string dir_;
};

TEST_F(EvaluateCliTest, PrintsTheFiguresAsTextAndJson) {
  const CliResult text = RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw",
                                     dir_ + "/table.csv", "--anonymized", dir_ + "/anon.csv"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("800 records: C4.5-style tree trained on 533, tested on 267"));
  for (const char* figure : {"BE  ", "CE  ", "UE  ", "DR  "}) {
    EXPECT_THAT(text.out, HasSubstr(figure));
  }

  const CliResult json =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--anonymized", dir_ + "/anon.csv", "--json", "--seed", "4"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(json.out));
  EXPECT_EQ(j.at("records").get<int>(), 800);
  EXPECT_EQ(j.at("seed").get<int>(), 4);
  for (const char* figure : {"BE", "CE", "UE"}) {
    EXPECT_GE(j.at(figure).get<double>(), 0.0);
    EXPECT_LE(j.at(figure).get<double>(), 1.0);
  }
  // DR is the engine's own figure from its report.
  const nlohmann::json report = nlohmann::json::parse(ReadAll(dir_ + "/report.json"));
  EXPECT_NEAR(j.at("DR").get<double>(), report.at("discernibility_ratio").get<double>(), 1e-12);
}

// --local: a recoding: local release of the same table beside the global one.
TEST_F(EvaluateCliTest, GlobalAndLocalSideBySide) {
  WriteText(dir_ + "/local.yaml", ReadAll(dir_ + "/job.yaml") + "recoding: local\n");
  const CliResult anon =
      RunFedanon({"anonymize", "--spec", dir_ + "/local.yaml", "--input", dir_ + "/table.csv",
                  "--output", dir_ + "/local.csv", "--report", dir_ + "/local.json", "--quiet"});
  ASSERT_EQ(anon.exit_code, 0) << anon.err;
  const CliResult text =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--anonymized", dir_ + "/anon.csv", "--local", dir_ + "/local.csv"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("global       local"));
  EXPECT_THAT(text.out, HasSubstr("CE - BE"));
  EXPECT_THAT(text.out, HasSubstr("QID groups"));

  const CliResult json =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--anonymized", dir_ + "/anon.csv", "--local", dir_ + "/local.csv", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const nlohmann::json local_report = nlohmann::json::parse(ReadAll(dir_ + "/local.json"));
  EXPECT_NEAR(j.at("local").at("DR").get<double>(),
              local_report.at("discernibility_ratio").get<double>(), 1e-12);
  EXPECT_EQ(j.at("local").at("groups").get<uint64_t>(),
            std::stoull(local_report.at("groups").get<std::string>()));
  EXPECT_LT(j.at("local").at("DR").get<double>(), j.at("DR").get<double>());
  EXPECT_GE(j.at("local").at("CE").get<double>(), 0.0);
}

// The thesis's measures through the command line: naive Bayes, k-fold cross-validation and the
// removal error reach the evaluator (the JSON names them; the text says how it classified).
TEST_F(EvaluateCliTest, NaiveBayesCrossValidationAndRemovalError) {
  const std::vector<std::string> base = {
      "evaluate",     "--spec",           dir_ + "/job.yaml", "--raw",       dir_ + "/table.csv",
      "--anonymized", dir_ + "/anon.csv", "--classifier",     "naive-bayes", "--folds",
      "10",           "--remove",         "age,sex"};
  const CliResult text = RunFedanon(base);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("800 records: naive Bayes, 10-fold cross-validation (seed 1)"));
  EXPECT_THAT(text.out, HasSubstr("RE  removal error, attributes removed"));
  std::vector<std::string> json_args = base;
  json_args.push_back("--json");
  const CliResult json = RunFedanon(json_args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("classifier").get<std::string>(), "naive-bayes");
  EXPECT_EQ(j.at("folds").get<int>(), 10);
  for (const char* figure : {"BE", "CE", "UE", "RE"}) {
    EXPECT_GE(j.at(figure).get<double>(), 0.0) << figure;
    EXPECT_LE(j.at(figure).get<double>(), 1.0) << figure;
  }
  const CliResult bad = RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw",
                                    dir_ + "/table.csv", "--classifier", "svm"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("'svm' is not one of c45, naive-bayes"));
}

// `evaluate --distortion` on the thesis's own example: Table 4.1(a) and its 4-anonymous release
// Table 4.2 (Janitor, Mover -> Non_Technical; Engineer, Lawyer -> Professional: 15 units of one
// level over 34 records; the continuous Age released as it is costs nothing).
TEST(EvaluateDistortionCliTest, ThesisTable42) {
  const std::string dir = FreshDir("evaluate_distortion_cli");
  WriteText(dir + "/job.csv",
            "Janitor;Non_Technical;Blue_Collar;ANY_Job\nMover;Non_Technical;Blue_Collar;ANY_Job\n"
            "Carpenter;Technical;Blue_Collar;ANY_Job\nElectrician;Technical;Blue_Collar;ANY_Job\n"
            "Manager;White_Collar;ANY_Job\nEngineer;Professional;White_Collar;ANY_Job\n"
            "Lawyer;Professional;White_Collar;ANY_Job\n");
  WriteText(dir + "/sex.csv", "M;ANY_Sex\nF;ANY_Sex\n");
  WriteText(dir + "/job.yaml", R"(name: table42
attributes:
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Age, role: qid, type: continuous, range: [1, 99]}
  - {name: Class, role: class}
privacy: {model: lkc, L: 2, K: 4}
)");
  // Table 4.1(a): Job, Sex, Age, class counts (Y, N); the Job Table 4.2 releases.
  struct Row {
    const char *job, *sex, *age;
    int yes, no;
    const char* released;
  };
  const Row rows[] = {{"Janitor", "M", "30", 0, 3, "Non_Technical"},
                      {"Mover", "M", "32", 0, 4, "Non_Technical"},
                      {"Carpenter", "M", "35", 2, 3, "Carpenter"},
                      {"Electrician", "F", "37", 3, 1, "Electrician"},
                      {"Manager", "F", "42", 4, 2, "Manager"},
                      {"Manager", "F", "44", 4, 0, "Manager"},
                      {"Engineer", "M", "44", 4, 0, "Professional"},
                      {"Engineer", "F", "44", 3, 0, "Professional"},
                      {"Lawyer", "F", "44", 1, 0, "Professional"}};
  std::string raw = "Job,Sex,Age,Class\n", released = raw;
  for (const Row& r : rows) {
    for (int i = 0; i < r.yes + r.no; ++i) {
      const std::string rest =
          std::string(",") + r.sex + "," + r.age + (i < r.yes ? ",Y\n" : ",N\n");
      raw += r.job + rest;
      released += r.released + rest;
    }
  }
  WriteText(dir + "/raw.csv", raw);
  WriteText(dir + "/table42.csv", released);
  const std::vector<std::string> args = {
      "evaluate",       "--spec",       dir + "/job.yaml",    "--raw",
      dir + "/raw.csv", "--anonymized", dir + "/table42.csv", "--distortion"};
  const CliResult text = RunFedanon(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("distortion per record: categorical 0.4412, continuous 0.0000"));
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const CliResult json = RunFedanon(json_args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_DOUBLE_EQ(j.at("distortion").at("categorical").get<double>(), 15.0 / 34);
  EXPECT_EQ(j.at("distortion").at("continuous").get<double>(), 0.0);
  // Without a release there is nothing to measure.
  const CliResult bad = RunFedanon(
      {"evaluate", "--spec", dir + "/job.yaml", "--raw", dir + "/raw.csv", "--distortion"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--distortion needs --anonymized"));
}

TEST_F(EvaluateCliTest, WithoutAnAnonymizedTableOnlyTheRawBaselines) {
  const CliResult r = RunFedanon(
      {"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("BE"));
  EXPECT_TRUE(j.contains("UE"));
  EXPECT_FALSE(j.contains("CE"));
  EXPECT_FALSE(j.contains("DR"));
}

TEST_F(EvaluateCliTest, FailsClearly) {
  // Usage: --raw missing.
  const CliResult usage =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--anonymized", dir_ + "/anon.csv"});
  EXPECT_EQ(usage.exit_code, 2);
  // A table that is not an anonymization of the raw one.
  WriteText(dir_ + "/other.csv", "age,income\n30,<=50K\n");
  const CliResult other = RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw",
                                      dir_ + "/table.csv", "--anonymized", dir_ + "/other.csv"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err, HasSubstr("fedanon evaluate: "));
  EXPECT_THAT(other.err, HasSubstr("other.csv:1: no column 'workclass' in the header"));
}

TEST_F(EvaluateCliTest, SweepWritesHtmlAndCsv) {
  const CliResult r = RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw",
                                  dir_ + "/table.csv", "--grid", "L=1,2 K=10,20", "--naive-parties",
                                  "2", "--html", dir_ + "/s.html", "--csv", dir_ + "/s.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sweep 4/4: L=2 K=20 C=0.2 naive: "));
  const std::string html = ReadAll(dir_ + "/s.html");
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  const std::string csv = ReadAll(dir_ + "/s.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 8);
}

TEST_F(EvaluateCliTest, SweepFailuresLeaveNoFiles) {
  const CliResult bad_grid =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "L=2 Q=3", "--html", dir_ + "/s.html", "--csv", dir_ + "/s.csv", "--quiet"});
  EXPECT_EQ(bad_grid.exit_code, 1);
  EXPECT_THAT(bad_grid.err, HasSubstr("fedanon sweep: --grid: unknown key 'Q'"));
  const CliResult no_dir =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "K=10", "--html", dir_ + "/s.html", "--csv", dir_ + "/missing/s.csv"});
  EXPECT_EQ(no_dir.exit_code, 1);
  EXPECT_THAT(no_dir.err, HasSubstr("does not exist"));
  const CliResult one_party =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "K=10", "--naive-parties", "1"});
  EXPECT_EQ(one_party.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ + "/s.html"));
  EXPECT_FALSE(fs::exists(dir_ + "/s.csv"));
}

TEST_F(EvaluateCliTest, SweepOutputsNeverReplaceItsInputs) {
  const std::string raw = ReadAll(dir_ + "/table.csv");
  const std::string spec = ReadAll(dir_ + "/job.yaml");
  const CliResult html_on_raw =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "K=10", "--html", dir_ + "/table.csv", "--csv", dir_ + "/s.csv", "--quiet"});
  EXPECT_EQ(html_on_raw.exit_code, 1);
  EXPECT_THAT(html_on_raw.err, HasSubstr("--html '" + dir_ +
                                         "/table.csv' is the same file as --raw; refusing to "
                                         "overwrite it"));
  const CliResult csv_on_spec =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "K=10", "--html", dir_ + "/s.html", "--csv", dir_ + "/./job.yaml", "--quiet"});
  EXPECT_EQ(csv_on_spec.exit_code, 1);
  EXPECT_THAT(csv_on_spec.err, HasSubstr("is the same file as --spec"));
  const CliResult both_same =
      RunFedanon({"sweep", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv", "--grid",
                  "K=10", "--html", dir_ + "/s.out", "--csv", dir_ + "/s.out", "--quiet"});
  EXPECT_EQ(both_same.exit_code, 1);
  EXPECT_THAT(both_same.err, HasSubstr("--csv '" + dir_ + "/s.out' is the same file as --html"));
  EXPECT_EQ(ReadAll(dir_ + "/table.csv"), raw);
  EXPECT_EQ(ReadAll(dir_ + "/job.yaml"), spec);
  EXPECT_FALSE(fs::exists(dir_ + "/s.out"));
}

TEST_F(EvaluateCliTest, GenDataRefusesAbsurdRowCounts) {
  const std::string out = dir_ + "/huge";
  const CliResult r = RunFedanon({"gen-data", "--rows", "1000000000000", "--out", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("rows must be at most 100000000, got 1000000000000"));
  EXPECT_FALSE(fs::exists(out + "/table.csv"));
}

// yang2010 §7 on a `fedanon randomize` release: the report's shape, a release equal to the raw
// table answers every query exactly and keeps every rule, and the failures.
TEST_F(EvaluateCliTest, RandomizedReleaseQueryErrorsAndAssociations) {
  const CliResult ra =
      RunFedanon({"randomize", "--spec", dir_ + "/job.yaml", "--input", dir_ + "/table.csv",
                  "--output", dir_ + "/ra.csv", "--seed", "3", "--quiet"});
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  const std::vector<std::string> common = {"evaluate",
                                           "--spec",
                                           dir_ + "/job.yaml",
                                           "--raw",
                                           dir_ + "/table.csv",
                                           "--queries",
                                           "200",
                                           "--max-query-attributes",
                                           "3",
                                           "--anatomy-l",
                                           "2",
                                           "--apriori-support",
                                           "0.1",
                                           "--json"};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--randomized", dir_ + "/ra.csv"});
  const CliResult r = RunFedanon(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("records").get<int>(), 800);
  EXPECT_EQ(j.at("sensitive_attribute").get<std::string>(), "marital-status");
  EXPECT_EQ(j.at("anatomy").at("l").get<int>(), 2);
  ASSERT_EQ(j.at("query_relative_error").size(), 3u);
  double randomized_error = 0;
  for (const auto& row : j.at("query_relative_error")) {
    EXPECT_EQ(row.at("queries").get<int>(), 200);
    randomized_error += row.at("randomized_relative_error").get<double>();
    EXPECT_GT(row.at("anatomy_relative_error").get<double>(), 0.0);
  }
  EXPECT_GT(randomized_error, 0.0);  // one QID value of every record was replaced
  const auto& all = j.at("randomized_associations").at("by_length").at(0);
  EXPECT_EQ(all.at("length").get<std::string>(), "all");
  EXPECT_GT(all.at("original").get<int>(), 0);
  EXPECT_LE(all.at("recovered").get<int>(), all.at("original").get<int>());

  // The raw table as its own "release": every answer exact, every rule recovered.
  args = common;
  args.insert(args.end(), {"--randomized", dir_ + "/table.csv"});
  const CliResult same = RunFedanon(args);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const nlohmann::json s = nlohmann::json::parse(same.out);
  for (const auto& row : s.at("query_relative_error")) {
    EXPECT_EQ(row.at("randomized_relative_error").get<double>(), 0.0);
  }
  EXPECT_EQ(s.at("randomized_associations").at("by_length").at(0).at("ratio").get<double>(), 1.0);

  const CliResult text =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--randomized", dir_ + "/ra.csv", "--queries", "50", "--anatomy-l", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("800 records, 12 QID attributes, sensitive attribute "
                                  "'marital-status'"));
  EXPECT_THAT(text.out, HasSubstr("Anatomy baseline: l = 2"));
  EXPECT_THAT(text.out, HasSubstr("Apriori, support 8%, confidence 15%"));
}

// --ldiversity-l: yang2010 Eq. 12's entropy l-diverse generalization baseline beside the
// randomized release (its estimates are worked by hand in ra_evaluation_test); l = 1 is refused.
TEST_F(EvaluateCliTest, RandomizedReleaseBesideTheLDiverseBaseline) {
  const CliResult ra =
      RunFedanon({"randomize", "--spec", dir_ + "/job.yaml", "--input", dir_ + "/table.csv",
                  "--output", dir_ + "/ra.csv", "--seed", "3", "--quiet"});
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  const std::vector<std::string> common = {"evaluate",
                                           "--spec",
                                           dir_ + "/job.yaml",
                                           "--raw",
                                           dir_ + "/table.csv",
                                           "--randomized",
                                           dir_ + "/ra.csv",
                                           "--queries",
                                           "100",
                                           "--max-query-attributes",
                                           "2",
                                           "--anatomy-l",
                                           "0"};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--ldiversity-l", "2", "--json"});
  const CliResult r = RunFedanon(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("ldiversity").at("l").get<int>(), 2);
  EXPECT_GE(j.at("ldiversity").at("groups").get<int>(), 1);
  ASSERT_EQ(j.at("query_relative_error").size(), 2u);
  for (const auto& row : j.at("query_relative_error")) {
    EXPECT_GE(row.at("ldiversity_relative_error").get<double>(), 0.0);
    EXPECT_FALSE(row.contains("anatomy_relative_error"));  // --anatomy-l 0: no Anatomy baseline
  }
  args = common;
  args.insert(args.end(), {"--ldiversity-l", "2"});
  const CliResult text = RunFedanon(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("entropy l-diverse generalization baseline: l = 2"));
  args = common;
  args.insert(args.end(), {"--ldiversity-l", "1"});
  const CliResult one = RunFedanon(args);
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_THAT(one.err, HasSubstr("l must be at least 2, not 1"));
}

TEST_F(EvaluateCliTest, RandomizedReleaseFailsClearly) {
  const CliResult both =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--randomized", dir_ + "/table.csv", "--anonymized", dir_ + "/anon.csv"});
  EXPECT_EQ(both.exit_code, 2);
  const CliResult big_l =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--randomized", dir_ + "/table.csv", "--anatomy-l", "50"});
  EXPECT_EQ(big_l.exit_code, 1);
  EXPECT_THAT(big_l.err, HasSubstr("Anatomy with l = 50 is impossible"));
  EXPECT_THAT(big_l.err, HasSubstr("the largest eligible l here is"));
  const std::string raw = ReadAll(dir_ + "/table.csv");
  WriteText(dir_ + "/short.csv", raw.substr(0, raw.rfind('\n', raw.size() - 2) + 1));
  const CliResult short_release =
      RunFedanon({"evaluate", "--spec", dir_ + "/job.yaml", "--raw", dir_ + "/table.csv",
                  "--randomized", dir_ + "/short.csv"});
  EXPECT_EQ(short_release.exit_code, 1);
  EXPECT_THAT(short_release.err, HasSubstr("short.csv: 799 records"));
}

}  // namespace
}  // namespace fedanon::testing
