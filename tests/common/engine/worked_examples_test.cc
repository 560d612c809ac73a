// Known answers from the papers (../shared/docs/WORKED-EXAMPLES.md sections A-D), checked against
// the engine's scores and outputs; every complete run is also verified by the independent
// brute-force checker (privacy, truthfulness, maximality).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/scores.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using engine::CandidateView;

// The engine wired to one job's files, for inspecting candidates and TIPS statistics.
struct Harness {
  fedanon::v1::JobSpec spec;
  table::Dataset data;
  engine::PrivacyModel model;
  std::vector<engine::AttributeHierarchy> hier;
  std::unique_ptr<engine::Tips> tips;
  std::unique_ptr<engine::LocalCountSource> source;
  std::unique_ptr<engine::TopDownSpecializer> engine;
};

absl::StatusOr<std::unique_ptr<Harness>> MakeHarness(const Job& job, uint64_t max_records = 0) {
  auto h = std::make_unique<Harness>();
  auto spec = spec::LoadJobSpec(job.spec_path);
  if (!spec.ok()) return spec.status();
  h->spec = *spec;
  auto data = table::LoadDataset(h->spec, job.input_path);
  if (!data.ok()) return data.status();
  h->data = std::move(*data);
  auto model = engine::BuildPrivacyModel(h->spec, h->data);
  if (!model.ok()) return model.status();
  h->model = std::move(*model);
  for (const auto& q : h->data.qids) h->hier.emplace_back(&q);
  h->tips = std::make_unique<engine::Tips>(&h->data, &h->hier);
  h->source = std::make_unique<engine::LocalCountSource>(h->tips.get());
  engine::EngineOptions opts;
  opts.score = h->spec.score();
  opts.beneficial = h->spec.beneficial();
  opts.numeric = engine::NumericSplitFromSpec(h->spec);
  opts.max_records = max_records;
  auto engine =
      engine::TopDownSpecializer::Create(&h->data, &h->model, &h->hier, h->source.get(), opts);
  if (!engine.ok()) return engine.status();
  h->engine = std::move(*engine);
  return h;
}

const CandidateView* FindCandidate(const std::vector<CandidateView>& cands,
                                   const std::string& value) {
  for (const auto& c : cands) {
    if (c.value == value) return &c;
  }
  return nullptr;
}

void ExpectPrivateTruthfulMaximal(const Job& job) {
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
  EXPECT_OK(CheckMaximal(in));
}

// ---------------------------------------------------------------------------------------------
// A. mohammed2010 Table I: 11 records, QID {Job, Sex, Age}, L=2, K=2, C=50%, S={Transgender}.
constexpr char kJobTaxonomyA[] =
    "Janitor;Non-Technical;Blue-collar;ANY_Job\n"
    "Mover;Non-Technical;Blue-collar;ANY_Job\n"
    "Carpenter;Technical;Blue-collar;ANY_Job\n"
    "Technician;Technical;Blue-collar;ANY_Job\n"
    "Manager;White-collar;ANY_Job\n"
    "Lawyer;Professional;White-collar;ANY_Job\n"
    "Doctor;Professional;White-collar;ANY_Job\n";
constexpr char kSexTaxonomy[] = "M;ANY_Sex\nF;ANY_Sex\n";
constexpr char kAgeTaxonomyA[] =
    "24;[1-30);[1-60);[1-99)\n"
    "34;[30-60);[1-60);[1-99)\n"
    "44;[30-60);[1-60);[1-99)\n"
    "58;[30-60);[1-60);[1-99)\n"
    "63;[60-99);[1-99)\n";
constexpr char kSpecA[] = R"(name: example-a
attributes:
  - {name: Job, role: qid, taxonomy: tax/job.csv}
  - {name: Sex, role: qid, taxonomy: tax/sex.csv}
  - {name: Age, role: qid, taxonomy: tax/age.csv}
  - {name: Transfuse, role: class}
  - {name: Surgery, role: sensitive}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}
score: infogain
)";

Table TableA(int first = 1, int last = 11) {
  const std::vector<std::vector<std::string>> all = {
      {"1", "Janitor", "M", "34", "Y", "Transgender"},
      {"2", "Lawyer", "F", "58", "N", "Plastic"},
      {"3", "Mover", "M", "58", "N", "Urology"},
      {"4", "Lawyer", "M", "24", "N", "Vascular"},
      {"5", "Mover", "M", "34", "Y", "Transgender"},
      {"6", "Janitor", "M", "44", "Y", "Plastic"},
      {"7", "Doctor", "F", "44", "N", "Vascular"},
      {"8", "Doctor", "M", "58", "N", "Plastic"},
      {"9", "Doctor", "M", "24", "N", "Urology"},
      {"10", "Carpenter", "F", "63", "Y", "Vascular"},
      {"11", "Technician", "F", "63", "Y", "Plastic"}};
  Table t;
  t.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  for (int i = first; i <= last; ++i) t.rows.push_back(all[i - 1]);
  return t;
}

Job JobA(const std::string& name, const Table& table) {
  return WriteJob(name, kSpecA, table,
                  {{"tax/job.csv", kJobTaxonomyA},
                   {"tax/sex.csv", kSexTaxonomy},
                   {"tax/age.csv", kAgeTaxonomyA}});
}

TEST(WorkedExampleA, EntropiesAndInfoGainOfAnyJob) {
  // Example 3: 6 Blue-collar (5Y 1N), 5 White-collar (all N). The paper rounds its intermediate
  // values (exactly: E(Blue-collar) = 0.65002, InfoGain = 0.63947), hence the 2e-4 tolerance.
  EXPECT_NEAR(engine::Entropy(std::vector<uint64_t>{6, 5}), 0.994, 5e-4);
  EXPECT_NEAR(engine::Entropy(std::vector<uint64_t>{5, 1}), 0.6499, 2e-4);
  EXPECT_NEAR(engine::Entropy(std::vector<uint64_t>{0, 5}), 0.0, 1e-12);
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(JobA("a_scores", TableA())));
  const auto cands = h->engine->Candidates();
  const CandidateView* job = FindCandidate(cands, "ANY_Job");
  ASSERT_NE(job, nullptr);
  EXPECT_NEAR(job->info_gain, 0.6396, 2e-4);
  EXPECT_EQ(job->records, 11u);
}

TEST(WorkedExampleA, PartyALocalInformationMessage) {
  // Example 6: Party A (records 1-3) — validity part and score part of its Information message.
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(JobA("a_party", TableA(1, 3))));
  std::vector<uint64_t> stats;
  h->tips->AppendGroupStats({0, 0, 0}, &stats);
  // [count, transgender] then Job: Blue, White; Sex: M, F; Age: [1-60), [60-99).
  EXPECT_THAT(stats, ::testing::ElementsAre(3, 1, 2, 1, 1, 0, 2, 1, 1, 0, 3, 1, 0, 0));
  // Score part: class counts (Y, N) per child; class order is first appearance (Y then N).
  ASSERT_EQ(h->data.class_labels, (std::vector<std::string>{"Y", "N"}));
  EXPECT_THAT(h->tips->NodeClassCounts(0, 0), ::testing::ElementsAre(1, 1, 0, 1));
  EXPECT_THAT(h->tips->NodeClassCounts(1, 0), ::testing::ElementsAre(1, 1, 0, 1));
  EXPECT_THAT(h->tips->NodeClassCounts(2, 0), ::testing::ElementsAre(1, 2, 0, 0));
}

// A federation's root count is the parties' summed word: above the signed limit
// (EngineOptions::max_records) the engine refuses it by name as it starts, before any round.
TEST(WorkedExampleA, ARootCountAboveTheRecordLimitIsRefusedByName) {
  EXPECT_THAT(MakeHarness(JobA("a_limit_over", TableA()), 10).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       absl::StrCat(engine::kRootCountAboveLimit,
                                    " 11 exceeds the job's limit of 10 records")));
  ASSERT_OK_AND_ASSIGN(auto at, MakeHarness(JobA("a_limit_at", TableA()), 11));
  EXPECT_OK(at->engine->Run().status());
  EXPECT_OK(engine::CheckRootCount(uint64_t{1} << 40, 0));  // no limit
}

TEST(WorkedExampleA, FullRunSatisfiesLkcAndIsMaximal) {
  const Job job = JobA("a_full", TableA());
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  EXPECT_GT(report.steps_size(), 0);
  EXPECT_GE(report.smallest_group(), 2u);
  EXPECT_LE(report.largest_confidence(), 0.5 + 1e-12);
  EXPECT_EQ(report.records_out(), 11u);
  ExpectPrivateTruthfulMaximal(job);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_EQ(report.smallest_group(), check.smallest_group);
  EXPECT_NEAR(report.largest_confidence(), check.largest_confidence, 1e-12);
}

// ---------------------------------------------------------------------------------------------
// B. mohammed2011 Table 1: 34 records, templates <{Sex, Job}, 4>, <{Sex, Salary}, 5>.
constexpr char kJobTaxonomyB[] =
    "Janitor;Non-Technical;Blue-collar;ANY_Job\n"
    "Mover;Non-Technical;Blue-collar;ANY_Job\n"
    "Carpenter;Technical;Blue-collar;ANY_Job\n"
    "Technician;Technical;Blue-collar;ANY_Job\n"
    "Manager;White-collar;ANY_Job\n"
    "Accountant;Professional;White-collar;ANY_Job\n"
    "Lawyer;Professional;White-collar;ANY_Job\n";
constexpr char kSexTaxonomyB[] = "Male;ANY_Sex\nFemale;ANY_Sex\n";
constexpr char kSpecB[] = R"(name: example-b
attributes:
  - {name: Sex, role: qid, taxonomy: tax/sex.csv}
  - {name: Job, role: qid, taxonomy: tax/job.csv}
  - {name: Salary, role: qid, type: continuous, range: [1, 99]}
  - {name: Class, role: class}
privacy:
  model: templates
  templates:
    - {qid: [Sex, Job], k: 4}
    - {qid: [Sex, Salary], k: 5}
score: gainratio
beneficial: true
numeric_split: exact  # the paper's Salary split at 37 is a per-value threshold
)";

Table TableB() {
  Table t;
  t.header = {"Class", "Sex", "Job", "Salary"};
  AddCompressed(&t, {"Male", "Janitor", "30"}, {{"N", 3}}, 0);
  AddCompressed(&t, {"Male", "Mover", "32"}, {{"N", 4}}, 0);
  AddCompressed(&t, {"Male", "Carpenter", "35"}, {{"Y", 2}, {"N", 3}}, 0);
  AddCompressed(&t, {"Female", "Technician", "37"}, {{"Y", 3}, {"N", 1}}, 0);
  AddCompressed(&t, {"Female", "Manager", "42"}, {{"Y", 4}, {"N", 2}}, 0);
  AddCompressed(&t, {"Female", "Manager", "44"}, {{"Y", 3}}, 0);
  AddCompressed(&t, {"Male", "Accountant", "44"}, {{"Y", 3}}, 0);
  AddCompressed(&t, {"Female", "Accountant", "44"}, {{"Y", 3}}, 0);
  AddCompressed(&t, {"Male", "Lawyer", "44"}, {{"Y", 2}}, 0);
  AddCompressed(&t, {"Female", "Lawyer", "44"}, {{"Y", 1}}, 0);
  return t;
}

Job JobB(const std::string& name) {
  return WriteJob(name, kSpecB, TableB(),
                  {{"tax/job.csv", kJobTaxonomyB}, {"tax/sex.csv", kSexTaxonomyB}});
}

TEST(WorkedExampleB, GainRatioOfAnyJobAndSalarySplit) {
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(JobB("b_scores")));
  const auto cands = h->engine->Candidates();
  const CandidateView* job = FindCandidate(cands, "ANY_Job");
  ASSERT_NE(job, nullptr);
  EXPECT_NEAR(job->info_gain, 0.272, 5e-4);
  EXPECT_NEAR(job->split_info, 0.998, 5e-4);
  EXPECT_NEAR(job->score, 0.272, 5e-4);
  const CandidateView* salary = FindCandidate(cands, "[1-99)");
  ASSERT_NE(salary, nullptr);
  EXPECT_NEAR(salary->info_gain, 0.3584, 5e-5);
  // The split point chosen for [1-99) is 37.
  EXPECT_EQ(h->hier[2].column().sorted_values[h->hier[2].node(0).split_rank], 37);
}

TEST(WorkedExampleB, FirstRoundsMatchExample7) {
  const Job job = JobB("b_rounds");
  ASSERT_OK_AND_ASSIGN(auto r1, RunJob(job, 1));
  ASSERT_EQ(r1.steps_size(), 1);
  EXPECT_EQ(r1.steps(0).attribute(), "Salary");
  EXPECT_THAT(r1.steps(0).children(), ::testing::ElementsAre("[1-37)", "[37-99)"));
  EXPECT_EQ(r1.smallest_group(), 12u);  // A(QID_2) = 12 after the Salary split

  ASSERT_OK_AND_ASSIGN(auto r2, RunJob(job, 2));
  ASSERT_EQ(r2.steps_size(), 2);
  EXPECT_EQ(r2.steps(1).value(), "ANY_Job");
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  const int job_col = 2;
  ASSERT_EQ(out.header[job_col], "Job");
  int blue = 0, white = 0;
  for (const auto& row : out.rows) {
    blue += row[job_col] == "Blue-collar";
    white += row[job_col] == "White-collar";
  }
  EXPECT_EQ(blue, 16);   // a(<ANY_Sex, Blue-collar>) = 16
  EXPECT_EQ(white, 18);  // a(<ANY_Sex, White-collar>) = 18
}

TEST(WorkedExampleB, FullRunSatisfiesTemplatesAndIsMaximal) {
  const Job job = JobB("b_full");
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  EXPECT_GE(report.smallest_group(), 4u);
  ExpectPrivateTruthfulMaximal(job);
}

// ---------------------------------------------------------------------------------------------
// C. fung2007 thesis Table 4.1(a) and Table 4.3 (TDR, anonymity templates, Score = IG/(PL+1)).
constexpr char kJobTaxonomyC[] =
    "Janitor;Non_Technical;Blue_Collar;ANY_Job\n"
    "Mover;Non_Technical;Blue_Collar;ANY_Job\n"
    "Carpenter;Technical;Blue_Collar;ANY_Job\n"
    "Electrician;Technical;Blue_Collar;ANY_Job\n"
    "Manager;White_Collar;ANY_Job\n"
    "Engineer;Professional;White_Collar;ANY_Job\n"
    "Lawyer;Professional;White_Collar;ANY_Job\n";
constexpr char kSpecC[] = R"(name: example-c
attributes:
  - {name: Job, role: qid, taxonomy: tax/job.csv}
  - {name: Sex, role: qid, taxonomy: tax/sex.csv}
  - {name: Age, role: qid, type: continuous, range: [1, 99]}
  - {name: Class, role: class}
privacy:
  model: templates
  templates:
    - {qid: [Job, Sex], k: 4}
    - {qid: [Sex, Age], k: 11}
score: infogain_privloss
)";

TEST(WorkedExampleC, ScoreOfAnyJobIsInfoGainOverPrivLossPlusOne) {
  Table t;
  t.header = {"Class", "Job", "Sex", "Age"};
  AddCompressed(&t, {"Janitor", "M", "30"}, {{"N", 3}}, 0);
  AddCompressed(&t, {"Mover", "M", "32"}, {{"N", 4}}, 0);
  AddCompressed(&t, {"Carpenter", "M", "35"}, {{"Y", 2}, {"N", 3}}, 0);
  AddCompressed(&t, {"Electrician", "F", "37"}, {{"Y", 3}, {"N", 1}}, 0);
  AddCompressed(&t, {"Manager", "F", "42"}, {{"Y", 4}, {"N", 2}}, 0);
  AddCompressed(&t, {"Manager", "F", "44"}, {{"Y", 4}}, 0);
  AddCompressed(&t, {"Engineer", "M", "44"}, {{"Y", 4}}, 0);
  AddCompressed(&t, {"Engineer", "F", "44"}, {{"Y", 3}}, 0);
  AddCompressed(&t, {"Lawyer", "F", "44"}, {{"Y", 1}}, 0);
  const Job job = WriteJob("c_score", kSpecC, t,
                           {{"tax/job.csv", kJobTaxonomyC}, {"tax/sex.csv", kSexTaxonomy}});
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  const auto cands = h->engine->Candidates();
  const CandidateView* any_job = FindCandidate(cands, "ANY_Job");
  ASSERT_NE(any_job, nullptr);
  EXPECT_NEAR(any_job->info_gain, 0.2716, 5e-5);
  EXPECT_DOUBLE_EQ(any_job->priv_loss, 18);
  EXPECT_NEAR(any_job->score, 0.0143, 5e-5);
  ASSERT_OK(RunJob(job));
  ExpectPrivateTruthfulMaximal(job);
}

// Table 4.1(a) as the thesis prints it (34 records; the class column first).
Table Table41a() {
  Table t;
  t.header = {"Class", "Job", "Sex", "Age"};
  AddCompressed(&t, {"Janitor", "M", "30"}, {{"N", 3}}, 0);
  AddCompressed(&t, {"Mover", "M", "32"}, {{"N", 4}}, 0);
  AddCompressed(&t, {"Carpenter", "M", "35"}, {{"Y", 2}, {"N", 3}}, 0);
  AddCompressed(&t, {"Electrician", "F", "37"}, {{"Y", 3}, {"N", 1}}, 0);
  AddCompressed(&t, {"Manager", "F", "42"}, {{"Y", 4}, {"N", 2}}, 0);
  AddCompressed(&t, {"Manager", "F", "44"}, {{"Y", 4}}, 0);
  AddCompressed(&t, {"Engineer", "M", "44"}, {{"Y", 4}}, 0);
  AddCompressed(&t, {"Engineer", "F", "44"}, {{"Y", 3}}, 0);
  AddCompressed(&t, {"Lawyer", "F", "44"}, {{"Y", 1}}, 0);
  return t;
}

// Example 4.0.1's single template <{Job, Sex}, RecID, 4> (k-anonymity on {Job, Sex}); Age is
// released as it is, as in Table 4.2.
std::string SpecTable42(const std::string& score) {
  return "name: example-c-table42\n"
         "attributes:\n"
         "  - {name: Job, role: qid, taxonomy: tax/job.csv}\n"
         "  - {name: Sex, role: qid, taxonomy: tax/sex.csv}\n"
         "  - {name: Age, role: other}\n"
         "  - {name: Class, role: class}\n"
         "privacy:\n"
         "  model: templates\n"
         "  templates:\n"
         "    - {qid: [Job, Sex], k: 4}\n"
         "score: " +
         score + "\n";
}

// The release must be Table 4.2: Janitor and Mover as Non_Technical, Engineer and Lawyer as
// Professional, every other value (and Sex, Age) as it is.
void ExpectTable42(const Job& job) {
  ASSERT_OK_AND_ASSIGN(Table raw, ReadCsvTable(job.input_path));
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  ASSERT_EQ(out.rows.size(), 34u);
  const std::map<std::string, std::string> table42 = {
      {"Janitor", "Non_Technical"},   {"Mover", "Non_Technical"}, {"Carpenter", "Carpenter"},
      {"Electrician", "Electrician"}, {"Manager", "Manager"},     {"Engineer", "Professional"},
      {"Lawyer", "Professional"}};
  const auto col = [&](const std::string& name) {
    return std::find(out.header.begin(), out.header.end(), name) - out.header.begin();
  };
  for (size_t r = 0; r < 34; ++r) {
    EXPECT_EQ(out.rows[r][col("Job")], table42.at(raw.rows[r][1])) << "record " << r + 1;
    EXPECT_EQ(out.rows[r][col("Sex")], raw.rows[r][2]) << "record " << r + 1;
    EXPECT_EQ(out.rows[r][col("Age")], raw.rows[r][3]) << "record " << r + 1;
  }
}

// mohammed2010 §6.1.1 measures DR_TradK "on traditional K-anonymous solutions produced by the
// TDR method in Fung et al. [2007]", the thesis's ch. 4. On the thesis's own example, TDR with
// Score = InfoGain / (PrivLoss + 1) and the template <{Job, Sex}, 4> (worked by hand):
//   round 1: ANY_Job .2716 / 19 = .0143 beats ANY_Sex .1665 / 19 = .0088;
//   round 2: Blue_Collar (-> 7 | 9) .3385 / 10 = .0339 beats White_Collar .1022 / 9, ANY_Sex
//            .1665 / 13;
//   round 3: White_Collar (-> 10 | 8, A stays 7) .1022 / 1 beats ANY_Sex .1665 / 4, Technical
//            .0911 / 4; Non_Technical -> Janitor (3) is invalid;
//   round 4: ANY_Sex .0416 beats Technical .0228; round 5: Technical (5 | 4, A stays 4) .0911;
//   then Non_Technical (Janitor 3) and Professional (Lawyer 1) are invalid.
// The release is Table 4.2, whose groups on {Job, Sex} hold 7, 5, 4, 10, 4 and 4 records:
// DR_TradK = (49 + 25 + 16 + 100 + 16 + 16) / 34^2 = 222 / 1156.
TEST(WorkedExampleC, TdrKAnonymitySolutionIsTable42AndItsDiscernibilityRatio) {
  const Job job = WriteJob("c_table42_tdr", SpecTable42("infogain_privloss"), Table41a(),
                           {{"tax/job.csv", kJobTaxonomyC}, {"tax/sex.csv", kSexTaxonomy}});
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  const std::vector<std::string> order = {"ANY_Job", "Blue_Collar", "White_Collar", "ANY_Sex",
                                          "Technical"};
  ASSERT_EQ(report.steps_size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(report.steps(i).value(), order[i]) << "round " << i + 1;
  EXPECT_EQ(report.smallest_group(), 4u);
  EXPECT_DOUBLE_EQ(report.discernibility_ratio(), 222.0 / 1156.0);
  ExpectTable42(job);
  ExpectPrivateTruthfulMaximal(job);
}

// The thesis's minimal-distortion score (Eq. 6.1: InfoGain(v) = |T[v]|) on the same example
// reaches the same release by another path (worked by hand): ANY_Job and ANY_Sex both score 34
// (Job first by attribute order), then ANY_Sex 34, White_Collar 18 (-> Manager F 10,
// Professional M 4 and F 4), Blue_Collar 16 (-> Non_Technical 7, Technical M 5 and F 4),
// Technical 9 (Carpenter 5, Electrician 4); Professional (8) and Non_Technical (7) would leave a
// group of 3 or 1. Table 4.2's distortion (evaluation/distortion_test.cc) is 15 units.
TEST(WorkedExampleC, MinimalDistortionScoreReleasesTable42) {
  const Job job = WriteJob("c_table42_distortion", SpecTable42("distortion"), Table41a(),
                           {{"tax/job.csv", kJobTaxonomyC}, {"tax/sex.csv", kSexTaxonomy}});
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  const auto cands = h->engine->Candidates();
  for (const char* root : {"ANY_Job", "ANY_Sex"}) {
    const CandidateView* c = FindCandidate(cands, root);
    ASSERT_NE(c, nullptr) << root;
    EXPECT_DOUBLE_EQ(c->score, 34) << root;
  }
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  const std::vector<std::pair<std::string, double>> order = {{"ANY_Job", 34},
                                                             {"ANY_Sex", 34},
                                                             {"White_Collar", 18},
                                                             {"Blue_Collar", 16},
                                                             {"Technical", 9}};
  ASSERT_EQ(report.steps_size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(report.steps(i).value(), order[i].first) << "round " << i + 1;
    EXPECT_DOUBLE_EQ(report.steps(i).score(), order[i].second) << "round " << i + 1;
  }
  ExpectTable42(job);
  ExpectPrivateTruthfulMaximal(job);
}

constexpr char kSpecC2[] = R"(name: example-c2
attributes:
  - {name: Education, role: qid, taxonomy: tax/edu.csv}
  - {name: Sex, role: qid, taxonomy: tax/sex.csv}
  - {name: Work_Hrs, role: qid, type: continuous, range: [1, 99]}
  - {name: Class, role: class}
privacy:
  model: templates
  templates:
    - {qid: [Education, Sex, Work_Hrs], k: 4}
score: SCORE
)";

Job JobC2(const std::string& name, const std::string& score) {
  Table t;
  t.header = {"Education", "Sex", "Work_Hrs", "Class"};
  AddCompressed(&t, {"10th", "M", "40"}, {{"Y", 20}}, 3);
  AddCompressed(&t, {"10th", "M", "30"}, {{"N", 4}}, 3);
  AddCompressed(&t, {"9th", "M", "30"}, {{"N", 2}}, 3);
  AddCompressed(&t, {"9th", "F", "30"}, {{"N", 4}}, 3);
  AddCompressed(&t, {"9th", "F", "40"}, {{"N", 6}}, 3);
  AddCompressed(&t, {"8th", "F", "30"}, {{"N", 2}}, 3);
  AddCompressed(&t, {"8th", "F", "40"}, {{"N", 2}}, 3);
  std::string spec = kSpecC2;
  spec.replace(spec.find("SCORE"), 5, score);
  return WriteJob(
      name, spec, t,
      {{"tax/edu.csv", "8th;ANY_Edu\n9th;ANY_Edu\n10th;ANY_Edu\n"}, {"tax/sex.csv", kSexTaxonomy}});
}

TEST(WorkedExampleC, Table43StatisticsOfTheMostMaskedTable) {
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(JobC2("c2_stats", "infogain_privloss")));
  const auto cands = h->engine->Candidates();
  struct Expected {
    const char* value;
    double info_gain, priv_loss, score;
  };
  for (const Expected& e :
       {Expected{"ANY_Edu", 0.6100, 36, 0.0165}, Expected{"ANY_Sex", 0.4934, 26, 0.0183},
        Expected{"[1-99)", 0.3958, 28, 0.0136}}) {
    const CandidateView* c = FindCandidate(cands, e.value);
    ASSERT_NE(c, nullptr) << e.value;
    EXPECT_NEAR(c->info_gain, e.info_gain, 5e-5) << e.value;
    EXPECT_DOUBLE_EQ(c->priv_loss, e.priv_loss) << e.value;
    EXPECT_NEAR(c->score, e.score, 5e-5) << e.value;
  }
}

TEST(WorkedExampleC, ScorePicksSexFirstAndEndsWithAnonymity6) {
  const Job job = JobC2("c2_score", "infogain_privloss");
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  ASSERT_GE(report.steps_size(), 2);
  EXPECT_EQ(report.steps(0).value(), "ANY_Sex");
  EXPECT_EQ(report.smallest_group(), 6u);  // Table 4.4(c)
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  for (const auto& row : out.rows) EXPECT_EQ(row[0], "ANY_Edu");
  ExpectPrivateTruthfulMaximal(job);
}

TEST(WorkedExampleC, InfoGainAlonePicksEducationAndEndsWithAnonymity4) {
  const Job job = JobC2("c2_infogain", "infogain");
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  ASSERT_EQ(report.steps_size(), 1);
  EXPECT_EQ(report.steps(0).value(), "ANY_Edu");
  EXPECT_EQ(report.smallest_group(), 4u);  // Table 4.4(a)
  ExpectPrivateTruthfulMaximal(job);
}

// ---------------------------------------------------------------------------------------------
// D. fung2007 thesis Table 5.1: confidence bounding by suppression.
Table TableD() {
  Table t;
  t.header = {"Job", "Country", "Child", "Bankruptcy", "Class"};
  AddCompressed(&t, {"Cook", "US", "No", "Current"}, {{"B", 4}}, 4);
  AddCompressed(&t, {"Artist", "France", "No", "Current"}, {{"G", 1}, {"B", 3}}, 4);
  AddCompressed(&t, {"Doctor", "US", "Yes", "Never"}, {{"G", 4}, {"B", 2}}, 4);
  AddCompressed(&t, {"Trader", "UK", "No", "Discharged"}, {{"G", 4}}, 4);
  AddCompressed(&t, {"Trader", "UK", "No", "Never"}, {{"G", 1}}, 4);
  AddCompressed(&t, {"Trader", "Canada", "No", "Never"}, {{"G", 1}}, 4);
  AddCompressed(&t, {"Clerk", "Canada", "No", "Never"}, {{"G", 3}}, 4);
  AddCompressed(&t, {"Clerk", "Canada", "No", "Discharged"}, {{"G", 1}}, 4);
  return t;
}

std::string SpecD(double max) {
  return "name: example-d\n"
         "attributes:\n"
         "  - {name: Job, role: qid}\n"
         "  - {name: Country, role: qid}\n"
         "  - {name: Child, role: qid}\n"
         "  - {name: Bankruptcy, role: sensitive}\n"
         "  - {name: Class, role: class}\n"
         "privacy:\n"
         "  model: templates\n"
         "  confidence:\n"
         "    - {qid: [Job, Country], sensitive_values: [Discharged], max: " +
         std::to_string(max) + "}\n";
}

TEST(WorkedExampleD, SuppressionBoundsTheConfidence) {
  const Job job = WriteJob("d_ok", SpecD(0.75), TableD());
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  EXPECT_LE(report.largest_confidence(), 0.75);
  ExpectPrivateTruthfulMaximal(job);
  // The raw table violates the template ({Trader, UK} -> Discharged has confidence 80%).
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  in.anonymized = in.raw;
  EXPECT_FALSE(CheckPrivacy(in).satisfied);
}

// §5.5's minimal-distortion score for suppression: "each suppression of a domain value v in a
// record as one unit of distortion and define InfoGain(v) to be the number of records that
// contain v". On Table 5.1 with <{Job, Country}, Discharged, 75%> (worked by hand; ties by
// attribute order, then the value's first appearance):
//   round 1: Child = No (18 records) — Child is in no template;
//   round 2: Country = US (10): {⊥, US} has no Discharged, {⊥, ⊥} 5 / 14;
//   round 3: Job = Doctor (6; Trader and Child = Yes also 6, Doctor first);
//   round 4: Job = Trader (6): {Trader, ⊥} 4 / 6; round 5: Child = Yes (6);
//   rounds 6-8: Job = Cook, Artist, Clerk (4 each); UK and Canada (5 each) are invalid: either
//            leaves {Trader, UK} or {Trader, ⊥} with 4 Discharged of 5 records (80%);
//   round 9: Country = France (4): {Artist, France} 0 / 4, {Trader, ⊥} 4 / 6, {Clerk, ⊥} 1 / 4.
// UK and Canada stay suppressed: 5 + 5 = 10 units over 24 records. Scoring a disclosure by the
// records of the whole ⊥ node instead (24 for each attribute at the start) would open with Job.
TEST(WorkedExampleD, MinimalDistortionScoreDisclosesTheMostFrequentValueFirst) {
  std::string spec = SpecD(0.75) + "score: distortion\n";
  const Job job = WriteJob("d_distortion", spec, TableD());
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  const std::vector<std::tuple<std::string, std::string, double>> order = {
      {"Child", "No", 18},  {"Country", "US", 10}, {"Job", "Doctor", 6},
      {"Job", "Trader", 6}, {"Child", "Yes", 6},   {"Job", "Cook", 4},
      {"Job", "Artist", 4}, {"Job", "Clerk", 4},   {"Country", "France", 4}};
  ASSERT_EQ(report.steps_size(), static_cast<int>(order.size()));
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& step = report.steps(static_cast<int>(i));
    EXPECT_EQ(step.attribute(), std::get<0>(order[i])) << "round " << i + 1;
    ASSERT_GE(step.children_size(), 1) << "round " << i + 1;
    EXPECT_EQ(step.children(0), std::get<1>(order[i])) << "round " << i + 1;
    EXPECT_DOUBLE_EQ(step.score(), std::get<2>(order[i])) << "round " << i + 1;
  }
  ASSERT_OK_AND_ASSIGN(Table raw, ReadCsvTable(job.input_path));
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  ASSERT_EQ(out.rows.size(), raw.rows.size());
  int suppressed = 0;
  for (const std::string name : {"Job", "Country", "Child"}) {
    const size_t in = std::find(raw.header.begin(), raw.header.end(), name) - raw.header.begin();
    const size_t at = std::find(out.header.begin(), out.header.end(), name) - out.header.begin();
    ASSERT_LT(at, out.header.size()) << name;
    for (size_t r = 0; r < out.rows.size(); ++r) {
      const bool hidden =
          name == "Country" && (raw.rows[r][in] == "UK" || raw.rows[r][in] == "Canada");
      EXPECT_EQ(out.rows[r][at], hidden ? "*" : raw.rows[r][in]) << name << ", record " << r + 1;
      suppressed += out.rows[r][at] == "*";
    }
  }
  EXPECT_EQ(suppressed, 10);
  ExpectPrivateTruthfulMaximal(job);
}

TEST(WorkedExampleD, ThresholdBelowFiveTwentyFourthsIsUnsatisfiable) {
  const Job job = WriteJob("d_unsat", SpecD(0.15), TableD());
  auto report = RunJob(job);
  EXPECT_THAT(report, StatusIs(absl::StatusCode::kFailedPrecondition, "5/24"));
  EXPECT_FALSE(std::filesystem::exists(job.output_path));
  EXPECT_FALSE(std::filesystem::exists(job.report_path));
}

}  // namespace
}  // namespace fedanon::testing
