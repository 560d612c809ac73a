// Local recoding (`recoding: local`, common/engine/local_recoding.h): a worked example where
// local recoding specializes one group further than global recoding can, releases of generated
// Adult-like data, random small tables and (when present) UCI Adult, every one checked by the
// independent brute-force checker under covering semantics (CheckLocalPrivacy) and for
// truthfulness; the anytime stop; the spec option and its refusal in federated jobs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sizes of the released classes over all QID columns (`qid_columns` of the checker input).
std::map<std::vector<std::string>, uint64_t> Classes(const CheckerInput& in,
                                                     const std::vector<size_t>& qid_columns) {
  std::map<std::vector<std::string>, uint64_t> out;
  for (const auto& row : in.anonymized) {
    std::vector<std::string> key;
    for (size_t c : qid_columns) key.push_back(row[c]);
    ++out[key];
  }
  return out;
}

std::vector<size_t> QidColumns(const CheckerInput& in) {
  std::vector<size_t> out;
  for (const auto& a : in.spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_QID) continue;
    for (size_t c = 0; c < in.header.size(); ++c) {
      if (in.header[c] == a.name()) out.push_back(c);
    }
  }
  return out;
}

// Sex (which predicts the class) splits the table first into M (4 records) and F (2); Job can
// then be specialized among the men (2 engineers, 2 lawyers) but not among the women (1 and 1).
// Global recoding must stop at {M, F} x ANY_Job; local recoding specializes Job for the men only.
constexpr char kTwoLevelTaxSex[] = "M;ANY_Sex\nF;ANY_Sex\n";
constexpr char kTwoLevelTaxJob[] = "Eng;ANY_Job\nLaw;ANY_Job\n";

std::string TwoLevelSpec(const std::string& recoding) {
  return absl::StrCat(
      "name: local\nattributes:\n"
      "  - {name: Sex, role: qid, taxonomy: tax/sex.csv}\n"
      "  - {name: Job, role: qid, taxonomy: tax/job.csv}\n"
      "  - {name: Class, role: class}\n"
      "privacy: {model: lkc, L: 2, K: 2}\n"
      "recoding: ",
      recoding, "\n");
}

const Table kTwoLevel = {{"Sex", "Job", "Class"},
                         {{"M", "Eng", "y"},
                          {"M", "Eng", "y"},
                          {"M", "Law", "y"},
                          {"M", "Law", "y"},
                          {"F", "Eng", "n"},
                          {"F", "Law", "n"}}};

TEST(LocalRecodingTest, SpecializesOneGroupFurtherThanGlobalRecodingCan) {
  const std::map<std::string, std::string> tax = {{"tax/sex.csv", kTwoLevelTaxSex},
                                                  {"tax/job.csv", kTwoLevelTaxJob}};
  const Job global = WriteJob("local_two_global", TwoLevelSpec("global"), kTwoLevel, tax);
  const Job local = WriteJob("local_two_local", TwoLevelSpec("local"), kTwoLevel, tax);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report g, RunJob(global));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report l, RunJob(local));
  EXPECT_EQ(g.groups(), 2u);
  EXPECT_EQ(l.groups(), 3u);
  EXPECT_EQ(l.recoding(), fedanon::v1::RECODING_LOCAL);
  EXPECT_EQ(l.smallest_group(), 2u);
  EXPECT_EQ(Slurp(local.output_path),
            "Sex,Job,Class\nM,Eng,y\nM,Eng,y\nM,Law,y\nM,Law,y\nF,ANY_Job,n\nF,ANY_Job,n\n");
  ASSERT_EQ(l.steps_size(), 2);
  EXPECT_EQ(l.steps(0).attribute(), "Sex");
  EXPECT_EQ(l.steps(1).attribute(), "Job");
  EXPECT_EQ(l.steps(1).records(), 4u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(local));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
}

// The minimal-distortion score under local recoding (thesis §5.5: disclosing a suppressed value
// v removes the units of the records that hold v): Job without a taxonomy, a (3 records), b (5),
// c (2) in that order, K = 2. The root group discloses b first (5 units; a 3, c 2), then the
// group still suppressed {a, c} discloses a (3), then the one left, c (2). (Scoring every
// disclosure of a group by the group's size, 10, would take a first, by value order.)
TEST(LocalRecodingTest, MinimalDistortionDisclosesTheMostFrequentValueFirst) {
  Table t{{"Job", "Class"}, {}};
  for (const auto& [job, n] :
       std::vector<std::pair<std::string, int>>{{"a", 3}, {"b", 5}, {"c", 2}}) {
    for (int i = 0; i < n; ++i) t.rows.push_back({job, i % 2 == 0 ? "y" : "n"});
  }
  const Job job = WriteJob("local_distortion",
                           "name: local-distortion\nattributes:\n"
                           "  - {name: Job, role: qid}\n"
                           "  - {name: Class, role: class}\n"
                           "privacy: {model: lkc, L: 1, K: 2}\n"
                           "score: distortion\nrecoding: local\n",
                           t);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report r, RunJob(job));
  const std::vector<std::pair<std::string, double>> order = {
      {"* -> b", 5}, {"* -> a", 3}, {"* -> c", 2}};
  ASSERT_EQ(r.steps_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.steps(i).value(), order[i].first) << "round " << i + 1;
    EXPECT_DOUBLE_EQ(r.steps(i).score(), order[i].second) << "round " << i + 1;
  }
  EXPECT_EQ(r.steps(0).records(), 10u);
  EXPECT_EQ(r.steps(1).records(), 5u);
  EXPECT_EQ(r.steps(2).records(), 2u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  EXPECT_EQ(in.anonymized, in.raw);  // every value disclosed
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
}

// Generated Adult-like data (fedanon gen-data), the generator's own LKC job (L=4, K=20, C=0.2).
TEST(LocalRecodingTest, GeneratedDataReleaseIsPrivateTruthfulAndFinerThanGlobal) {
  const std::string dir = FreshDir("local_gen");
  datagen::DatagenOptions gen;
  gen.rows = 2500;
  gen.seed = 11;
  gen.out_dir = dir;
  ASSERT_OK(datagen::GenerateDataset(gen).status());
  const std::string spec = Slurp(dir + "/job.yaml");
  WriteText(dir + "/local.yaml", spec + "recoding: local\n");
  Job global{dir, dir + "/job.yaml", dir + "/table.csv", dir + "/global.csv", dir + "/g.json"};
  Job local{dir, dir + "/local.yaml", dir + "/table.csv", dir + "/local.csv", dir + "/l.json"};
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report g, RunJob(global));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report l, RunJob(local));
  EXPECT_GT(l.groups(), g.groups());
  EXPECT_LT(l.discernibility_ratio(), g.discernibility_ratio());
  EXPECT_GE(l.smallest_group(), 20u);
  EXPECT_LE(l.largest_confidence(), 0.2 + 1e-12);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(local));
  EXPECT_OK(CheckTruthful(in));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_GE(check.smallest_group, l.smallest_group());
  EXPECT_LE(check.largest_confidence, l.largest_confidence() + 1e-12);
  // Every released class over all QIDs holds at least K records (the engine's rule).
  for (const auto& [key, n] : Classes(in, QidColumns(in))) EXPECT_GE(n, 20u);
  // Local: some raw value is released at different levels in different groups.
  bool differs = false;
  for (size_t c : QidColumns(in)) {
    std::map<std::string, std::set<std::string>> released;
    for (size_t r = 0; r < in.raw.size(); ++r) released[in.raw[r][c]].insert(in.anonymized[r][c]);
    for (const auto& [value, labels] : released) differs |= labels.size() > 1;
  }
  EXPECT_TRUE(differs);
  // Deterministic: the same job twice gives the same table.
  Job again = local;
  again.output_path = dir + "/again.csv";
  again.report_path = dir + "/again.json";
  ASSERT_OK(RunJob(again).status());
  EXPECT_EQ(Slurp(local.output_path), Slurp(again.output_path));
  std::filesystem::remove_all(dir);
}

TEST(LocalRecodingTest, MaxRoundsStopsEarlyAndStaysPrivate) {
  const std::string dir = FreshDir("local_anytime");
  datagen::DatagenOptions gen;
  gen.rows = 1500;
  gen.seed = 5;
  gen.out_dir = dir;
  ASSERT_OK(datagen::GenerateDataset(gen).status());
  WriteText(dir + "/local.yaml", Slurp(dir + "/job.yaml") + "recoding: local\n");
  Job local{dir, dir + "/local.yaml", dir + "/table.csv", dir + "/local.csv", dir + "/l.json"};
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report l, RunJob(local, /*max_rounds=*/7));
  EXPECT_EQ(l.steps_size(), 7);
  EXPECT_EQ(l.stop_reason(), "reached max_rounds");
  // The greedy order: scores never increase... per group; the first step is the root's best.
  EXPECT_EQ(l.steps(0).records(), 1500u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(local));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  std::filesystem::remove_all(dir);
}

// Random small tables (taxonomy, suppression and continuous QIDs; LKC and templates; every score
// function; exact and binned numeric search).
using Rng = SplitMix64;

class LocalRandomTablesTest : public ::testing::TestWithParam<int> {};

TEST_P(LocalRandomTablesTest, ReleaseIsPrivateUnderCoveringSemanticsAndTruthful) {
  Rng rng{static_cast<uint64_t>(GetParam()) * 104729 + 7};
  const int nq = rng.Uniform(2, 4);
  const int rows = rng.Uniform(20, 150);
  Table t;
  std::map<std::string, std::string> taxonomies;
  std::string attrs;
  std::vector<std::string> names;
  std::vector<int> kinds, sizes;
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    names.push_back(name);
    t.header.push_back(name);
    kinds.push_back(rng.Uniform(0, 2));
    if (kinds.back() == 0) {
      sizes.push_back(rng.Uniform(2, 8));
      std::string tax;
      for (int l = 0; l < sizes.back(); ++l) {
        tax += absl::StrCat(name, "v", l, ";", name, "g", l / 2, ";", name, "h", l / 4, ";ANY\n");
      }
      taxonomies["tax/" + name + ".csv"] = tax;
      attrs += absl::StrCat("  - {name: ", name, ", role: qid, taxonomy: tax/", name, ".csv}\n");
    } else if (kinds.back() == 1) {
      sizes.push_back(rng.Uniform(2, 6));
      attrs += absl::StrCat("  - {name: ", name, ", role: qid}\n");
    } else {
      sizes.push_back(rng.Uniform(3, 40));
      attrs += absl::StrCat("  - {name: ", name, ", role: qid, type: continuous}\n");
    }
  }
  t.header.push_back("cls");
  t.header.push_back("sens");
  int s0 = 0;
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    int first = 0;
    for (int q = 0; q < nq; ++q) {
      const int v = rng.Uniform(0, sizes[q] - 1);
      if (q == 0) first = v;
      row.push_back(kinds[q] == 0   ? absl::StrCat(names[q], "v", v)
                    : kinds[q] == 1 ? absl::StrCat(names[q], "s", v)
                                    : absl::StrCat(v));
    }
    row.push_back(absl::StrCat("c", (rng.Coin(0.7) ? first : rng.Uniform(0, 3)) % 2));
    const int s = rng.Uniform(0, 3);
    s0 += s == 0;
    row.push_back(absl::StrCat("s", s));
    t.rows.push_back(row);
  }
  attrs += "  - {name: cls, role: class}\n  - {name: sens, role: sensitive}\n";
  static const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};
  const double min_c = static_cast<double>(s0) / rows;
  std::string privacy;
  if (rng.Coin(0.6)) {
    privacy = absl::StrCat("privacy: {model: lkc, L: ", rng.Uniform(1, nq),
                           ", K: ", rng.Uniform(2, std::max(2, rows / 6)),
                           ", C: ", std::min(1.0, min_c + rng.Uniform(5, 60) / 100.0),
                           ", sensitive_values: [s0]}\n");
  } else {
    privacy = absl::StrCat("privacy:\n  model: templates\n  templates:\n    - {qid: [", names[0],
                           "], k: ", rng.Uniform(2, std::max(2, rows / 6)), "}\n",
                           "  confidence:\n    - {qid: [", names[nq - 1],
                           "], sensitive_values: [s0], max: ",
                           std::min(1.0, min_c + rng.Uniform(5, 50) / 100.0), "}\n");
  }
  const std::string spec = absl::StrCat(
      "name: local-random\nattributes:\n", attrs, privacy, "score: ", kScores[rng.Uniform(0, 3)],
      "\nnumeric_split: ", rng.Coin(0.5) ? "exact" : "binned",
      "\nbeneficial: ", rng.Coin(0.2) ? "true" : "false", "\nrecoding: local\n");
  SCOPED_TRACE(spec);
  const Job job = WriteJob(absl::StrCat("local_random_", GetParam()), spec, t, taxonomies);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report report, RunJob(job));
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  EXPECT_OK(CheckTruthful(in));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_GE(check.smallest_group, report.smallest_group());
  EXPECT_LE(check.largest_confidence, report.largest_confidence() + 1e-12);
  uint64_t smallest_class = UINT64_MAX;
  for (const auto& [key, n] : Classes(in, QidColumns(in)))
    smallest_class = std::min(smallest_class, n);
  EXPECT_EQ(report.smallest_group(), smallest_class);
  EXPECT_EQ(report.groups(), Classes(in, QidColumns(in)).size());
  std::filesystem::remove_all(job.dir);
}

INSTANTIATE_TEST_SUITE_P(Seeds, LocalRandomTablesTest, ::testing::Range(1, 151));

// UCI Adult, the 8-QID k-anonymity task at k = 50 (skipped without the data set).
TEST(LocalRecodingTest, AdultEightQidsK50IsKAnonymous) {
  const std::string adult = SharedDir() + "/datasets/adult";
  if (!std::filesystem::exists(adult + "/adult_clean.csv")) {
    GTEST_SKIP() << "UCI Adult not found in " << adult;
  }
  const std::string arx = adult + "/arx-hierarchies/adult_hierarchy_";
  std::string spec = "name: adult-local\nattributes:\n";
  spec += "  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}\n";
  for (const char* a : {"education", "marital-status", "occupation", "race", "sex",
                        "native-country", "workclass"}) {
    spec += absl::StrCat("  - {name: ", a, ", role: qid, taxonomy: \"", arx, a, ".csv\"}\n");
  }
  spec +=
      "  - {name: income, role: class}\n"
      "privacy:\n  model: templates\n  templates:\n"
      "    - {qid: [age, education, marital-status, occupation, race, sex, native-country, "
      "workclass], k: 50}\n"
      "recoding: local\n";
  const std::string dir = FreshDir("local_adult");
  WriteText(dir + "/job.yaml", spec);
  Job job{dir, dir + "/job.yaml", adult + "/adult_clean.csv", dir + "/out.csv", dir + "/r.json"};
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::Report report, RunJob(job));
  EXPECT_GE(report.smallest_group(), 50u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  EXPECT_OK(CheckTruthful(in));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_GE(check.smallest_group, 50u);
  std::filesystem::remove_all(dir);
}

TEST(LocalRecodingSpecTest, ParsesAndRefusesFederatedJobs) {
  const std::string base =
      "name: x\nattributes:\n  - {name: a, role: qid}\n  - {name: c, role: class}\n"
      "privacy: {model: lkc, L: 1, K: 2}\n";
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml(base + "recoding: local\n", "spec.yaml"));
  EXPECT_EQ(spec.recoding(), fedanon::v1::RECODING_LOCAL);
  EXPECT_OK(spec::ValidateJobSpec(spec));
  ASSERT_OK_AND_ASSIGN(spec, spec::ParseJobSpecYaml(base, "spec.yaml"));
  EXPECT_EQ(spec.recoding(), fedanon::v1::RECODING_UNSPECIFIED);  // global
  // A centralized run may keep the partitioning key (gen-data's job.yaml has one); horizontal
  // and vertical federated jobs run local recoding (a vertical one with a confidence bound is
  // refused: tests/federation/vertical_local_test.cc).
  for (const char* partitioning : {"horizontal", "vertical"}) {
    ASSERT_OK_AND_ASSIGN(
        spec, spec::ParseJobSpecYaml(
                  absl::StrCat(base, "recoding: local\npartitioning: ", partitioning, "\n"),
                  "spec.yaml"));
    EXPECT_OK(spec::ValidateJobSpec(spec));
    EXPECT_OK(spec::CheckFederatedRecoding(spec));
  }
  spec.set_recoding(fedanon::v1::RECODING_GLOBAL);
  EXPECT_OK(spec::CheckFederatedRecoding(spec));
  // Sequential releases refuse local recoding (their join is checked against one global cut).
  ASSERT_OK_AND_ASSIGN(
      spec, spec::ParseJobSpecYaml(base + "recoding: local\nnumeric_split: exact\n", "spec.yaml"));
  spec.mutable_sequential();
  EXPECT_THAT(
      spec::ValidateJobSpec(spec),
      StatusIs(absl::StatusCode::kInvalidArgument, "recoding: local does not apply to sequential"));
}

}  // namespace
}  // namespace fedanon::testing
