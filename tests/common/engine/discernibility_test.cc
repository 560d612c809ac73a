// The discernibility score (mohammed2009 §3.2.2 eq. 4, Example 3) as a known answer: on the
// paper's Table 1 (11 records) the root candidates are ranked by the discernibility cost their
// specialization removes, Score(ANY_Job) = 11² − (6² + 5²) = 60, and a run with that score picks
// ANY_Job first whatever the attribute order (so the choice is the score's, not the tie-break's).
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr char kJobTaxonomy[] =
    "Janitor;Non-Technical;Blue-collar;ANY_Job\n"
    "Mover;Non-Technical;Blue-collar;ANY_Job\n"
    "Carpenter;Technical;Blue-collar;ANY_Job\n"
    "Technician;Technical;Blue-collar;ANY_Job\n"
    "Manager;White-collar;ANY_Job\n"
    "Lawyer;Professional;White-collar;ANY_Job\n"
    "Doctor;Professional;White-collar;ANY_Job\n";
constexpr char kSexTaxonomy[] = "M;ANY_Sex\nF;ANY_Sex\n";
constexpr char kAgeTaxonomy[] =
    "24;[1-30);[1-60);[1-99)\n"
    "34;[30-60);[1-60);[1-99)\n"
    "44;[30-60);[1-60);[1-99)\n"
    "58;[30-60);[1-60);[1-99)\n"
    "63;[60-99);[1-99)\n";

// mohammed2009 Table 1 (raw patient data).
Table Table1() {
  Table t;
  t.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  t.rows = {{"1", "Janitor", "M", "34", "Y", "Transgender"},
            {"2", "Doctor", "M", "58", "N", "Plastic"},
            {"3", "Mover", "M", "34", "Y", "Transgender"},
            {"4", "Lawyer", "M", "24", "N", "Vascular"},
            {"5", "Mover", "M", "58", "N", "Urology"},
            {"6", "Janitor", "M", "44", "Y", "Plastic"},
            {"7", "Doctor", "M", "24", "N", "Urology"},
            {"8", "Lawyer", "F", "58", "N", "Plastic"},
            {"9", "Doctor", "F", "44", "N", "Vascular"},
            {"10", "Carpenter", "F", "63", "Y", "Vascular"},
            {"11", "Technician", "F", "63", "Y", "Plastic"}};
  return t;
}

// The spec with the QID attributes in `qid_order` (a permutation of Job, Sex, Age).
std::string Spec(const std::vector<std::string>& qid_order) {
  std::string attrs;
  for (const auto& q : qid_order) {
    std::string lower = q;
    lower[0] = static_cast<char>(lower[0] - 'A' + 'a');
    absl::StrAppend(&attrs, "  - {name: ", q, ", role: qid, taxonomy: tax/", lower, ".csv}\n");
  }
  return absl::StrCat("name: example-3\nattributes:\n", attrs,
                      "  - {name: Transfuse, role: class}\n"
                      "  - {name: Surgery, role: sensitive}\n"
                      "privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}\n"
                      "score: discernibility\n");
}

Job Job1(const std::string& name, const std::vector<std::string>& qid_order) {
  return WriteJob(name, Spec(qid_order), Table1(),
                  {{"tax/job.csv", kJobTaxonomy},
                   {"tax/sex.csv", kSexTaxonomy},
                   {"tax/age.csv", kAgeTaxonomy}});
}

TEST(DiscernibilityExample3, RootScoresAreTheCostEachSpecializationRemoves) {
  const Job job = Job1("disc_root", {"Job", "Sex", "Age"});
  ASSERT_OK_AND_ASSIGN(auto spec, spec::LoadJobSpec(job.spec_path));
  ASSERT_OK_AND_ASSIGN(auto data, table::LoadDataset(spec, job.input_path));
  ASSERT_OK_AND_ASSIGN(auto model, engine::BuildPrivacyModel(spec, data));
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : data.qids) hier.emplace_back(&q);
  engine::Tips tips(&data, &hier);
  engine::LocalCountSource source(&tips);
  engine::EngineOptions opts;
  opts.score = spec.score();
  ASSERT_OK_AND_ASSIGN(auto engine,
                       engine::TopDownSpecializer::Create(&data, &model, &hier, &source, opts));
  std::map<std::string, double> score;
  for (const auto& c : engine->Candidates()) score[c.value] = c.score;
  // Example 3: after ANY_Job -> {Blue-collar, White-collar} the cost is 6² + 5² = 61, down from
  // 11² = 121. ANY_Sex: M 7, F 4 -> 121 − 65 = 56. [1-99): [1-60) 9, [60-99) 2 -> 121 − 85 = 36.
  EXPECT_DOUBLE_EQ(score["ANY_Job"], 121 - 61);
  EXPECT_DOUBLE_EQ(score["ANY_Sex"], 121 - (49 + 16));
  EXPECT_DOUBLE_EQ(score["[1-99)"], 121 - (81 + 4));
}

TEST(DiscernibilityExample3, RunPicksAnyJobFirstWhateverTheAttributeOrder) {
  for (const auto& order : std::vector<std::vector<std::string>>{
           {"Job", "Sex", "Age"}, {"Age", "Sex", "Job"}, {"Sex", "Age", "Job"}}) {
    SCOPED_TRACE(order[0]);
    const Job job = Job1("disc_run_" + order[0], order);
    ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
    ASSERT_GT(report.steps_size(), 0);
    EXPECT_EQ(report.steps(0).attribute(), "Job");
    EXPECT_EQ(report.steps(0).value(), "ANY_Job");
    EXPECT_DOUBLE_EQ(report.steps(0).score(), 60);
    // Then ANY_Sex: Blue-collar 6 -> M 4, F 2 (36 − 20) and White-collar 5 -> M 3, F 2
    // (25 − 13) = 28, against [1-99): Blue-collar 6 -> 4, 2 (16), White-collar all under 60 (0).
    ASSERT_GT(report.steps_size(), 1);
    EXPECT_EQ(report.steps(1).value(), "ANY_Sex");
    EXPECT_DOUBLE_EQ(report.steps(1).score(), 28);
    // Later steps may remove nothing (every group holding the value falls into one child) and are
    // still applied while valid, as TDS does with a zero InfoGain.
    for (const auto& step : report.steps()) EXPECT_GE(step.score(), 0) << step.value();
    ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
    const PrivacyCheck check = CheckPrivacy(in);
    EXPECT_TRUE(check.satisfied) << check.violation;
    EXPECT_OK(CheckMaximal(in));
  }
}

}  // namespace
}  // namespace fedanon::testing
