// Local recoding (`recoding: local`, issue #31) through real daemons: `fedanon federation up`
// starts fedanon-leader and one fedanon-party per table as child processes talking gRPC over
// loopback mTLS (as tests/cli/federation_up_test.cc does for global recoding), on `fedanon
// gen-data` tables.
//
// * horizontal, 3 parties, LKC with a confidence bound: the released table equals, as a multiset
//   of rows (the federated rows arrive shuffled by the secure union), the table `fedanon
//   anonymize` gives on the union with the same spec; the report's steps are the centralized
//   steps in the same order (attribute, value, score, info_gain, records); the centralized release
//   passes the independent checker CheckLocalPrivacy, so the equal federated release does too; the
//   final check ran at every party;
// * vertical, 2 parties, k-anonymity (one template over every QID): the joined table equals
//   `fedanon anonymize` on the joined table, checked by CheckLocalPrivacy the same way, and its
//   report's steps are the centralized steps in the same (wave, score, group id) order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/checker/brute_force_checker.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

const std::string kFedanon = ::fedanon::testing::BinaryDir() + "/bin/fedanon";

// The QIDs both tests use (gen-data's Adult-like schema): three categorical with taxonomies, one
// binary, two continuous.
constexpr char kHorizontalSpec[] = R"(name: generated-local-horizontal
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

constexpr char kVerticalSpec[] = R"(name: generated-local-vertical
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

// Rows as "a|b|c|" over `columns` (by name), sorted: a multiset of rows.
std::vector<std::string> SortedRows(const Table& t, const std::vector<std::string>& columns) {
  std::vector<size_t> idx;
  for (const auto& c : columns) {
    idx.push_back(
        static_cast<size_t>(std::find(t.header.begin(), t.header.end(), c) - t.header.begin()));
  }
  std::vector<std::string> rows;
  for (const auto& r : t.rows) {
    std::string line;
    for (size_t i : idx) line += (i < r.size() ? r[i] : "<missing>") + "|";
    rows.push_back(line);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadAll(path), nullptr, /*allow_exceptions=*/false);
}

// gen-data's tables (`--parties n`, `--partition`) in a fresh directory, with `spec` as local.yaml.
std::string Generate(const std::string& name, int rows, int parties, const std::string& partition,
                     const std::string& spec) {
  const std::string dir = FreshDir(name);
  const CliResult g =
      RunFedanon({"gen-data", "--rows", std::to_string(rows), "--parties", std::to_string(parties),
                  "--partition", partition, "--seed", "31", "--out", dir});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  WriteText(dir + "/local.yaml", spec);
  return dir;
}

// What one run through the daemons and the centralized run on the union gave.
struct Runs {
  Table federated;
  Table central;
  nlohmann::json fed_report;
  nlohmann::json central_report;
  std::string up_out;  // federation up's stdout (its summary)
};

// `federation up --wait` over party1.csv..partyN.csv, then `fedanon anonymize` on table.csv; the
// centralized release must pass CheckLocalPrivacy.
Runs RunBoth(const std::string& dir, int parties) {
  Runs runs;
  std::string data;
  for (int p = 1; p <= parties; ++p) {
    data += (p > 1 ? "," : "") + dir + "/party" + std::to_string(p) + ".csv";
  }
  const CliResult up = RunFedanon({"federation", "up", "--spec", dir + "/local.yaml",
                                   "--party-data", data, "--wait", "--result", dir + "/fed.csv",
                                   "--report", dir + "/fed.json", "--round-timeout", "120"});
  EXPECT_EQ(up.exit_code, 0) << "stdout:\n" << up.out << "stderr:\n" << up.err;
  runs.up_out = up.out;

  Job job;
  job.dir = dir;
  job.spec_path = dir + "/local.yaml";
  job.input_path = dir + "/table.csv";
  job.output_path = dir + "/central.csv";
  job.report_path = dir + "/central.json";
  const CliResult c =
      RunFedanon({"anonymize", "--spec", job.spec_path, "--input", job.input_path, "--output",
                  job.output_path, "--report", job.report_path, "--quiet"});
  EXPECT_EQ(c.exit_code, 0) << c.err;

  auto fed = ReadCsvTable(dir + "/fed.csv");
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (fed.ok()) runs.federated = *fed;
  auto central = ReadCsvTable(job.output_path);
  EXPECT_TRUE(central.ok()) << central.status();
  if (central.ok()) runs.central = *central;
  runs.fed_report = ReadJson(dir + "/fed.json");
  runs.central_report = ReadJson(job.report_path);

  auto in = MakeCheckerInput(job);
  EXPECT_TRUE(in.ok()) << in.status();
  if (in.ok()) {
    const PrivacyCheck check = CheckLocalPrivacy(*in);
    EXPECT_TRUE(check.satisfied) << check.violation;
    EXPECT_GE(check.smallest_group, 20u);
  }
  return runs;
}

void ExpectSameRelease(const Runs& runs, size_t rows) {
  ASSERT_FALSE(runs.central.header.empty());
  EXPECT_EQ(runs.federated.header, runs.central.header);
  EXPECT_EQ(runs.federated.rows.size(), rows);
  EXPECT_EQ(runs.central.rows.size(), rows);
  EXPECT_EQ(SortedRows(runs.federated, runs.central.header),
            SortedRows(runs.central, runs.central.header));
  ASSERT_TRUE(runs.fed_report.is_object());
  ASSERT_TRUE(runs.central_report.is_object());
  EXPECT_EQ(runs.fed_report.value("recoding", ""), "RECODING_LOCAL");
  EXPECT_EQ(runs.fed_report["groups"], runs.central_report["groups"]);
  EXPECT_EQ(runs.fed_report["smallest_group"], runs.central_report["smallest_group"]);
}

// The report's steps equal the centralized report's, in the same order.
void ExpectSameSteps(const Runs& runs) {
  const nlohmann::json& fed = runs.fed_report["steps"];
  const nlohmann::json& central = runs.central_report["steps"];
  ASSERT_TRUE(fed.is_array() && central.is_array());
  EXPECT_GT(central.size(), 10u);  // local recoding took many per-group steps
  ASSERT_EQ(fed.size(), central.size());
  for (size_t i = 0; i < fed.size(); ++i) {
    EXPECT_EQ(fed[i]["attribute"], central[i]["attribute"]) << "step " << i;
    EXPECT_EQ(fed[i]["value"], central[i]["value"]) << "step " << i;
    EXPECT_EQ(fed[i]["children"], central[i]["children"]) << "step " << i;
    EXPECT_EQ(fed[i]["records"], central[i]["records"]) << "step " << i;
    EXPECT_DOUBLE_EQ(fed[i].value("score", -1.0), central[i].value("score", -2.0)) << "step " << i;
    EXPECT_DOUBLE_EQ(fed[i].value("info_gain", 0.0), central[i].value("info_gain", 0.0))
        << "step " << i;
  }
}

TEST(LocalRecodingDaemons, HorizontalThreePartiesEqualsCentralizedAndPassesTheChecker) {
  const std::string dir = Generate("local_daemons_h", 3000, 3, "horizontal", kHorizontalSpec);
  const Runs runs = RunBoth(dir, 3);
  ExpectSameRelease(runs, 3000);
  ExpectSameSteps(runs);
  EXPECT_EQ(runs.fed_report["largest_confidence"], runs.central_report["largest_confidence"]);
  EXPECT_THAT(runs.fed_report.value("final_check", ""),
              ::testing::StartsWith("passed at every data party: 3 parties re-checked"));
  std::filesystem::remove_all(dir);
}

TEST(LocalRecodingDaemons, VerticalTwoPartiesKAnonymityEqualsCentralized) {
  const std::string dir = Generate("local_daemons_v", 2000, 2, "vertical", kVerticalSpec);
  const Runs runs = RunBoth(dir, 2);
  ExpectSameRelease(runs, 2000);
  ExpectSameSteps(runs);
  std::filesystem::remove_all(dir);
}

// The vertical job with a confidence bound: LKC L = 2, K = 20, C = 0.3 on marital-status (at
// party1, the judge of party2's splits per group).
TEST(LocalRecodingDaemons, VerticalTwoPartiesLkcWithJudgesEqualsCentralized) {
  std::string spec = kVerticalSpec;
  const std::string templates =
      spec.substr(spec.find("privacy:"), spec.find("score:") - spec.find("privacy:"));
  spec.replace(spec.find(templates), templates.size(),
               "privacy: {model: lkc, L: 2, K: 20, C: 0.3, sensitive_values: [Divorced, "
               "Separated]}\n");
  const std::string dir = Generate("local_daemons_vc", 2000, 2, "vertical", spec);
  const Runs runs = RunBoth(dir, 2);
  ExpectSameRelease(runs, 2000);
  ExpectSameSteps(runs);
  EXPECT_EQ(runs.fed_report["largest_confidence"], runs.central_report["largest_confidence"]);
  // Filled by the judge (the bound is in force): above 0, at most C.
  const double conf = runs.fed_report.value("largest_confidence", 0.0);
  EXPECT_GT(conf, 0.0);
  EXPECT_LE(conf, 0.3 + 1e-9);
  std::printf("vertical local through daemons, LKC C = 0.3: %s groups, largest confidence %.4f\n",
              runs.fed_report["groups"].dump().c_str(), conf);
  std::filesystem::remove_all(dir);
}

// `--round-timeout` (the seconds a party may take per request, which a 1M-record local job's
// row union needs beyond the leader's 60 s) takes 1 to 86,400 seconds; outside that range is a
// usage error, before anything is provisioned.
TEST(LocalRecodingDaemons, RoundTimeoutOutsideItsRangeIsAUsageError) {
  for (const char* bad : {"0", "86401", "soon"}) {
    const CliResult r =
        RunFedanon({"federation", "up", "--party-data", "a.csv,b.csv", "--round-timeout", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr("--round-timeout")) << bad;
  }
}

}  // namespace
}  // namespace fedanon::testing
