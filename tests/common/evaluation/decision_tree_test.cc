// The C4.5-style decision tree on tables small enough to compute by hand: Quinlan's weather data
// (known gains and gain ratios, known tree), a continuous cut with the release-8 correction,
// the minimum branch size, pessimistic pruning (Quinlan 1993 §4's congressional-voting numbers)
// collapsing a subtree that does not pay for itself, and unseen values.
#include "common/evaluation/decision_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

// Appends a categorical feature with the given values (codes by first appearance).
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

std::vector<uint32_t> AllRows(const ClassificationTable& t) {
  std::vector<uint32_t> rows(t.num_records());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i);
  return rows;
}

// Quinlan's weather data (Quinlan 1993, Table 2-1), nominal version.
ClassificationTable Weather() {
  ClassificationTable t;
  AddCategorical(&t, "outlook",
                 {"sunny", "sunny", "overcast", "rain", "rain", "rain", "overcast", "sunny",
                  "sunny", "rain", "sunny", "overcast", "overcast", "rain"});
  AddCategorical(&t, "temperature",
                 {"hot", "hot", "hot", "mild", "cool", "cool", "cool", "mild", "cool", "mild",
                  "mild", "mild", "hot", "mild"});
  AddCategorical(&t, "humidity",
                 {"high", "high", "high", "high", "normal", "normal", "normal", "high", "normal",
                  "normal", "normal", "high", "normal", "high"});
  AddCategorical(&t, "windy",
                 {"false", "true", "false", "false", "false", "true", "true", "false", "false",
                  "false", "true", "true", "false", "true"});
  SetLabels(&t, {"no", "no", "yes", "yes", "yes", "no", "yes", "no", "yes", "yes", "yes", "yes",
                 "yes", "no"});
  return t;
}

TEST(DecisionTreeTest, WeatherRootIsOutlookWithQuinlansGainRatio) {
  const ClassificationTable t = Weather();
  ASSERT_OK_AND_ASSIGN(DecisionTree tree, DecisionTree::Train(t, AllRows(t)));
  const TreeNode& root = tree.nodes()[0];
  ASSERT_EQ(root.feature, 0);  // outlook
  // H(9/14) = 0.940286; remainder (5/14)*0.970951*2 = 0.693536; gain 0.246750.
  const double h = -(9.0 / 14) * std::log2(9.0 / 14) - (5.0 / 14) * std::log2(5.0 / 14);
  const double h5 = -(2.0 / 5) * std::log2(2.0 / 5) - (3.0 / 5) * std::log2(3.0 / 5);
  const double gain = h - 2 * (5.0 / 14) * h5;
  EXPECT_NEAR(gain, 0.246750, 1e-6);
  EXPECT_NEAR(root.gain, gain, 1e-12);
  // Split information of 5/4/5 out of 14: 1.577406; gain ratio 0.156428 (humidity: 0.151836).
  EXPECT_NEAR(root.gain_ratio, 0.246750 / 1.577406, 1e-6);
  EXPECT_NEAR(root.gain_ratio, 0.156428, 1e-6);
  // The well-known tree; pruning keeps it (sunny: 2.110 estimated errors as a subtree against
  // about 3.2 as a leaf; the root 5.39 against about 6.8).
  EXPECT_EQ(tree.ToString(t),
            "outlook = sunny\n"
            "    humidity = high: no (3/0)\n"
            "    humidity = normal: yes (2/0)\n"
            "outlook = overcast: yes (4/0)\n"
            "outlook = rain\n"
            "    windy = false: yes (3/0)\n"
            "    windy = true: no (2/0)\n");
  EXPECT_EQ(tree.num_leaves(), 5u);
  EXPECT_EQ(tree.ErrorRate(t, AllRows(t)), 0.0);
}

TEST(DecisionTreeTest, ClassifiesHeldOutRecordsAndUnseenValues) {
  ClassificationTable t = Weather();
  // Three held-out records (rows 14-16): sunny/normal -> yes; rain/true -> no; and a fog
  // outlook that no training record has -> the root's majority, yes. Their true labels make
  // one of the three wrong: error 1/3.
  t.features[0].value_names.push_back("fog");
  const std::vector<std::vector<std::string>> extra = {{"sunny", "hot", "normal", "true"},
                                                       {"rain", "cool", "high", "true"},
                                                       {"fog", "cool", "high", "true"}};
  const std::vector<std::string> truth = {"yes", "no", "no"};
  for (size_t r = 0; r < extra.size(); ++r) {
    for (size_t f = 0; f < 4; ++f) {
      FeatureColumn& col = t.features[f];
      auto it = std::find(col.value_names.begin(), col.value_names.end(), extra[r][f]);
      ASSERT_NE(it, col.value_names.end());
      col.codes.push_back(static_cast<int32_t>(it - col.value_names.begin()));
    }
    t.labels.push_back(truth[r] == "yes" ? 1 : 0);
  }
  ASSERT_EQ(t.class_names[1], "yes");
  std::vector<uint32_t> train(14);
  for (uint32_t i = 0; i < 14; ++i) train[i] = i;
  ASSERT_OK_AND_ASSIGN(DecisionTree tree, DecisionTree::Train(t, train));
  EXPECT_EQ(t.class_names[tree.Classify(t, 14)], "yes");
  EXPECT_EQ(t.class_names[tree.Classify(t, 15)], "no");
  EXPECT_EQ(t.class_names[tree.Classify(t, 16)], "yes");
  EXPECT_NEAR(tree.ErrorRate(t, {14, 15, 16}), 1.0 / 3, 1e-12);
}

TEST(DecisionTreeTest, ContinuousCutWithReleaseEightCorrection) {
  // x = 1..8, class A for x <= 4, B above; a useless categorical feature.
  ClassificationTable t;
  FeatureColumn x;
  x.name = "x";
  x.continuous = true;
  for (int i = 1; i <= 8; ++i) x.numbers.push_back(i);
  t.features.push_back(x);
  AddCategorical(&t, "noise", {"p", "q", "p", "q", "p", "q", "p", "q"});
  SetLabels(&t, {"A", "A", "A", "A", "B", "B", "B", "B"});
  ASSERT_OK_AND_ASSIGN(DecisionTree tree, DecisionTree::Train(t, AllRows(t)));
  const TreeNode& root = tree.nodes()[0];
  ASSERT_EQ(root.feature, 0);
  EXPECT_EQ(root.threshold, 4);
  // Cuts with at least 2 records on each side: after 2, 3, 4, 5, 6 -> 5 candidates. The best
  // gains 1 bit; less log2(5)/8 = 0.290241; split information 1.
  EXPECT_NEAR(root.gain, 1 - std::log2(5.0) / 8, 1e-12);
  EXPECT_NEAR(root.gain_ratio, 0.709759, 1e-6);
  EXPECT_EQ(tree.ToString(t), "x <= 4: A (4/0)\nx > 4: B (4/0)\n");
  // New values: 4.5 goes right, 3.9 left.
  t.features[0].numbers = {4.5, 3.9};
  t.features[1].codes = {0, 0};
  t.labels = {1, 0};
  EXPECT_EQ(tree.ErrorRate(t, {0, 1}), 0.0);
}

TEST(DecisionTreeTest, PessimisticErrorsMatchQuinlan) {
  // Quinlan 1993 §4.2: U25%(0,6) = 0.206, U25%(0,9) = 0.143, U25%(0,1) = 0.750 (for no errors
  // U = 1 - CF^(1/N) exactly).
  EXPECT_NEAR(PessimisticErrors(6, 0, 0.25) / 6, 0.206, 5e-4);
  EXPECT_NEAR(PessimisticErrors(9, 0, 0.25) / 9, 0.143, 5e-4);
  EXPECT_NEAR(PessimisticErrors(1, 0, 0.25), 0.750, 1e-12);
  // U25%(1,16): Quinlan prints 0.157 (C4.5 approximates the binomial); the exact limit, the p
  // with P[X <= 1 | 16, p] = 0.25, is 0.1596.
  const double u = PessimisticErrors(16, 1, 0.25) / 16;
  EXPECT_NEAR(u, 0.1596, 1e-4);
  EXPECT_NEAR(std::pow(1 - u, 16) + 16 * u * std::pow(1 - u, 15), 0.25, 1e-9);
  EXPECT_EQ(PessimisticErrors(0, 0, 0.25), 0.0);
  EXPECT_EQ(PessimisticErrors(5, 5, 0.25), 5.0);
}

// Quinlan's pruning example: 16 records, a split into 6 + 9 + 1 pure branches that corrects a
// single error. As a subtree 6*0.206 + 9*0.143 + 1*0.750 = 3.273 estimated errors, as a leaf
// 16*0.1596 = 2.554 (Quinlan: 2.512): the subtree is replaced by a leaf.
TEST(DecisionTreeTest, PruningCollapsesASubtreeThatDoesNotPay) {
  ClassificationTable t;
  std::vector<std::string> v, labels;
  for (int i = 0; i < 6; ++i) v.push_back("a"), labels.push_back("+");
  for (int i = 0; i < 9; ++i) v.push_back("b"), labels.push_back("+");
  v.push_back("c"), labels.push_back("-");
  AddCategorical(&t, "v", v);
  SetLabels(&t, labels);

  DecisionTreeOptions unpruned;
  unpruned.prune = false;
  ASSERT_OK_AND_ASSIGN(DecisionTree grown, DecisionTree::Train(t, AllRows(t), unpruned));
  ASSERT_EQ(grown.nodes()[0].feature, 0);
  EXPECT_EQ(grown.num_leaves(), 3u);
  // Gain H(1/16) = 0.337290 (all branches pure); split information of 6/9/1: 1.247556.
  const double split_info = -(6.0 / 16) * std::log2(6.0 / 16) - (9.0 / 16) * std::log2(9.0 / 16) -
                            (1.0 / 16) * std::log2(1.0 / 16);
  EXPECT_NEAR(split_info, 1.247556, 1e-6);
  EXPECT_NEAR(grown.nodes()[0].gain, 0.337290, 1e-6);
  EXPECT_NEAR(grown.nodes()[0].gain_ratio, 0.337290 / split_info, 1e-6);
  EXPECT_EQ(grown.ErrorRate(t, AllRows(t)), 0.0);

  ASSERT_OK_AND_ASSIGN(DecisionTree pruned, DecisionTree::Train(t, AllRows(t)));
  EXPECT_EQ(pruned.nodes().size(), 1u);
  EXPECT_EQ(pruned.ToString(t), "+ (16/1)\n");
  EXPECT_NEAR(pruned.ErrorRate(t, AllRows(t)), 1.0 / 16, 1e-12);
}

TEST(DecisionTreeTest, SplitNeedsTwoBranchesOfMinimumSize) {
  // Only the lone "c" record differs: a split would leave one branch of size >= 2.
  ClassificationTable t;
  AddCategorical(&t, "v", {"a", "a", "a", "c"});
  SetLabels(&t, {"+", "+", "-", "-"});
  ASSERT_OK_AND_ASSIGN(DecisionTree tree, DecisionTree::Train(t, AllRows(t), {.prune = false}));
  EXPECT_EQ(tree.nodes().size(), 1u);
  // With min_objects = 1 the split is allowed (and corrects the "c" record).
  ASSERT_OK_AND_ASSIGN(DecisionTree loose,
                       DecisionTree::Train(t, AllRows(t), {.min_objects = 1, .prune = false}));
  EXPECT_EQ(loose.nodes()[0].feature, 0);
}

TEST(DecisionTreeTest, NoFeaturesPredictsTheMajority) {
  ClassificationTable t;
  SetLabels(&t, {"x", "y", "y"});
  ASSERT_OK_AND_ASSIGN(DecisionTree tree, DecisionTree::Train(t, AllRows(t)));
  EXPECT_EQ(tree.ToString(t), "y (3/1)\n");
  EXPECT_NEAR(tree.ErrorRate(t, AllRows(t)), 1.0 / 3, 1e-12);
}

TEST(DecisionTreeTest, RejectsBadInput) {
  ClassificationTable t;
  SetLabels(&t, {"x", "y"});
  EXPECT_FALSE(DecisionTree::Train(t, {}).ok());
  EXPECT_FALSE(DecisionTree::Train(t, {5}).ok());
  AddCategorical(&t, "short", {"a"});
  EXPECT_FALSE(DecisionTree::Train(t, {0, 1}).ok());
}

}  // namespace
}  // namespace fedanon::evaluation
