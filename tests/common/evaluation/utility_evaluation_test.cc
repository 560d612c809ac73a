// BE / CE / UE / SE and DR on small tables whose answers follow by hand: the class is a function
// of one QID (a tree learns it exactly: error 0) and a minority class of 6 in 30 records; with
// the QID generalized away the tree can only predict the majority, so the error is the share of
// minority records among the test records of the seeded split. Plus the row-alignment checks
// between the raw and the anonymized table and the error messages for bad input.
#include "common/evaluation/utility_evaluation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

using testing::FreshDir;
using ::testing::HasSubstr;
using testing::WriteText;

constexpr char kSpec[] = R"(name: tiny
attributes:
  - {name: job, role: qid}
  - {name: age, role: qid, type: continuous}
  - {name: shift, role: other}
  - {name: ok, role: class}
privacy: {model: lkc, L: 1, K: 2}
score: infogain
)";

// 30 records: job a (24, class yes) or b (6, class no); age 20..49 (uninformative: the b records
// are spread over it); shift always "day".
struct Tiny {
  std::string raw_csv = "job,age,shift,ok\n";
  std::vector<bool> minority;
  Tiny() {
    for (int i = 0; i < 30; ++i) {
      const bool b = i % 5 == 2;
      minority.push_back(b);
      absl::StrAppend(&raw_csv, b ? "b" : "a", ",", 20 + i, ",day,", b ? "no" : "yes", "\n");
    }
  }
  // The anonymized table with `job` written by `job_of(i)` and age as one interval.
  template <typename F>
  std::string Anonymized(F job_of) const {
    std::string csv = "job,age,shift,ok\n";
    for (int i = 0; i < 30; ++i) {
      absl::StrAppend(&csv, job_of(i), ",[20-50),day,", minority[i] ? "no" : "yes", "\n");
    }
    return csv;
  }
  // Share of minority records among the test records (the last third of the shuffled order).
  double MinorityShareInTest(uint64_t seed) const {
    const std::vector<uint32_t> order = ShuffledRecords(30, seed);
    int count = 0;
    for (size_t i = 20; i < 30; ++i) count += minority[order[i]];
    return count / 10.0;
  }
};

fedanon::v1::JobSpec Spec(const char* yaml = kSpec) {
  auto spec = spec::ParseJobSpecYaml(yaml, "spec.yaml");
  EXPECT_OK(spec.status());
  EXPECT_OK(spec::ValidateJobSpec(*spec));
  return *spec;
}

TEST(ShuffledRecordsTest, SeededPermutation) {
  const std::vector<uint32_t> a = ShuffledRecords(100, 7);
  EXPECT_EQ(a, ShuffledRecords(100, 7));
  EXPECT_NE(a, ShuffledRecords(100, 8));
  std::vector<uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
}

TEST(DiscernibilityRatioTest, SumOfSquaresOverSquare) {
  EXPECT_DOUBLE_EQ(DiscernibilityRatio({3, 2, 1}), 14.0 / 36);
  EXPECT_DOUBLE_EQ(DiscernibilityRatio({5}), 1.0);
  EXPECT_DOUBLE_EQ(DiscernibilityRatio({1, 1, 1, 1}), 0.25);
  EXPECT_DOUBLE_EQ(DiscernibilityRatio({}), 0.0);
}

TEST(UtilityEvaluatorTest, HandComputedErrors) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_errors");
  WriteText(dir + "/raw.csv", tiny.raw_csv);
  WriteText(dir + "/root.csv", tiny.Anonymized([](int) { return "*"; }));
  WriteText(dir + "/kept.csv",
            tiny.Anonymized([&](int i) { return tiny.minority[i] ? "b" : "a"; }));
  ASSERT_OK_AND_ASSIGN(auto ev, UtilityEvaluator::Create(Spec(), dir + "/raw.csv"));
  const RawBaselines& b = ev->baselines();
  EXPECT_EQ(b.records, 30u);
  EXPECT_EQ(b.train_records, 20u);
  EXPECT_EQ(b.test_records, 10u);
  const double minority = tiny.MinorityShareInTest(1);
  ASSERT_GT(minority, 0.0);  // the seed puts minority records into the test set
  // Raw: job decides the class; the training set holds both jobs at least twice for this seed.
  EXPECT_EQ(b.baseline_error, 0.0);
  // Without QIDs only `shift` (constant) is left: the majority, yes, is always predicted.
  EXPECT_DOUBLE_EQ(b.upper_bound_error, minority);
  EXPECT_TRUE(b.source_errors.empty());

  // job suppressed, age one interval: one group of 30 (DR 1), majority prediction.
  ASSERT_OK_AND_ASSIGN(AnonymizedUtility root, ev->Evaluate(dir + "/root.csv"));
  EXPECT_DOUBLE_EQ(root.classification_error, minority);
  EXPECT_DOUBLE_EQ(root.discernibility_ratio, 1.0);
  EXPECT_EQ(root.groups, 1u);

  // job kept: groups of 24 and 6, DR (24^2 + 6^2) / 30^2 = 0.68, and the class is learnt again.
  ASSERT_OK_AND_ASSIGN(AnonymizedUtility kept, ev->Evaluate(dir + "/kept.csv"));
  EXPECT_EQ(kept.classification_error, 0.0);
  EXPECT_DOUBLE_EQ(kept.discernibility_ratio, 0.68);
  EXPECT_EQ(kept.groups, 2u);
}

// RE, the removal error (thesis §5.4 RE, §6.4 RJE and RSE: the raw records with the named
// attributes removed), by hand on Tiny: without `job` nothing informative is left, so the tree
// predicts the majority and RE is the minority share of the test records (UE's figure); without
// `shift` or `age`, `job` still decides the class and RE is 0.
TEST(UtilityEvaluatorTest, RemovalErrorByHand) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_removal");
  WriteText(dir + "/raw.csv", tiny.raw_csv);
  const double minority = tiny.MinorityShareInTest(1);
  ASSERT_GT(minority, 0.0);
  EvaluationOptions options;
  options.removed_attributes = {"job"};
  ASSERT_OK_AND_ASSIGN(auto without_job,
                       UtilityEvaluator::Create(Spec(), dir + "/raw.csv", options));
  ASSERT_TRUE(without_job->baselines().removal_error.has_value());
  EXPECT_DOUBLE_EQ(*without_job->baselines().removal_error, minority);
  EXPECT_EQ(without_job->baselines().baseline_error, 0.0);  // BE keeps every attribute
  options.removed_attributes = {"age", "shift"};
  ASSERT_OK_AND_ASSIGN(auto kept_job, UtilityEvaluator::Create(Spec(), dir + "/raw.csv", options));
  EXPECT_EQ(kept_job->baselines().removal_error, 0.0);
  ASSERT_OK_AND_ASSIGN(auto no_removal, UtilityEvaluator::Create(Spec(), dir + "/raw.csv"));
  EXPECT_FALSE(no_removal->baselines().removal_error.has_value());
}

// Naive Bayes under 10-fold cross-validation (thesis §4.4.1, §4.4.2) on Tiny, by hand, for the
// errors whose answer does not depend on how the seeded folds fall. Without `job` (RE) or
// without both QIDs (UE) only the uninformative age (UE: not even that) and the constant shift
// are left. A fold trains on 27 records of which k = 3..6 are no: the prior favours yes by
// (27 - k) : k = 8, 5.75, 4.4, 3.5, while the age densities of the two classes (both spread over
// 20..49; the yes class's sd is about 8.8, the no class's at least 4.1, 5.6, 7.1, 8.5 for those
// k, its ages 5 apart) differ by a factor of at most about 3.4, 2.1, 1.4, 1.1: every no record is
// misclassified and no yes record, whichever fold it falls in: RE = UE = 6 / 30.
TEST(UtilityEvaluatorTest, NaiveBayesCrossValidationByHand) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_nb_cv");
  WriteText(dir + "/raw.csv", tiny.raw_csv);
  EvaluationOptions options;
  options.classifier = Classifier::kNaiveBayes;
  options.folds = 10;
  options.removed_attributes = {"job"};
  ASSERT_OK_AND_ASSIGN(auto ev, UtilityEvaluator::Create(Spec(), dir + "/raw.csv", options));
  const RawBaselines& b = ev->baselines();
  EXPECT_EQ(b.records, 30u);
  ASSERT_TRUE(b.removal_error.has_value());
  EXPECT_DOUBLE_EQ(*b.removal_error, 6.0 / 30);
  EXPECT_DOUBLE_EQ(b.upper_bound_error, 6.0 / 30);
}

TEST(UtilityEvaluatorTest, SourceErrorPerPartyOfAVerticalJob) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_vertical");
  WriteText(dir + "/raw.csv", tiny.raw_csv);
  const fedanon::v1::JobSpec spec = Spec(R"(name: tiny-vertical
partitioning: vertical
attributes:
  - {name: job, role: qid, party: A}
  - {name: age, role: qid, type: continuous, party: B}
  - {name: shift, role: other, party: B}
  - {name: ok, role: class, party: A}
privacy: {model: lkc, L: 1, K: 2}
score: infogain
)");
  ASSERT_OK_AND_ASSIGN(auto ev, UtilityEvaluator::Create(spec, dir + "/raw.csv"));
  const RawBaselines& b = ev->baselines();
  ASSERT_EQ(b.source_errors.size(), 2u);
  EXPECT_EQ(b.source_errors[0].party, "A");
  EXPECT_EQ(b.source_errors[0].error, 0.0);  // A holds job
  EXPECT_EQ(b.source_errors[1].party, "B");  // B: age and shift say nothing about the class
  EXPECT_DOUBLE_EQ(b.source_errors[1].error, tiny.MinorityShareInTest(1));
}

TEST(UtilityEvaluatorTest, DropsRawRecordsWithMissingValuesLikeTheEngine) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_missing");
  // A raw record with a missing age is not in the anonymized table.
  std::string raw = tiny.raw_csv + "a,?,day,yes\n";
  WriteText(dir + "/raw.csv", raw);
  WriteText(dir + "/root.csv", tiny.Anonymized([](int) { return "*"; }));
  ASSERT_OK_AND_ASSIGN(auto ev, UtilityEvaluator::Create(Spec(), dir + "/raw.csv"));
  EXPECT_EQ(ev->baselines().records, 30u);
  ASSERT_OK_AND_ASSIGN(AnonymizedUtility root, ev->Evaluate(dir + "/root.csv"));
  EXPECT_EQ(root.groups, 1u);
}

TEST(UtilityEvaluatorTest, RejectsTablesThatDoNotBelongTogether) {
  const Tiny tiny;
  const std::string dir = FreshDir("eval_mismatch");
  WriteText(dir + "/raw.csv", tiny.raw_csv);
  ASSERT_OK_AND_ASSIGN(auto ev, UtilityEvaluator::Create(Spec(), dir + "/raw.csv"));

  std::string short_csv = tiny.Anonymized([](int) { return "*"; });
  short_csv.erase(short_csv.rfind('\n', short_csv.size() - 2) + 1);  // drop the last record
  WriteText(dir + "/short.csv", short_csv);
  EXPECT_THAT(ev->Evaluate(dir + "/short.csv").status().message(),
              HasSubstr("29 records, but the raw table"));

  // Records 1 and 3 (classes yes / no) swapped: the class differs on line 3 of the file.
  std::string swapped = "job,age,shift,ok\n";
  for (int i = 0; i < 30; ++i) {
    const int from = i == 0 ? 2 : i == 2 ? 0 : i;
    absl::StrAppend(&swapped, "*,[20-50),day,", tiny.minority[from] ? "no" : "yes", "\n");
  }
  WriteText(dir + "/swapped.csv", swapped);
  EXPECT_THAT(ev->Evaluate(dir + "/swapped.csv").status().message(),
              HasSubstr("swapped.csv:2: class 'no' but raw record 1 has 'yes'"));

  WriteText(dir + "/nocol.csv", "job,age,ok\n*,[20-50),yes\n");
  EXPECT_THAT(ev->Evaluate(dir + "/nocol.csv").status().message(),
              HasSubstr("no column 'shift' in the header"));
}

TEST(UtilityEvaluatorTest, BadRawInput) {
  const std::string dir = FreshDir("eval_bad");
  WriteText(dir + "/raw.csv", "job,age,shift,ok\na,20,day,yes\nb,old,day,no\na,22,day,yes\n");
  EXPECT_THAT(UtilityEvaluator::Create(Spec(), dir + "/raw.csv").status().message(),
              HasSubstr("raw.csv:3:2: continuous attribute 'age': 'old' is not a number"));
  EXPECT_EQ(UtilityEvaluator::Create(Spec(), dir + "/absent.csv").status().code(),
            absl::StatusCode::kNotFound);
  const fedanon::v1::JobSpec no_class = Spec(R"(name: x
attributes:
  - {name: job, role: qid}
privacy: {model: lkc, L: 1, K: 2}
score: discernibility
)");
  EXPECT_THAT(UtilityEvaluator::Create(no_class, dir + "/raw.csv").status().message(),
              HasSubstr("no class attribute"));
}

TEST(EvaluationToJsonTest, NamesEveryFigure) {
  RawBaselines b;
  b.records = 30;
  b.baseline_error = 0.1;
  b.upper_bound_error = 0.3;
  b.source_errors = {{"A", 0.2}};
  AnonymizedUtility u;
  u.classification_error = 0.15;
  u.discernibility_ratio = 0.5;
  u.groups = 2;
  const std::string json = EvaluationToJson(b, &u, 9);
  EXPECT_THAT(json, HasSubstr("\"BE\": 0.1"));
  EXPECT_THAT(json, HasSubstr("\"CE\": 0.15"));
  EXPECT_THAT(json, HasSubstr("\"UE\": 0.3"));
  EXPECT_THAT(json, HasSubstr("\"A\": 0.2"));
  EXPECT_THAT(json, HasSubstr("\"DR\": 0.5"));
  EXPECT_THAT(json, HasSubstr("\"seed\": 9"));
}

}  // namespace
}  // namespace fedanon::evaluation
