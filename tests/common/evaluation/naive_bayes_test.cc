// Naive Bayes and k-fold cross-validation on tables small enough to compute by hand: Mitchell
// (1997) §6.9.1's PlayTennis query on Quinlan's weather data, unsmoothed (his 0.0053 and 0.0206)
// and with Laplace smoothing (worked out below), a Gaussian continuous feature, and the folds.
#include "common/evaluation/naive_bayes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "common/evaluation/utility_evaluation.h"
#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

void AddCategorical(ClassificationTable* t, const std::string& name,
                    const std::vector<std::string>& values) {
  FeatureColumn f;
  f.name = name;
  for (const std::string& v : values) {
    auto it = std::find(f.value_names.begin(), f.value_names.end(), v);
    if (it == f.value_names.end()) {
      f.value_names.push_back(v);
      it = f.value_names.end() - 1;
    }
    f.codes.push_back(static_cast<int32_t>(it - f.value_names.begin()));
  }
  t->features.push_back(std::move(f));
}

void SetLabels(ClassificationTable* t, const std::vector<std::string>& labels) {
  for (const std::string& l : labels) {
    auto it = std::find(t->class_names.begin(), t->class_names.end(), l);
    if (it == t->class_names.end()) {
      t->class_names.push_back(l);
      it = t->class_names.end() - 1;
    }
    t->labels.push_back(static_cast<int32_t>(it - t->class_names.begin()));
  }
}

// Quinlan's weather data (14 records, class "no" first) and, as record 14, Mitchell's query
// <sunny, cool, high, strong wind>; training uses records 0..13 only.
ClassificationTable WeatherWithQuery() {
  ClassificationTable t;
  AddCategorical(&t, "outlook",
                 {"sunny", "sunny", "overcast", "rain", "rain", "rain", "overcast", "sunny",
                  "sunny", "rain", "sunny", "overcast", "overcast", "rain", "sunny"});
  AddCategorical(&t, "temperature",
                 {"hot", "hot", "hot", "mild", "cool", "cool", "cool", "mild", "cool", "mild",
                  "mild", "mild", "hot", "mild", "cool"});
  AddCategorical(&t, "humidity",
                 {"high", "high", "high", "high", "normal", "normal", "normal", "high", "normal",
                  "normal", "normal", "high", "normal", "high", "high"});
  AddCategorical(&t, "windy",
                 {"false", "true", "false", "false", "false", "true", "true", "false", "false",
                  "false", "true", "true", "false", "true", "true"});
  SetLabels(&t, {"no", "no", "yes", "yes", "yes", "no", "yes", "no", "yes", "yes", "yes", "yes",
                 "yes", "no", "no"});
  return t;
}

std::vector<uint32_t> Rows(uint32_t n) {
  std::vector<uint32_t> rows(n);
  for (uint32_t i = 0; i < n; ++i) rows[i] = i;
  return rows;
}

TEST(NaiveBayesTest, MitchellsPlayTennisUnsmoothed) {
  const ClassificationTable t = WeatherWithQuery();
  ASSERT_OK_AND_ASSIGN(NaiveBayes nb, NaiveBayes::Train(t, Rows(14), {.laplace = 0}));
  const std::vector<double> p = nb.Posteriors(t, 14);
  // no:  5/14 * 3/5 * 1/5 * 4/5 * 3/5 = 0.020571;  yes: 9/14 * 2/9 * 3/9 * 3/9 * 3/9 = 0.005291.
  EXPECT_NEAR(p[0], 5.0 / 14 * 3.0 / 5 * 1.0 / 5 * 4.0 / 5 * 3.0 / 5, 1e-12);
  EXPECT_NEAR(p[1], 9.0 / 14 * 2.0 / 9 * 3.0 / 9 * 3.0 / 9 * 3.0 / 9, 1e-12);
  EXPECT_NEAR(p[0], 0.0206, 5e-5);
  EXPECT_NEAR(p[1], 0.0053, 5e-5);
  EXPECT_EQ(nb.Classify(t, 14), 0);  // PlayTennis = no
}

TEST(NaiveBayesTest, MitchellsPlayTennisWithLaplaceSmoothing) {
  const ClassificationTable t = WeatherWithQuery();
  ASSERT_OK_AND_ASSIGN(NaiveBayes nb, NaiveBayes::Train(t, Rows(14)));
  const std::vector<double> p = nb.Posteriors(t, 14);
  // alpha = 1: prior (n_c + 1) / (14 + 2); outlook and temperature have 3 values, humidity and
  // windy 2.  no:  6/16 * 4/8 * 2/8 * 5/7 * 4/7 = 0.019133;
  //           yes: 10/16 * 3/12 * 4/12 * 4/11 * 4/11 = 0.006887.
  EXPECT_NEAR(p[0], 6.0 / 16 * 4.0 / 8 * 2.0 / 8 * 5.0 / 7 * 4.0 / 7, 1e-12);
  EXPECT_NEAR(p[1], 10.0 / 16 * 3.0 / 12 * 4.0 / 12 * 4.0 / 11 * 4.0 / 11, 1e-12);
  EXPECT_NEAR(p[0], 0.019133, 1e-6);
  EXPECT_NEAR(p[1], 0.006887, 1e-6);
  EXPECT_EQ(nb.Classify(t, 14), 0);
  // On its own training records the same counts misclassify one record of 14: record 5,
  // <rain, cool, normal, strong wind>, labelled no, scores yes 0.016070 against no 0.005740.
  const std::vector<double> p5 = nb.Posteriors(t, 5);
  EXPECT_NEAR(p5[1], 10.0 / 16 * 4.0 / 12 * 4.0 / 12 * 7.0 / 11 * 4.0 / 11, 1e-12);
  EXPECT_NEAR(p5[0], 6.0 / 16 * 3.0 / 8 * 2.0 / 8 * 2.0 / 7 * 4.0 / 7, 1e-12);
  EXPECT_NEAR(nb.ErrorRate(t, Rows(14)), 1.0 / 14, 1e-12);
}

TEST(NaiveBayesTest, GaussianContinuousFeature) {
  ClassificationTable t;
  FeatureColumn x;
  x.name = "x";
  x.continuous = true;
  x.numbers = {1, 2, 3, 7, 9, 11, 5};  // class a: 1 2 3 (mean 2, var 2/3); b: 7 9 11 (9, 8/3)
  t.features.push_back(x);
  SetLabels(&t, {"a", "a", "a", "b", "b", "b", "a"});
  ASSERT_OK_AND_ASSIGN(NaiveBayes nb, NaiveBayes::Train(t, Rows(6), {.laplace = 0}));
  auto density = [](double v, double mean, double var) {
    return std::exp(-(v - mean) * (v - mean) / (2 * var)) / std::sqrt(2 * std::numbers::pi * var);
  };
  const std::vector<double> p = nb.Posteriors(t, 6);  // x = 5
  EXPECT_NEAR(p[0], 0.5 * density(5, 2, 2.0 / 3), 1e-15);
  EXPECT_NEAR(p[1], 0.5 * density(5, 9, 8.0 / 3), 1e-15);
  EXPECT_EQ(nb.Classify(t, 6), 1);  // 5 is 3.7 sd from a's mean, 2.4 sd from b's
  EXPECT_EQ(nb.ErrorRate(t, Rows(6)), 0);
}

TEST(NaiveBayesTest, BadInput) {
  const ClassificationTable t = WeatherWithQuery();
  EXPECT_FALSE(NaiveBayes::Train(t, {}).ok());
  EXPECT_FALSE(NaiveBayes::Train(t, Rows(14), {.laplace = -1}).ok());
}

TEST(CrossValidationTest, FoldsPartitionTheRecordsWithSizesWithinOne) {
  std::vector<uint32_t> order = {9, 3, 7, 1, 0, 2, 8, 4, 6, 5, 10};  // 11 records, 3 folds
  std::vector<uint32_t> seen;
  std::vector<size_t> sizes;
  for (int f = 0; f < 3; ++f) {
    const std::vector<uint32_t> fold = FoldTestRecords(order, 3, f);
    sizes.push_back(fold.size());
    seen.insert(seen.end(), fold.begin(), fold.end());
  }
  EXPECT_THAT(sizes, ::testing::ElementsAre(4, 4, 3));
  EXPECT_EQ(seen, order);
}

TEST(CrossValidationTest, ErrorIsMisclassifiedOverAllRecords) {
  // Leave-one-out on the 14 weather records, naive Bayes unsmoothed, computed by hand per fold
  // is long; instead: 14 folds of one record each equal the mean of the 14 single-record errors.
  const ClassificationTable t = WeatherWithQuery();
  ClassificationTable w = t;
  for (FeatureColumn& f : w.features) f.codes.pop_back();
  w.labels.pop_back();
  const std::vector<uint32_t> order = Rows(14);
  EvaluationOptions o;
  o.classifier = Classifier::kNaiveBayes;
  o.naive_bayes.laplace = 1;
  o.folds = 14;
  ASSERT_OK_AND_ASSIGN(auto cv, ClassifierError(w, order, {}, o));
  double wrong = 0;
  for (uint32_t r = 0; r < 14; ++r) {
    std::vector<uint32_t> train;
    for (uint32_t x = 0; x < 14; ++x) {
      if (x != r) train.push_back(x);
    }
    ASSERT_OK_AND_ASSIGN(NaiveBayes nb, NaiveBayes::Train(w, train, o.naive_bayes));
    wrong += nb.Classify(w, r) != w.labels[r] ? 1 : 0;
  }
  EXPECT_DOUBLE_EQ(cv.first, wrong / 14);
  o.folds = 20;  // more folds than records
  EXPECT_FALSE(ClassifierError(w, order, {}, o).ok());
}

}  // namespace
}  // namespace fedanon::evaluation
