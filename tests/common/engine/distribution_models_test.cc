// The ldiversity and tcloseness privacy models in the centralized engine: a hand-worked table for
// every variant and ground distance, the failure at the root, the histograms the engine asks for
// (only of children that can be valid), and random tables whose every release the independent
// checker finds private, truthful and maximal, with the report's figures equal to the checker's.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/engine/count_source.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

// Eight records, one QID (Job: ANY_Job -> White {Eng, Law}, Blue {Driver, Cook}), a class and
// the sensitive Disease over [Flu, HIV, Cold]:
//
//   Job     Eng  Eng  Law  Law  Driver Driver Cook Cook
//   Disease Flu  HIV  Flu  Flu  HIV    Cold   Cold Cold
//
// The table: Flu 3, HIV 2, Cold 3 (Q = 3/8, 2/8, 3/8). ANY_Job -> {White, Blue} gives White =
// {Flu 3, HIV 1} and Blue = {HIV 1, Cold 3}; then White -> {Eng = {Flu, HIV}, Law = {Flu, Flu}}
// and Blue -> {Driver = {HIV, Cold}, Cook = {Cold, Cold}}.
constexpr char kJobTaxonomy[] =
    "Eng;White;ANY_Job\nLaw;White;ANY_Job\nDriver;Blue;ANY_Job\nCook;Blue;ANY_Job\n";

Table WorkedTable() {
  Table t;
  t.header = {"Job", "Cls", "Disease"};
  const char* jobs[] = {"Eng", "Eng", "Law", "Law", "Driver", "Driver", "Cook", "Cook"};
  const char* diseases[] = {"Flu", "HIV", "Flu", "Flu", "HIV", "Cold", "Cold", "Cold"};
  const char* classes[] = {"Y", "N", "Y", "Y", "N", "N", "Y", "N"};
  for (int i = 0; i < 8; ++i) t.rows.push_back({jobs[i], classes[i], diseases[i]});
  return t;
}

std::string WorkedSpec(const std::string& privacy) {
  return absl::StrCat(R"(name: worked
attributes:
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Cls, role: class}
  - {name: Disease, role: sensitive, values: [Flu, HIV, Cold]}
privacy: )",
                      privacy, "\n");
}

struct WorkedRun {
  fedanon::v1::Report report;
  std::vector<std::string> jobs;  // the released Job values, in row order
  PrivacyCheck check;
};

WorkedRun RunWorked(const std::string& name, const std::string& privacy) {
  WorkedRun out;
  const Job job = WriteJob(name, WorkedSpec(privacy), WorkedTable(), {{"job.csv", kJobTaxonomy}});
  auto report = RunJob(job);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return out;
  out.report = *report;
  auto table = ReadCsvTable(job.output_path);
  EXPECT_TRUE(table.ok()) << table.status();
  if (table.ok()) {
    for (const auto& r : table->rows) out.jobs.push_back(r[0]);
  }
  auto in = MakeCheckerInput(job);
  EXPECT_TRUE(in.ok()) << in.status();
  if (in.ok()) {
    out.check = CheckPrivacy(*in);
    EXPECT_TRUE(out.check.satisfied) << out.check.violation;
    EXPECT_OK(CheckTruthful(*in));
    EXPECT_OK(CheckMaximal(*in));
  }
  return out;
}

const std::vector<std::string> kWhiteBlue = {"White", "White", "White", "White",
                                             "Blue",  "Blue",  "Blue",  "Blue"};

TEST(DistributionModelsWorked, DistinctTwoDiversity) {
  // White and Blue have 2 distinct values each: valid. Law = {Flu, Flu} and Cook = {Cold, Cold}
  // have 1: neither White nor Blue can be specialized. Result: {White, Blue}, smallest l = 2.
  const WorkedRun run = RunWorked("ld_distinct", "{model: ldiversity, diversity: 2}");
  EXPECT_EQ(run.jobs, kWhiteBlue);
  EXPECT_EQ(run.report.smallest_diversity(), 2);
  EXPECT_EQ(run.check.smallest_diversity, 2);
  EXPECT_EQ(run.report.steps_size(), 1);
}

TEST(DistributionModelsWorked, EntropyTwoDiversityKeepsTheRoot) {
  // The root: H = ln 8 - (3 ln 3 + 2 ln 2 + 3 ln 3)/8 = 2.0794 - 0.9972 = 1.0822 >= ln 2. White
  // = {3, 1}: H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.5623 < ln 2 = 0.6931: ANY_Job is invalid and the
  // release keeps ANY_Job; smallest l = e^1.0822 = 2.951.
  const WorkedRun run =
      RunWorked("ld_entropy", "{model: ldiversity, variant: entropy, diversity: 2}");
  EXPECT_EQ(run.jobs, std::vector<std::string>(8, "ANY_Job"));
  EXPECT_NEAR(run.report.smallest_diversity(), std::exp(1.0822), 1e-3);
  EXPECT_NEAR(run.report.smallest_diversity(), run.check.smallest_diversity, 1e-9);
}

TEST(DistributionModelsWorked, RecursiveDiversity) {
  // c = 2, l = 2: White = {3, 1}: 3 < 2 * 1 fails, so the root stays (r_1 / tail = 3 / 5).
  const WorkedRun strict = RunWorked(
      "ld_recursive2", "{model: ldiversity, variant: recursive, diversity: 2, recursive_c: 2}");
  EXPECT_EQ(strict.jobs, std::vector<std::string>(8, "ANY_Job"));
  EXPECT_DOUBLE_EQ(strict.report.largest_recursive_ratio(), 3.0 / 5.0);
  // c = 4: White 3 < 4, Blue 3 < 4 hold; Law = {2} and Cook = {2} have an empty tail: the
  // result is {White, Blue} with the largest ratio 3 / 1.
  const WorkedRun loose = RunWorked(
      "ld_recursive4", "{model: ldiversity, variant: recursive, diversity: 2, recursive_c: 4}");
  EXPECT_EQ(loose.jobs, kWhiteBlue);
  EXPECT_DOUBLE_EQ(loose.report.largest_recursive_ratio(), 3.0);
  EXPECT_DOUBLE_EQ(loose.check.largest_recursive_ratio, 3.0);
}

TEST(DistributionModelsWorked, TClosenessEqualAndOrderedDistance) {
  // Equal distance: White (3/4, 1/4, 0) against Q (3/8, 2/8, 3/8): 1/2 (3/8 + 0 + 3/8) = 3/8;
  // Blue likewise. Eng (1/2, 1/2, 0): 1/2 (1/8 + 2/8 + 3/8) = 3/8; Law (1, 0, 0): 1/2 (5/8 + 2/8 +
  // 3/8) = 5/8. With t = 0.4 White and Blue are valid, Law and Cook (5/8) are not.
  const WorkedRun equal = RunWorked("tc_equal", "{model: tcloseness, t: 0.4}");
  EXPECT_EQ(equal.jobs, kWhiteBlue);
  EXPECT_DOUBLE_EQ(equal.report.largest_closeness(), 0.375);
  EXPECT_NEAR(equal.check.largest_closeness, 0.375, 1e-12);
  // t = 0.3 < 3/8: nothing is valid.
  const WorkedRun tight = RunWorked("tc_tight", "{model: tcloseness, t: 0.3}");
  EXPECT_EQ(tight.jobs, std::vector<std::string>(8, "ANY_Job"));
  EXPECT_EQ(tight.report.largest_closeness(), 0);
  // Ordered (Flu < HIV < Cold as listed): White - Q = (3/8, 0, -3/8), prefix sums 3/8, 3/8, 0,
  // over m - 1 = 2: 3/8. Law - Q = (5/8, -2/8, -3/8): prefix sums 5/8, 3/8, 0: 1/2 > 0.4.
  const WorkedRun ordered =
      RunWorked("tc_ordered", "{model: tcloseness, t: 0.4, distance: ordered}");
  EXPECT_EQ(ordered.jobs, kWhiteBlue);
  EXPECT_DOUBLE_EQ(ordered.report.largest_closeness(), 0.375);
}

TEST(DistributionModelsWorked, TClosenessHierarchicalDistance) {
  // Disease taxonomy: * -> {Infection -> {Flu, HIV}, Cold}: leaves at depths 2 and 1, H = 2,
  // d(Flu, HIV) = 1/2, d(Flu, Cold) = d(HIV, Cold) = 1. White - Q = (3/8, -1/8, -3/8):
  // Infection (height 1): min(3/8, 1/8) = 1/8, cost 1/8; its surplus 2/8. Root (height 2):
  // min(2/8, 3/8) * 2 = 4/8. (1/8 + 4/8) / 2 = 5/16 = 0.3125. Blue - Q = (-3/8, -1/8, 3/8):
  // Infection: no positive part, cost 0, surplus -4/8; root min(4/8, 3/8) * 2 = 6/8, / 2 = 3/8.
  // Law - Q = (5/8, -2/8, -3/8): 2/8 + min(3/8, 3/8) * 2 = 8/8, / 2 = 1/2; Eng (1/2, 1/2, 0) - Q
  // = (1/8, 2/8, -3/8): Infection all positive, root 3/8 * 2 / 2 = 3/8.
  const Job job = WriteJob(
      "tc_hier",
      R"(name: worked
attributes:
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Cls, role: class}
  - {name: Disease, role: sensitive, values: [Flu, HIV, Cold], taxonomy: disease.csv}
privacy: {model: tcloseness, t: 0.4, distance: hierarchical}
)",
      WorkedTable(),
      {{"job.csv", kJobTaxonomy}, {"disease.csv", "Flu;Infection;*\nHIV;Infection;*\nCold;*\n"}});
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  std::vector<std::string> jobs;
  for (const auto& r : out.rows) jobs.push_back(r[0]);
  EXPECT_EQ(jobs, kWhiteBlue);
  EXPECT_DOUBLE_EQ(report.largest_closeness(), 0.375);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_NEAR(check.largest_closeness, 0.375, 1e-12);
  EXPECT_OK(CheckMaximal(in));
}

TEST(DistributionModelsWorked, TheRootMustMeetTheModel) {
  // Entropy 3-diversity: the root's H = 1.0822 < ln 3 = 1.0986.
  const Job job =
      WriteJob("ld_root", WorkedSpec("{model: ldiversity, variant: entropy, diversity: 3}"),
               WorkedTable(), {{"job.csv", kJobTaxonomy}});
  EXPECT_THAT(RunJob(job), StatusIs(absl::StatusCode::kFailedPrecondition,
                                    "even the most general table (every record in one group)"));
  EXPECT_THAT(RunJob(job), StatusIs(absl::StatusCode::kFailedPrecondition, "entropy 2.95"));
}

// K bounds the group size as well: with K = 5, White and Blue (4 records each) are too small and
// the root stays.
TEST(DistributionModelsWorked, KBoundsTheGroupsToo) {
  const WorkedRun run = RunWorked("ld_k", "{model: ldiversity, diversity: 2, K: 5}");
  EXPECT_EQ(run.jobs, std::vector<std::string>(8, "ANY_Job"));
  EXPECT_EQ(run.report.smallest_group(), 8u);
}

// A count source that records the size of every child whose histogram the engine asks for
// (counted from the answer, when it is given: the hierarchies change afterwards).
class RecordingSource : public engine::CountSource {
 public:
  RecordingSource(engine::Tips* tips, const std::vector<engine::AttributeHierarchy>* hier)
      : local_(tips), hier_(hier) {}
  absl::Status Specialize(int attr, engine::NodeIndex node, int c,
                          const std::vector<uint64_t>& sizes) override {
    return local_.Specialize(attr, node, c, sizes);
  }
  absl::Status Split(int a, engine::NodeIndex n, int32_t s) override {
    return local_.Split(a, n, s);
  }
  absl::StatusOr<std::vector<uint64_t>> Collect(const engine::StatsRequest& request) override {
    auto out = local_.Collect(request);
    if (!out.ok() || request.histograms.empty()) return out;
    const size_t d = request.histogram_domain;
    size_t pos = out->size();
    for (const auto& q : request.histograms) pos -= engine::HistogramWords(*hier_, q, d);
    std::vector<uint64_t> sizes;
    for (const auto& q : request.histograms) {
      const size_t words = engine::HistogramWords(*hier_, q, d);
      for (size_t at = 0; at < words; at += d) {
        sizes.push_back(std::accumulate(out->begin() + static_cast<ptrdiff_t>(pos + at),
                                        out->begin() + static_cast<ptrdiff_t>(pos + at + d),
                                        uint64_t{0}));
      }
      pos += words;
    }
    child_sizes.push_back(std::move(sizes));
    return out;
  }
  std::vector<std::vector<uint64_t>> child_sizes;  // per Collect with histograms

 private:
  engine::LocalCountSource local_;
  const std::vector<engine::AttributeHierarchy>* hier_;
};

// Every sensitive histogram the engine asks for describes children of at least k records each
// (here 3: the model's K), so that in a federation no per-group histogram of fewer than K records
// reaches the leader; the whole table's comes first.
TEST(DistributionModelsRequests, HistogramsOnlyOfChildrenThatCanBeValid) {
  for (const char* privacy :
       {"{model: ldiversity, diversity: 2, K: 3}", "{model: tcloseness, t: 0.5, K: 3}"}) {
    SCOPED_TRACE(privacy);
    const Job job =
        WriteJob("requests", WorkedSpec(privacy), WorkedTable(), {{"job.csv", kJobTaxonomy}});
    ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(job.spec_path));
    ASSERT_OK_AND_ASSIGN(table::Dataset data, table::LoadDataset(spec, job.input_path));
    ASSERT_OK_AND_ASSIGN(engine::PrivacyModel model, engine::BuildPrivacyModel(spec, data));
    std::vector<engine::AttributeHierarchy> hier;
    for (const auto& q : data.qids) hier.emplace_back(&q);
    engine::Tips tips(&data, &hier);
    RecordingSource source(&tips, &hier);
    engine::EngineOptions options;
    ASSERT_OK_AND_ASSIGN(
        auto engine, engine::TopDownSpecializer::Create(&data, &model, &hier, &source, options));
    ASSERT_OK(engine->Run().status());
    // The whole table (8 records), then ANY_Job's two children of 4 records; White's and Blue's
    // children (2 records each) are not asked.
    ASSERT_EQ(source.child_sizes.size(), 2u);
    EXPECT_EQ(source.child_sizes[0], (std::vector<uint64_t>{8}));
    EXPECT_EQ(source.child_sizes[1], (std::vector<uint64_t>{4, 4}));
    for (const auto& sizes : source.child_sizes) {
      for (uint64_t n : sizes)
        EXPECT_TRUE(n == 0 || n >= 3) << "a histogram of " << n << " records";
    }
  }
}

// Random tables: every release meets its model by the checker's count, is truthful and maximal,
// and the report's figures are the checker's.
struct RandomDistributionJob {
  Job job;
  std::string spec;
};

RandomDistributionJob MakeRandomJob(int seed) {
  SplitMix64 rng{static_cast<uint64_t>(seed) * 104729 + 5};
  Table t;
  std::map<std::string, std::string> files;
  std::string attrs;
  const int nq = rng.Uniform(2, 3);
  std::vector<int> kinds;
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    t.header.push_back(name);
    kinds.push_back(rng.Uniform(0, 2));
    if (kinds.back() == 0) {
      std::string tax;
      for (int v = 0; v < 6; ++v)
        absl::StrAppend(&tax, name, "v", v, ";", name, "g", v / 2, ";ANY\n");
      files[name + ".csv"] = tax;
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, taxonomy: ", name, ".csv}\n");
    } else if (kinds.back() == 1) {
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid}\n");
    } else {
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, type: continuous}\n");
    }
  }
  t.header.push_back("cls");
  t.header.push_back("sens");
  const int values = rng.Uniform(3, 6);
  const int rows = rng.Uniform(30, 140);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (int q = 0; q < nq; ++q) {
      const std::string name = absl::StrCat("q", q);
      if (kinds[q] == 0) row.push_back(absl::StrCat(name, "v", rng.Uniform(0, 5)));
      if (kinds[q] == 1) row.push_back(absl::StrCat(name, "s", rng.Uniform(0, 4)));
      if (kinds[q] == 2) row.push_back(absl::StrCat(rng.Uniform(0, 30)));
    }
    row.push_back(rng.Uniform(0, 9) < 7 ? (row[0].back() % 2 ? "y" : "n") : "y");
    // Skewed by the first QID, so that some groups lack diversity.
    const int s = rng.Uniform(0, 2) == 0 ? static_cast<int>(row[0].back()) % values
                                         : rng.Uniform(0, values - 1);
    row.push_back(absl::StrCat("v", s));
    t.rows.push_back(row);
  }
  std::vector<std::string> declared;
  for (int v = 0; v < values; ++v) declared.push_back(absl::StrCat("v", v));
  const int model = rng.Uniform(0, 5);
  std::string sens = absl::StrCat("  - {name: sens, role: sensitive, values: [",
                                  absl::StrJoin(declared, ", "), "]");
  std::string privacy;
  const int k = rng.Uniform(0, 1) ? rng.Uniform(2, 8) : 0;
  const std::string kpart = k > 0 ? absl::StrCat(", K: ", k) : "";
  switch (model) {
    case 0:
      privacy = absl::StrCat("{model: ldiversity, diversity: ", rng.Uniform(2, 3), kpart, "}");
      break;
    case 1:
      privacy = absl::StrCat("{model: ldiversity, variant: entropy, diversity: ",
                             1.2 + rng.Uniform(0, 10) / 10.0, kpart, "}");
      break;
    case 2:
      privacy =
          absl::StrCat("{model: ldiversity, variant: recursive, diversity: ", rng.Uniform(2, 3),
                       ", recursive_c: ", rng.Uniform(1, 6), kpart, "}");
      break;
    case 3:
      privacy = absl::StrCat("{model: tcloseness, t: ", rng.Uniform(10, 60) / 100.0, kpart, "}");
      break;
    case 4:
      privacy = absl::StrCat(
          "{model: tcloseness, distance: ordered, t: ", rng.Uniform(10, 60) / 100.0, kpart, "}");
      break;
    default: {
      // Values in a two-level taxonomy: v0..v2 under A, the rest under B (B's leaves one deeper).
      std::string tax;
      for (int v = 0; v < values; ++v) {
        absl::StrAppend(&tax, "v", v, v < 3 ? ";A;*\n" : ";Bx;B;*\n");
      }
      files["sens.csv"] = tax;
      sens += ", taxonomy: sens.csv";
      privacy = absl::StrCat("{model: tcloseness, distance: hierarchical, t: ",
                             rng.Uniform(10, 60) / 100.0, kpart, "}");
    }
  }
  static const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};
  const std::string spec = absl::StrCat(
      "name: random-", seed, "\nattributes:\n", attrs, "  - {name: cls, role: class}\n", sens,
      "}\nprivacy: ", privacy, "\nscore: ", kScores[rng.Uniform(0, 3)], "\n");
  return {WriteJob(absl::StrCat("dist_random_", seed), spec, t, files), spec};
}

class DistributionRandomTables : public ::testing::TestWithParam<int> {};

TEST_P(DistributionRandomTables, ReleaseMeetsItsModelByTheCheckersCount) {
  const RandomDistributionJob rj = MakeRandomJob(GetParam());
  SCOPED_TRACE(rj.spec);
  auto report = RunJob(rj.job);
  if (!report.ok()) {
    // Only a root that fails the model may stop a run (a random table may lack diversity).
    EXPECT_THAT(report.status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "even the most general table"));
    return;
  }
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(rj.job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
  EXPECT_OK(CheckMaximal(in));
  EXPECT_EQ(report->smallest_group(), check.smallest_group);
  EXPECT_NEAR(report->smallest_diversity(), check.smallest_diversity, 1e-9);
  EXPECT_NEAR(report->largest_recursive_ratio(), check.largest_recursive_ratio, 1e-9);
  EXPECT_NEAR(report->largest_closeness(), check.largest_closeness, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Seeds, DistributionRandomTables, ::testing::Range(1, 121));

}  // namespace
}  // namespace fedanon::testing
