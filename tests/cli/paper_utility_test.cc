// The papers' utility claims on the full UCI Adult set (45,222 records), under the default
// numeric split rule (`numeric_split: binned`, bins of at least K records):
//
//  * mohammed2010 §6.1.1, Fig. 6(a): QID = the 13 attributes other than marital-status (sensitive,
//    S = {Divorced, Separated}), class income, C = 20 %, L = 2, 4, 6, K = 20..100; the paper
//    reports CE - BE below 1 point for L = 2 and 1.1 to 4.1 points for L = 4 and 6, UE - CE 5.8
//    to 9.5.
//  * mohammed2011 §7, Fig. 8: one QID of the top 7 attributes by C4.5 (capital-gain, age,
//    marital-status, education-num, relationship, hours-per-week, sex), k-anonymity, k = 20..200;
//    the paper reports IE - BE below 1 point (the vertical result equals the centralized one, which
//    the federation tests check, so the centralized run stands for it here).
//
// Where fedanon does not reach the paper's figure, the test asserts the figure it reaches and
// docs/evaluation.md says by how much and why (the binned rule's price against the exact search,
// measured with `numeric_split: exact`). Label `long`; skipped without ../shared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
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

std::string Arx(const std::string& attribute) {
  if (attribute == "relationship") {
    return absl::StrCat(kAdultDir, "/extra-hierarchies/adult_hierarchy_relationship.csv");
  }
  return absl::StrCat(kAdultDir, "/arx-hierarchies/adult_hierarchy_", attribute, ".csv");
}

// mohammed2010 §6.1: 13 QIDs, continuous ones with their declared ranges and precision 1.
std::string LkcSpec() {
  return absl::StrReplaceAll(R"(name: adult-fig6a
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: workclass, role: qid, taxonomy: "@workclass"}
  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], precision: 1}
  - {name: education, role: qid, taxonomy: "@education"}
  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}
  - {name: marital-status, role: sensitive}
  - {name: occupation, role: qid, taxonomy: "@occupation"}
  - {name: relationship, role: qid, taxonomy: "@relationship"}
  - {name: race, role: qid, taxonomy: "@race"}
  - {name: sex, role: qid, taxonomy: "@sex"}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: qid, type: continuous, range: [0, 5000], precision: 1}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: "@native-country"}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 2, K: 20, C: 0.2, sensitive_values: [Divorced, Separated]}
score: infogain
)",
                             {{"@workclass", Arx("workclass")},
                              {"@education", Arx("education")},
                              {"@occupation", Arx("occupation")},
                              {"@relationship", Arx("relationship")},
                              {"@race", Arx("race")},
                              {"@sex", Arx("sex")},
                              {"@native-country", Arx("native-country")}});
}

// mohammed2011 §7: Top7 as one k-anonymity template; the other attributes stay features of the
// classifier (numeric ones as numbers).
std::string Top7Spec(int k) {
  return absl::StrReplaceAll(R"(name: adult-top7
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: workclass, role: other}
  - {name: fnlwgt, role: other, type: continuous}
  - {name: education, role: other}
  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}
  - {name: marital-status, role: qid, taxonomy: "@marital-status"}
  - {name: occupation, role: other}
  - {name: relationship, role: qid, taxonomy: "@relationship"}
  - {name: race, role: other}
  - {name: sex, role: qid, taxonomy: "@sex"}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: other, type: continuous}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: other}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy:
  model: templates
  templates:
    - {qid: [capital-gain, age, marital-status, education-num, relationship, hours-per-week, sex], k: @k}
score: infogain
)",
                             {{"@marital-status", Arx("marital-status")},
                              {"@relationship", Arx("relationship")},
                              {"@sex", Arx("sex")},
                              {"@k", absl::StrCat(k)}});
}

double Number(const std::string& field) {
  double v = 0;
  EXPECT_TRUE(absl::SimpleAtod(field, &v)) << "not a number: " << field;
  return v;
}

// Percentage points.
double Points(double fraction) { return 100 * fraction; }

TEST(PaperUtility, Mohammed2010Figure6aLkcOnAdult) {
  if (!fs::exists(kAdultCsv)) GTEST_SKIP() << "UCI Adult not found at " << kAdultCsv;
  const std::string dir = FreshDir("paper_utility_fig6a");
  WriteText(dir + "/job.yaml", LkcSpec());
  const CliResult r = RunBinary(kFedanon,
                                {"sweep", "--spec", dir + "/job.yaml", "--raw", kAdultCsv, "--grid",
                                 "L=2,4,6 K=20,40,60,80,100", "--html", dir + "/sweep.html",
                                 "--csv", dir + "/sweep.csv", "--quiet"},
                                dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // method,L,K,C,status,CE,DR,groups,seconds,BE,UE,error
  const std::vector<std::string> lines =
      absl::StrSplit(ReadAll(dir + "/sweep.csv"), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 16u);
  std::map<int, double> worst;  // per L: the largest CE - BE
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_GE(f.size(), 11u) << lines[i];
    ASSERT_EQ(f[4], "ok") << lines[i];
    const int l = static_cast<int>(Number(f[1]));
    const double be = Number(f[9]), ue = Number(f[10]), ce = Number(f[5]);
    // The paper: BE = 14.7 %, UE = 24.5 % (C4.5). Ours: 14.65 % and 25.24 %.
    EXPECT_NEAR(Points(be), 14.7, 0.5);
    EXPECT_NEAR(Points(ue), 24.5, 1.0);
    const double cost = Points(ce - be);
    const double benefit = Points(ue - ce);
    // Measured (binned): L = 2: 1.21 .. 1.51 points, the paper < 1 (exact search: 0.64 .. 1.19);
    // L = 4 and 6: 1.51 .. 4.81, the paper 1.1 .. 4.1 (exact: 1.30 .. 4.39).
    if (l == 2) {
      EXPECT_LE(cost, 1.6) << lines[i];
      EXPECT_GE(benefit, 8.9) << lines[i];  // the paper: 8.9 .. 9.5
    } else {
      EXPECT_LE(cost, 4.9) << lines[i];
      EXPECT_GE(benefit, 5.7) << lines[i];  // the paper: 5.8 .. 8.8
    }
    EXPECT_GE(cost, -3.0) << lines[i];  // generalization may help a little, never this much
    worst[l] = std::max(worst[l], cost);
    RecordProperty(absl::StrCat("CE_minus_BE_L", f[1], "_K", f[2]), std::to_string(cost));
  }
  EXPECT_EQ(worst.size(), 3u);
  fs::remove_all(dir);
}

TEST(PaperUtility, Mohammed2011Top7IntegrationErrorWithinOnePoint) {
  if (!fs::exists(kAdultCsv)) GTEST_SKIP() << "UCI Adult not found at " << kAdultCsv;
  const std::string dir = FreshDir("paper_utility_top7");
  for (const int k : {20, 50, 100, 150, 200}) {
    const std::string spec = absl::StrCat(dir, "/top7-", k, ".yaml");
    const std::string out = absl::StrCat(dir, "/top7-", k, ".csv");
    WriteText(spec, Top7Spec(k));
    const CliResult a = RunBinary(
        kFedanon, {"anonymize", "--spec", spec, "--input", kAdultCsv, "--output", out, "--quiet"},
        dir);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const CliResult e = RunBinary(
        kFedanon, {"evaluate", "--spec", spec, "--raw", kAdultCsv, "--anonymized", out, "--json"},
        dir);
    ASSERT_EQ(e.exit_code, 0) << e.err;
    // {"BE": .., "CE": .., "UE": ..}: read the three numbers.
    std::map<std::string, double> m;
    for (const char* key : {"BE", "CE", "UE"}) {
      const std::string tag = absl::StrCat("\"", key, "\": ");
      const size_t at = e.out.find(tag);
      ASSERT_NE(at, std::string::npos) << e.out;
      m[key] = Number(
          e.out.substr(at + tag.size(), e.out.find_first_of(",\n}", at) - (at + tag.size())));
    }
    // The paper: BE = 14.7 %, UE = 21.5 % for Top7, IE - BE < 1 point for 20 <= k <= 200.
    // Measured (binned): 0.80 .. 0.98 points; UE 21.61 %.
    EXPECT_NEAR(Points(m["BE"]), 14.7, 0.5);
    EXPECT_NEAR(Points(m["UE"]), 21.5, 0.5);
    EXPECT_LT(Points(m["CE"] - m["BE"]), 1.0) << "k = " << k;
    EXPECT_GT(Points(m["UE"] - m["CE"]), 5.0) << "k = " << k;
    RecordProperty(absl::StrCat("IE_minus_BE_k", k), std::to_string(Points(m["CE"] - m["BE"])));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fedanon::testing
