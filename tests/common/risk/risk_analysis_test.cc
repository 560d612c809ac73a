// Re-identification risk of small tables whose figures follow by hand (common/risk/
// risk_analysis.h), and the reading of QID columns from CSV (risk_table.h): missing values,
// released values compared as written, errors by file and line.
#include "common/risk/risk_analysis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/risk/risk_table.h"
#include "common/risk/risk_text.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::risk {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

// 10 records on (age, zip): (30, A) x3, (30, B) x2, (40, A) x1, (40, B) x4. Classes of sizes
// 3, 2, 1, 4.
QidCodes TenRecords() {
  QidCodes t;
  t.names = {"age", "zip"};
  t.columns = {{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {0, 0, 0, 1, 1, 0, 1, 1, 1, 1}};
  t.records = 10;
  return t;
}

const fedanon::v1::QidCombinationRisk* Find(const fedanon::v1::RiskSummary& s,
                                            const std::vector<std::string>& attributes) {
  for (const auto& c : s.combinations()) {
    if (std::vector<std::string>(c.attributes().begin(), c.attributes().end()) == attributes) {
      return &c;
    }
  }
  return nullptr;
}

// Prosecutor: 1 / class size per record. Highest 1/1 = 1; success rate = classes / records =
// 4/10; with threshold 0.3 the records of classes with 1/s > 0.3 (s <= 3) are at risk: 1 + 2 + 3
// = 6 of 10. Sample uniques 1 (10%). Distinction 4/10; separation: pairs within a class
// 3 + 1 + 0 + 6 = 10 of 45, so 35/45.
// age alone: classes 5, 5 -> distinction 2/10, separation 1 - 20/45; zip alone: 4, 6 ->
// 1 - (6 + 15)/45 = 24/45.
TEST(RiskAnalysisTest, HandWorkedTable) {
  fedanon::v1::RiskOptions options;
  options.set_threshold(0.3);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s, AnalyzeRisk(TenRecords(), options, "t"));
  EXPECT_EQ(s.records(), 10u);
  EXPECT_EQ(s.classes(), 4u);
  EXPECT_EQ(s.smallest_class(), 1u);
  EXPECT_DOUBLE_EQ(s.average_class_size(), 2.5);
  EXPECT_DOUBLE_EQ(s.prosecutor().highest(), 1);
  EXPECT_DOUBLE_EQ(s.prosecutor().average(), 0.4);
  EXPECT_DOUBLE_EQ(s.prosecutor().records_at_risk(), 0.6);
  EXPECT_EQ(s.prosecutor().records_at_risk_count(), 6u);
  EXPECT_DOUBLE_EQ(s.journalist().records_at_risk(), 0.6);
  EXPECT_DOUBLE_EQ(s.marketer().average(), 0.4);
  EXPECT_EQ(s.sample_uniques(), 1u);
  EXPECT_DOUBLE_EQ(s.sample_uniques_fraction(), 0.1);
  EXPECT_EQ(s.population_size(), 0);  // no population given: no model
  EXPECT_EQ(s.population_size(), 0);
  EXPECT_TRUE(s.uniqueness().empty());
  ASSERT_EQ(s.combinations_size(), 3);  // age, zip, {age, zip}
  const auto* both = Find(s, {"age", "zip"});
  ASSERT_NE(both, nullptr);
  EXPECT_DOUBLE_EQ(both->distinction(), 0.4);
  EXPECT_NEAR(both->separation(), 35.0 / 45, 1e-15);
  EXPECT_EQ(both->uniques(), 1u);
  const auto* age = Find(s, {"age"});
  ASSERT_NE(age, nullptr);
  EXPECT_DOUBLE_EQ(age->distinction(), 0.2);
  EXPECT_NEAR(age->separation(), 25.0 / 45, 1e-15);
  EXPECT_EQ(age->smallest_class(), 5u);
  const auto* zip = Find(s, {"zip"});
  ASSERT_NE(zip, nullptr);
  EXPECT_NEAR(zip->separation(), 24.0 / 45, 1e-15);
  EXPECT_EQ(s.class_size_histogram().at(4), 1u);
}

// "Above the threshold" is strict, as in ARX: with threshold 0.5 a class of 2 (risk exactly 0.5)
// is not at risk, only the unique record is.
TEST(RiskAnalysisTest, ThresholdIsStrict) {
  fedanon::v1::RiskOptions options;
  options.set_threshold(0.5);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s, AnalyzeRisk(TenRecords(), options, "t"));
  EXPECT_DOUBLE_EQ(s.prosecutor().records_at_risk(), 0.1);
  // Default threshold 0.2: every class is smaller than 5.
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary d, AnalyzeRisk(TenRecords(), {}, "t"));
  EXPECT_DOUBLE_EQ(d.threshold(), kDefaultRiskThreshold);
  EXPECT_DOUBLE_EQ(d.prosecutor().records_at_risk(), 1);
}

// With a population the four models are reported; sampling fraction 1/2 of 10 records is a
// population of 20. The table as its whole population keeps its one unique.
TEST(RiskAnalysisTest, PopulationInputs) {
  fedanon::v1::RiskOptions options;
  options.set_sampling_fraction(0.5);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s, AnalyzeRisk(TenRecords(), options, "t"));
  EXPECT_DOUBLE_EQ(s.population_size(), 20);
  ASSERT_EQ(s.population_size(), 20);
  ASSERT_EQ(s.uniqueness_size(), 4);
  EXPECT_EQ(s.uniqueness(0).model(), "pitman");
  EXPECT_EQ(s.uniqueness(3).model(), "dankar");
  EXPECT_FALSE(s.uniqueness(3).chosen_model().empty());
  // Zayatz by hand for sizes 1, 2, 3, 4, N = 20, n = 10: P(X=1 | s) = s (10/20)
  // prod_{i<s} (11 - i)/(20 - i): 1/2, 2 * 1/2 * 10/19 = 10/19, 3/2 * 10/19 * 9/18 = 15/38,
  // 2 * 10/19 * 9/18 * 8/17 = 80/323. share = (1/2) / (1/2 + 10/19 + 15/38 + 80/323);
  // uniques = share / (1/2).
  const double share = 0.5 / (0.5 + 10.0 / 19 + 15.0 / 38 + 80.0 / 323);
  EXPECT_NEAR(s.uniqueness(1).uniques(), share / 0.5, 1e-12);
  EXPECT_NEAR(s.uniqueness(1).fraction(), share / 0.5 / 20, 1e-12);

  fedanon::v1::RiskOptions whole;
  whole.set_population_size(10);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary w, AnalyzeRisk(TenRecords(), whole, "t"));
  for (const auto& p : w.uniqueness()) EXPECT_EQ(p.uniques(), 1) << p.model();

  fedanon::v1::RiskOptions small;
  small.set_population_size(9);
  EXPECT_THAT(AnalyzeRisk(TenRecords(), small, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, "smaller than the table"));
  fedanon::v1::RiskOptions both;
  both.set_population_size(100);
  both.set_sampling_fraction(0.1);
  EXPECT_THAT(AnalyzeRisk(TenRecords(), both, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, "not both"));
  fedanon::v1::RiskOptions bad;
  bad.set_sampling_fraction(1.5);
  EXPECT_THAT(AnalyzeRisk(TenRecords(), bad, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, "(0, 1]"));
}

// Nine QIDs: by default the combinations of at most 2 (9 + 36) and the whole set; asked for 3,
// also the 84 triples. The smallest class over the pairs is found with its attributes.
TEST(RiskAnalysisTest, CombinationLimits) {
  QidCodes t;
  t.records = 6;
  for (int a = 0; a < 9; ++a) {
    t.names.push_back("q" + std::to_string(a));
    // q0 tells every record apart; the others have two values, q1 and q2 together too.
    std::vector<uint32_t> column(6);
    for (int r = 0; r < 6; ++r) column[r] = a == 0 ? r : (a <= 2 ? r % 2 : (r < 3 ? 0 : 1));
    t.columns.push_back(column);
  }
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s, AnalyzeRisk(t, {}, "t"));
  EXPECT_EQ(s.max_combination_size(), 2u);
  EXPECT_EQ(s.combinations_size(), 9 + 36 + 1);
  EXPECT_EQ(s.combinations(0).attributes(0), "q0");  // the most distinguishing first
  EXPECT_DOUBLE_EQ(s.combinations(0).distinction(), 1);
  fedanon::v1::RiskOptions three;
  three.set_max_combination_size(3);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s3, AnalyzeRisk(t, three, "t"));
  EXPECT_EQ(s3.combinations_size(), 9 + 36 + 84 + 1);
  ASSERT_OK_AND_ASSIGN(const SmallestOverCombinations pairs, SmallestClassOverCombinations(t, 2));
  EXPECT_EQ(pairs.combinations, 36u);
  EXPECT_EQ(pairs.smallest, 1u);
  EXPECT_EQ(pairs.attributes, (std::vector<int>{0, 1}));
  EXPECT_EQ(SmallestClass(t, {1, 2}), 3u);
  EXPECT_EQ(SmallestClass(t, {3}), 3u);
}

TEST(RiskAnalysisTest, EmptyTableIsAnError) {
  QidCodes t;
  t.names = {"a"};
  t.columns = {{}};
  EXPECT_THAT(AnalyzeRisk(t, {}, "empty.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty.csv has no records"));
}

constexpr char kSpec[] = R"(name: t
attributes:
  - {name: age, role: qid, type: continuous}
  - {name: zip, role: qid}
  - {name: id, role: id}
  - {name: ok, role: class}
privacy: {model: lkc, L: 1, K: 2}
)";

// A raw table: rows with the missing token in any spec attribute (the class here) are left out;
// values are compared as written.
TEST(RiskTableTest, ReadsTheQidColumnsOfACsv) {
  const std::string dir = testing::FreshDir("risk_table");
  testing::WriteText(dir + "/t.csv",
                     "id,zip,age,ok,extra\n1,A,30,y,x\n2,A,30,n,x\n3,B,30,?,x\n4,B,40,y,x\n"
                     "5,B,40.0,y,x\n");
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(kSpec, "spec"));
  ASSERT_OK_AND_ASSIGN(const QidCodes t, ReadQidCodes(spec, dir + "/t.csv"));
  EXPECT_EQ(t.names, (std::vector<std::string>{"age", "zip"}));
  EXPECT_EQ(t.records, 4u);
  EXPECT_EQ(t.dropped, 1u);
  EXPECT_EQ(t.columns[0], (std::vector<uint32_t>{0, 0, 1, 2}));  // "40.0" differs from "40"
  EXPECT_EQ(t.columns[1], (std::vector<uint32_t>{0, 0, 1, 1}));

  // A release has no id column: the QIDs are enough.
  testing::WriteText(dir + "/r.csv", "zip,age,ok\nA,[30-40),y\nA,[30-40),n\n");
  ASSERT_OK_AND_ASSIGN(const QidCodes r, ReadQidCodes(spec, dir + "/r.csv"));
  EXPECT_EQ(r.records, 2u);

  testing::WriteText(dir + "/bad.csv", "zip,age,ok\nA,30,y\nB,40\n");
  EXPECT_THAT(ReadQidCodes(spec, dir + "/bad.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad.csv:3"));
  testing::WriteText(dir + "/noage.csv", "zip,ok\nA,y\n");
  EXPECT_THAT(ReadQidCodes(spec, dir + "/noage.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument, "QID attribute 'age' is not a column"));
  testing::WriteText(dir + "/header.csv", "zip,age,ok\n");
  EXPECT_THAT(ReadQidCodes(spec, dir + "/header.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument, "has no data rows"));
}

TEST(RiskTextTest, NamesEveryFigure) {
  fedanon::v1::RiskOptions options;
  options.set_population_size(1000);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::RiskSummary s,
                       AnalyzeRisk(TenRecords(), options, "t.csv"));
  const std::string text = RiskSummaryToText(s);
  EXPECT_THAT(text, HasSubstr("Re-identification risk of t.csv: 10 records"));
  EXPECT_THAT(text, HasSubstr("sample uniques             1 (10.00% of the records)"));
  EXPECT_THAT(text, HasSubstr("records at risk (> 0.2)"));
  EXPECT_THAT(text, HasSubstr("dankar"));
  EXPECT_THAT(text, HasSubstr("age, zip"));
}

}  // namespace
}  // namespace fedanon::risk
