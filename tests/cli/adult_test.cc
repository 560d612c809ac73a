// End-to-end runs of `fedanon anonymize` on UCI Adult (45,222 complete records) in the setting of
// mohammed2010 §6: QID = the 13 attributes other than marital-status, sensitive marital-status,
// class income. Continuous attributes are discretized dynamically (no taxonomy); categorical ones
// use ARX's hierarchies (plus fedanon's one for relationship) from the shared data directory,
// referenced by absolute path from a spec written to a temporary directory. Each output is
// verified by the independent brute-force checker (privacy, truthfulness; maximality is skipped
// as too slow at this size). Skipped when the shared data set is not present.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;

const std::string kAdultDir = ::fedanon::testing::SharedDir() + "/datasets/adult";
const std::string kAdultCsv = ::fedanon::testing::SharedDir() + "/datasets/adult/adult_clean.csv";
constexpr uint64_t kAdultRecords = 45222;

// Protobuf's JSON mapping writes 64-bit integers as strings.
uint64_t JsonU64(const nlohmann::json& j) {
  if (j.is_string()) return std::stoull(j.get<std::string>());
  return j.get<uint64_t>();
}

// The attribute list of mohammed2010 §6 with absolute taxonomy paths.
std::string AdultAttributes() {
  const std::string arx = std::string(kAdultDir) + "/arx-hierarchies/adult_hierarchy_";
  const std::string relationship =
      std::string(kAdultDir) + "/extra-hierarchies/adult_hierarchy_relationship.csv";
  auto categorical = [](const std::string& name, const std::string& taxonomy) {
    return "  - {name: " + name + ", role: qid, taxonomy: \"" + taxonomy + "\"}\n";
  };
  auto continuous = [](const std::string& name) {
    return "  - {name: " + name + ", role: qid, type: continuous}\n";
  };
  return "attributes:\n" + continuous("age") + categorical("workclass", arx + "workclass.csv") +
         continuous("fnlwgt") + categorical("education", arx + "education.csv") +
         continuous("education-num") + "  - {name: marital-status, role: sensitive}\n" +
         categorical("occupation", arx + "occupation.csv") +
         categorical("relationship", relationship) + categorical("race", arx + "race.csv") +
         categorical("sex", arx + "sex.csv") + continuous("capital-gain") +
         continuous("capital-loss") + continuous("hours-per-week") +
         categorical("native-country", arx + "native-country.csv") +
         "  - {name: income, role: class}\n";
}

class AdultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kAdultCsv)) {
      GTEST_SKIP() << "UCI Adult not found at " << kAdultCsv
                   << " (set -DFEDANON_SHARED_DIR=<dir with datasets/adult/adult_clean.csv>)";
    }
  }

  // Writes the spec, runs the CLI and verifies the output with the checker; returns the report.
  void RunAndVerify(const std::string& name, const std::string& privacy_and_score,
                    nlohmann::json* report_out) {
    Job job;
    job.dir = FreshDir(name);
    job.spec_path = job.dir + "/job.yaml";
    job.input_path = kAdultCsv;
    job.output_path = job.dir + "/out.csv";
    job.report_path = job.dir + "/report.json";
    WriteText(job.spec_path, "name: " + name + "\n" + AdultAttributes() + privacy_and_score);

    const CliResult r =
        RunFedanon({"anonymize", "--spec", job.spec_path, "--input", job.input_path, "--output",
                    job.output_path, "--report", job.report_path, "--quiet"});
    ASSERT_EQ(r.signal, 0) << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;

    ASSERT_TRUE(fs::exists(job.report_path));
    nlohmann::json report;
    ASSERT_NO_THROW(report = nlohmann::json::parse(ReadAll(job.report_path)));
    EXPECT_EQ(JsonU64(report.at("records_in")), kAdultRecords);
    EXPECT_EQ(JsonU64(report.at("records_dropped")), 0u);
    EXPECT_EQ(JsonU64(report.at("records_out")), kAdultRecords);

    ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
    EXPECT_EQ(in.anonymized.size(), kAdultRecords);
    EXPECT_EQ(in.raw.size(), kAdultRecords);
    // Every listed attribute but none other is released, in input column order.
    EXPECT_EQ(in.header.size(), 15u);
    const PrivacyCheck check = CheckPrivacy(in);
    EXPECT_TRUE(check.satisfied) << check.violation;
    EXPECT_OK(CheckTruthful(in));
    EXPECT_EQ(JsonU64(report.at("smallest_group")), check.smallest_group);
    EXPECT_NEAR(report.at("largest_confidence").get<double>(), check.largest_confidence, 1e-9);
    *report_out = std::move(report);
  }
};

// mohammed2010 §6: L = 4, K = 20, C = 20 % with S = {Divorced, Separated}.
TEST_F(AdultTest, Lkc4_20_02InfoGain) {
  nlohmann::json report;
  ASSERT_NO_FATAL_FAILURE(RunAndVerify("adult_l4_k20_c02",
                                       "privacy:\n"
                                       "  model: lkc\n"
                                       "  L: 4\n"
                                       "  K: 20\n"
                                       "  C: 0.2\n"
                                       "  sensitive_values: [Divorced, Separated]\n"
                                       "score: infogain\n",
                                       &report));
  EXPECT_GE(JsonU64(report.at("smallest_group")), 20u);
  EXPECT_LE(report.at("largest_confidence").get<double>(), 0.2 + 1e-9);
  EXPECT_GT(report.at("steps").size(), 0u);
}

// L = 2, K = 50 without a confidence bound (C = 1), scored by discernibility.
TEST_F(AdultTest, Lk2_50Discernibility) {
  nlohmann::json report;
  ASSERT_NO_FATAL_FAILURE(RunAndVerify("adult_l2_k50_disc",
                                       "privacy:\n"
                                       "  model: lkc\n"
                                       "  L: 2\n"
                                       "  K: 50\n"
                                       "  C: 1\n"
                                       "score: discernibility\n",
                                       &report));
  EXPECT_GE(JsonU64(report.at("smallest_group")), 50u);
  EXPECT_GT(report.at("steps").size(), 0u);
}

}  // namespace
}  // namespace fedanon::testing
