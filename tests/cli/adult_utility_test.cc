// Utility on UCI Adult (45,222 records) in the setting of mohammed2010 §6 (QID = 13 attributes,
// sensitive marital-status with S = {Divorced, Separated}, class income; continuous attributes
// discretized dynamically, categorical ones generalized along ARX's hierarchies): one
// `fedanon sweep` cell, L = 2, K = 100, C = 0.2, with the naive generalize-then-integrate
// baseline over 3 parties. The papers report BE = 14.7% (C4.5, 2/3 training, 1/3 test); ours
// must be within 1.5 points, and the federated (= centralized) release must classify better than
// the naive one (mohammed2010 §6.1.2). Skipped when the shared data set is not present.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFedanon = ::fedanon::testing::BinaryDir() + "/bin/fedanon";
const std::string kAdultDir = ::fedanon::testing::SharedDir() + "/datasets/adult";
const std::string kAdultCsv = ::fedanon::testing::SharedDir() + "/datasets/adult/adult_clean.csv";

std::string AdultSpec() {
  const std::string arx = std::string(kAdultDir) + "/arx-hierarchies/adult_hierarchy_";
  auto categorical = [&](const std::string& name, const std::string& taxonomy) {
    return "  - {name: " + name + ", role: qid, taxonomy: \"" + taxonomy + "\"}\n";
  };
  auto continuous = [](const std::string& name) {
    return "  - {name: " + name + ", role: qid, type: continuous}\n";
  };
  return "name: adult-utility\nattributes:\n" + continuous("age") +
         categorical("workclass", arx + "workclass.csv") + continuous("fnlwgt") +
         categorical("education", arx + "education.csv") + continuous("education-num") +
         "  - {name: marital-status, role: sensitive}\n" +
         categorical("occupation", arx + "occupation.csv") +
         categorical("relationship", std::string(kAdultDir) +
                                         "/extra-hierarchies/adult_hierarchy_relationship.csv") +
         categorical("race", arx + "race.csv") + categorical("sex", arx + "sex.csv") +
         continuous("capital-gain") + continuous("capital-loss") + continuous("hours-per-week") +
         categorical("native-country", arx + "native-country.csv") +
         "  - {name: income, role: class}\n"
         "privacy:\n  model: lkc\n  L: 2\n  K: 100\n  C: 0.2\n"
         "  sensitive_values: [Divorced, Separated]\n"
         "score: infogain\n";
}

TEST(AdultUtilityTest, BaselineErrorAndFederatedBeatsNaive) {
  if (!fs::exists(kAdultCsv)) {
    GTEST_SKIP() << "UCI Adult not found at " << kAdultCsv;
  }
  const std::string dir = FreshDir("adult_utility");
  WriteText(dir + "/job.yaml", AdultSpec());
  const std::string capture = FreshDir("adult_utility_capture");
  const CliResult r = RunBinary(kFedanon,
                                {"sweep", "--spec", dir + "/job.yaml", "--raw", kAdultCsv, "--grid",
                                 "L=2 K=100", "--naive-parties", "3", "--html", dir + "/adult.html",
                                 "--csv", dir + "/adult.csv", "--quiet"},
                                capture);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // method,L,K,C,status,CE,DR,groups,seconds,BE,UE,error
  const std::vector<std::string> lines =
      absl::StrSplit(ReadAll(dir + "/adult.csv"), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  const std::vector<std::string> central = absl::StrSplit(lines[1], ',');
  const std::vector<std::string> naive = absl::StrSplit(lines[2], ',');
  ASSERT_EQ(central[0], "centralized");
  ASSERT_EQ(naive[0], "naive");
  ASSERT_EQ(central[4], "ok");
  ASSERT_EQ(naive[4], "ok");
  const double be = std::stod(central[9]);
  const double ue = std::stod(central[10]);
  const double ce = std::stod(central[5]);
  const double naive_ce = std::stod(naive[5]);
  EXPECT_NEAR(be, 0.147, 0.015);
  EXPECT_GT(ue, be);
  EXPECT_LT(ce, naive_ce) << "federated CE " << ce << ", naive CE " << naive_ce;
  EXPECT_LT(ce, ue);
  RecordProperty("BE", std::to_string(be));
  RecordProperty("UE", std::to_string(ue));
  RecordProperty("CE", std::to_string(ce));
  RecordProperty("naive_CE", std::to_string(naive_ce));
  fs::remove_all(dir);
  fs::remove_all(capture);
}

// yang2010 §7.1's setting: nine QID attributes, occupation sensitive. RA (Algorithm 1, seeded)
// against the Anatomy baseline at the largest l Adult allows (7: Craft-repair is 13.3% of the
// records). The paper's finding must hold: RA keeps most quasi-sensitive rules at 8% support /
// 15% confidence and more than the permutation does, and answers 1-attribute COUNT queries
// more accurately (median relative error).
TEST(AdultUtilityTest, RandomAnonymizationKeepsMoreThanAnatomy) {
  if (!fs::exists(kAdultCsv)) {
    GTEST_SKIP() << "UCI Adult not found at " << kAdultCsv;
  }
  const std::string dir = FreshDir("adult_ra_eval");
  std::string spec = "name: adult-ra\nattributes:\n";
  for (const char* qid : {"age", "workclass", "education", "marital-status", "relationship", "race",
                          "sex", "native-country", "income"}) {
    spec += std::string("  - {name: ") + qid + ", role: qid, type: categorical}\n";
  }
  spec +=
      "  - {name: occupation, role: sensitive}\n"
      "privacy: {model: lkc, L: 2, K: 2, C: 1.0, sensitive_values: [Prof-specialty]}\n"
      "score: discernibility\n";
  WriteText(dir + "/job.yaml", spec);
  const CliResult ra = RunFedanon({"randomize", "--spec", dir + "/job.yaml", "--input", kAdultCsv,
                                   "--output", dir + "/ra.csv", "--seed", "1", "--quiet"});
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  const CliResult r =
      RunFedanon({"evaluate", "--spec", dir + "/job.yaml", "--raw", kAdultCsv, "--randomized",
                  dir + "/ra.csv", "--queries", "200", "--max-query-attributes", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("records").get<int>(), 45222);
  EXPECT_EQ(j.at("anatomy").at("l").get<int>(), 7);
  const auto& one = j.at("query_relative_error").at(0);
  EXPECT_LT(one.at("randomized_median_relative_error").get<double>(),
            one.at("anatomy_median_relative_error").get<double>());
  const double ra_recovered =
      j.at("randomized_associations").at("by_length").at(0).at("ratio").get<double>();
  const double anatomy_recovered =
      j.at("anatomy_associations").at("by_length").at(0).at("ratio").get<double>();
  EXPECT_GE(ra_recovered, 0.7);
  EXPECT_LT(anatomy_recovered, ra_recovered);
}

}  // namespace
}  // namespace fedanon::testing
