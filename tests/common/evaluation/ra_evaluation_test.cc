// yang2010 §7 evaluation pieces on tables small enough to work out by hand: COUNT answers, the
// Eq. (13) estimate over given Anatomy groups, Apriori's quasi-sensitive rules at given
// thresholds and their recovery; Anatomy's grouping is l-diverse and keeps every QID row and the
// multiset of sensitive values; the random queries are seeded and well-formed.
#include "common/evaluation/ra_evaluation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;

// Columns A (a1, a2), B (b1, b2), S (s1, s2, s3); rows as strings "a1 b1 s1" -> codes.
CodedTable Table(const std::vector<std::vector<uint32_t>>& rows) {
  CodedTable t;
  t.names = {"A", "B", "S"};
  t.values = {{"a1", "a2"}, {"b1", "b2"}, {"s1", "s2", "s3"}};
  t.codes.resize(3);
  for (const auto& r : rows) {
    for (size_t c = 0; c < 3; ++c) t.codes[c].push_back(r[c]);
  }
  return t;
}

// r0 a1 b1 s1 | r1 a1 b2 s2 | r2 a2 b1 s1 | r3 a2 b2 s3 | r4 a1 b1 s2 | r5 a2 b1 s3
CodedTable SixRecords() {
  return Table({{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {1, 1, 2}, {0, 0, 1}, {1, 0, 2}});
}

CountQuery Query(std::vector<size_t> columns, std::vector<std::vector<bool>> accepted) {
  return CountQuery{std::move(columns), std::move(accepted)};
}

TEST(CountQueryTest, AnswersByHand) {
  const CodedTable t = SixRecords();
  // A IN {a1} AND S IN {s1, s2}: r0, r1, r4.
  EXPECT_EQ(AnswerCount(t, Query({0, 2}, {{true, false}, {true, true, false}})), 3u);
  // A IN {a2} AND B IN {b1} AND S IN {s3}: r5.
  EXPECT_EQ(AnswerCount(t, Query({0, 1, 2}, {{false, true}, {true, false}, {false, false, true}})),
            1u);
  // B IN {b2} AND S IN {s1}: none.
  EXPECT_EQ(AnswerCount(t, Query({1, 2}, {{false, true}, {true, false, false}})), 0u);
}

TEST(AnatomyEstimateTest, Equation13ByHand) {
  const CodedTable t = SixRecords();
  AnatomyGroups g;
  g.l = 3;
  g.groups = 2;
  g.group_of = {0, 0, 1, 0, 1, 1};  // G0 = {r0, r1, r3}, G1 = {r2, r4, r5}
  // A IN {a1}, S IN {s1, s2}: G0 has 2 of 3 in R_s and 2 QID matches (r0, r1): 2 * 2 / 3;
  // G1 has 2 in R_s and 1 match (r4): 2 * 1 / 3. Sum 2 (the truth is 3).
  const CountQuery q1 = Query({0, 2}, {{true, false}, {true, true, false}});
  EXPECT_NEAR(AnatomyEstimate(t, g, q1), 2.0, 1e-12);
  // A IN {a2}, B IN {b1}, S IN {s3}: G0 no match; G1 matches r2, r5 and has one s3: 1 * 2 / 3.
  const CountQuery q2 = Query({0, 1, 2}, {{false, true}, {true, false}, {false, false, true}});
  EXPECT_NEAR(AnatomyEstimate(t, g, q2), 2.0 / 3.0, 1e-12);
  // The estimate sees only each group's multiset of sensitive values, not who holds which.
  const CodedTable permuted = PermuteWithinGroups(t, g, 7);
  EXPECT_NEAR(AnatomyEstimate(permuted, g, q1), 2.0, 1e-12);
  EXPECT_NEAR(AnatomyEstimate(permuted, g, q2), 2.0 / 3.0, 1e-12);
}

// Eq. (12)'s baseline by hand: one QID A with four values, sensitive S with two, 8 records
//   A: a0 a0 a1 a1 a2 a2 a3 a3,  S: s0 s0 s1 s1 s0 s1 s0 s1   (whole table: entropy ln 2).
// l = 2: the median cut of A gives {a0, a1} (s0 s0 s1 s1, 2-diverse) and {a2, a3}; {a0, a1}
// cannot be cut again ({a0} holds s0 s0), {a2, a3} can: groups {a0, a1}, {a2}, {a3}.
// Query A IN {a0} AND S IN {s0} (truth 2): the {a0, a1} group publishes 2 records with s0 and
// the value set {a0, a1}, so it contributes 2 * 1/2 = 1; the others 0: estimate 1.
// Query A IN {a2, a3} AND S IN {s1} (truth 2): 1 * 1 + 1 * 1 = 2.
TEST(LDiversityEstimateTest, Equation12ByHand) {
  CodedTable t;
  t.names = {"A", "S"};
  t.values = {{"a0", "a1", "a2", "a3"}, {"s0", "s1"}};
  t.codes = {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 1, 1, 0, 1, 0, 1}};
  EXPECT_EQ(LargestEntropyL(t), 2);
  ASSERT_OK_AND_ASSIGN(LDiverseGroups g, EntropyLDiverseGrouping(t, 2));
  EXPECT_EQ(g.groups, 3u);
  EXPECT_EQ(g.group_of[0], g.group_of[3]);
  EXPECT_NE(g.group_of[4], g.group_of[6]);
  EXPECT_NE(g.group_of[0], g.group_of[4]);
  EXPECT_DOUBLE_EQ(
      LDiversityEstimate(t, g, Query({0, 1}, {{true, false, false, false}, {true, false}})), 1.0);
  EXPECT_DOUBLE_EQ(
      LDiversityEstimate(t, g, Query({0, 1}, {{false, false, true, true}, {false, true}})), 2.0);
  EXPECT_THAT(EntropyLDiverseGrouping(t, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "the largest l is 2"));
}

std::string Describe(const CodedTable& t, const QuasiSensitiveRule& r) {
  std::string out;
  for (const auto& [column, code] : r.antecedent) out += t.values[column][code] + " ";
  return out + "-> " + t.values[t.sensitive()][r.consequent];
}

std::vector<std::string> Describe(const CodedTable& t, const std::vector<QuasiSensitiveRule>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(Describe(t, r));
  return out;
}

TEST(AprioriTest, QuasiSensitiveRulesByHand) {
  const CodedTable t = SixRecords();
  // Support >= 0.3 * 6 = 1.8 records: pairs with two records are a1 b1, a2 b1, a1 s2, a2 s3,
  // b1 s1; no triple. Rules: a1 -> s2 (2/3), a2 -> s3 (2/3), b1 -> s1 (2/4).
  std::vector<QuasiSensitiveRule> rules = QuasiSensitiveRules(t, {0.3, 0.4});
  EXPECT_THAT(Describe(t, rules), ::testing::ElementsAre("a1 -> s2", "a2 -> s3", "b1 -> s1"));
  EXPECT_EQ(rules[0].support, 2u);
  EXPECT_NEAR(rules[0].confidence, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(rules[2].confidence, 0.5, 1e-12);
  // Confidence 0.55 drops b1 -> s1; support 0.4 (2.4 records) drops everything.
  EXPECT_THAT(Describe(t, QuasiSensitiveRules(t, {0.3, 0.55})),
              ::testing::ElementsAre("a1 -> s2", "a2 -> s3"));
  EXPECT_TRUE(QuasiSensitiveRules(t, {0.4, 0.1}).empty());
}

TEST(AprioriTest, LongerAntecedentsAndRecoveryByLength) {
  // a1 b1 s1 three times, a2 b2 s2 once; support >= 2: a1, b1, s1 and all their combinations.
  const CodedTable t = Table({{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}});
  const std::vector<QuasiSensitiveRule> rules = QuasiSensitiveRules(t, {0.5, 0.5});
  EXPECT_THAT(Describe(t, rules), ::testing::ElementsAre("a1 -> s1", "a1 b1 -> s1", "b1 -> s1"));
  // A release where two a1 b1 records had one QID value replaced each.
  const CodedTable released = Table({{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 1}});
  // Released: a1 -> s1 (2/2), b1 -> s1 (2/2), a1 b1 only once: no length-2 rule.
  const std::vector<QuasiSensitiveRule> released_rules = QuasiSensitiveRules(released, {0.5, 0.5});
  EXPECT_THAT(Describe(released, released_rules), ::testing::ElementsAre("a1 -> s1", "b1 -> s1"));
  const AssociationRecovery r = CompareAssociations(rules, released_rules, 2);
  EXPECT_EQ(r.original, (std::vector<uint64_t>{3, 2, 1}));
  EXPECT_EQ(r.recovered, (std::vector<uint64_t>{2, 2, 0}));
  EXPECT_EQ(r.released, 2u);
}

TEST(AprioriTest, RecoveryOfARandomizedRecord) {
  const CodedTable d = SixRecords();
  CodedTable released = d;
  released.codes[0][4] = 1;  // r4: a1 -> a2
  // D' rules at (0.3, 0.4): a1 now holds s1, s2 (a1 -> s2 has one record), a2 holds s1, s3, s2,
  // s3 (a2 -> s3, 2/4), b1 unchanged (b1 -> s1, 2/4).
  const auto released_rules = QuasiSensitiveRules(released, {0.3, 0.4});
  EXPECT_THAT(Describe(released, released_rules), ::testing::ElementsAre("a2 -> s3", "b1 -> s1"));
  const AssociationRecovery r =
      CompareAssociations(QuasiSensitiveRules(d, {0.3, 0.4}), released_rules, 2);
  EXPECT_EQ(r.recovered[0], 2u);
  EXPECT_EQ(r.original[0], 3u);
  // And the query A IN {a1} AND S IN {s1, s2} now answers 2 instead of 3.
  EXPECT_EQ(AnswerCount(released, Query({0, 2}, {{true, false}, {true, true, false}})), 2u);
}

// A table of n records with QIDs A (5 values), B (7 values) and a sensitive attribute whose value
// v has weight (v + 1).
CodedTable RandomTable(size_t n, size_t sensitive_values, uint64_t seed) {
  CodedTable t;
  t.names = {"A", "B", "S"};
  t.values.resize(3);
  for (int v = 0; v < 5; ++v) t.values[0].push_back("a" + std::to_string(v));
  for (int v = 0; v < 7; ++v) t.values[1].push_back("b" + std::to_string(v));
  for (size_t v = 0; v < sensitive_values; ++v) t.values[2].push_back("s" + std::to_string(v));
  t.codes.resize(3);
  std::mt19937_64 g(seed);
  const size_t total = sensitive_values * (sensitive_values + 1) / 2;
  for (size_t r = 0; r < n; ++r) {
    t.codes[0].push_back(static_cast<uint32_t>(g() % 5));
    t.codes[1].push_back(static_cast<uint32_t>(g() % 7));
    uint64_t x = g() % total;
    uint32_t v = 0;
    while (x >= v + 1) x -= ++v;
    t.codes[2].push_back(v);
  }
  return t;
}

TEST(AnatomyTest, GroupsAreLDiverseAndThePermutationKeepsRowsAndValues) {
  const CodedTable t = RandomTable(1000, 10, 3);
  const int largest = LargestAnatomyL(t);
  ASSERT_GE(largest, 4);
  for (int l = 2; l <= largest; ++l) {
    ASSERT_OK_AND_ASSIGN(const AnatomyGroups g, AnatomyGrouping(t, l, 11));
    ASSERT_EQ(g.group_of.size(), t.records());
    std::vector<std::multiset<uint32_t>> values(g.groups);
    for (size_t r = 0; r < t.records(); ++r) {
      ASSERT_LT(g.group_of[r], g.groups);
      values[g.group_of[r]].insert(t.codes[2][r]);
    }
    for (const auto& v : values) {
      // l or l + 1 records, pairwise distinct sensitive values.
      EXPECT_GE(v.size(), static_cast<size_t>(l));
      EXPECT_LE(v.size(), static_cast<size_t>(l) + 1);
      EXPECT_EQ(std::set<uint32_t>(v.begin(), v.end()).size(), v.size()) << "l = " << l;
    }
    const CodedTable p = PermuteWithinGroups(t, g, 5);
    EXPECT_EQ(p.codes[0], t.codes[0]);
    EXPECT_EQ(p.codes[1], t.codes[1]);
    std::vector<std::multiset<uint32_t>> permuted(g.groups);
    for (size_t r = 0; r < t.records(); ++r) permuted[g.group_of[r]].insert(p.codes[2][r]);
    EXPECT_EQ(permuted, values);
    if (l == 2) {
      EXPECT_NE(p.codes[2], t.codes[2]);  // something did move
    }
  }
}

TEST(AnatomyTest, SixRecordsMakeTwoGroupsOfThree) {
  const CodedTable t = SixRecords();
  EXPECT_EQ(LargestAnatomyL(t), 3);
  ASSERT_OK_AND_ASSIGN(const AnatomyGroups g, AnatomyGrouping(t, 3, 1));
  EXPECT_EQ(g.groups, 2u);
  std::vector<std::set<uint32_t>> values(2);
  for (size_t r = 0; r < 6; ++r) values[g.group_of[r]].insert(t.codes[2][r]);
  EXPECT_EQ(values[0], (std::set<uint32_t>{0, 1, 2}));
  EXPECT_EQ(values[1], (std::set<uint32_t>{0, 1, 2}));
}

TEST(AnatomyTest, RefusesAnIneligibleL) {
  const CodedTable t = SixRecords();  // every value in 2 of 6 records: l <= 3
  EXPECT_THAT(AnatomyGrouping(t, 4, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest eligible l here is 3"));
  EXPECT_THAT(AnatomyGrouping(t, 1, 1), StatusIs(absl::StatusCode::kInvalidArgument, "l >= 2"));
}

TEST(RandomCountQueriesTest, SeededAndWellFormed) {
  const CodedTable t = RandomTable(300, 4, 9);
  ASSERT_OK_AND_ASSIGN(const auto a, RandomCountQueries(t, 2, 50, 4));
  ASSERT_OK_AND_ASSIGN(const auto b, RandomCountQueries(t, 2, 50, 4));
  ASSERT_OK_AND_ASSIGN(const auto c, RandomCountQueries(t, 2, 50, 5));
  ASSERT_EQ(a.size(), 50u);
  bool differs = false;
  std::set<size_t> sizes;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].columns, b[i].columns);
    EXPECT_EQ(a[i].accepted, b[i].accepted);
    differs = differs || a[i].accepted != c[i].accepted;
    EXPECT_EQ(a[i].columns, (std::vector<size_t>{0, 1, 2}));  // both QIDs, then S
    for (size_t k = 0; k < 3; ++k) {
      const size_t n = std::count(a[i].accepted[k].begin(), a[i].accepted[k].end(), true);
      EXPECT_GE(n, 1u);
      sizes.insert(n);
    }
  }
  EXPECT_TRUE(differs);
  EXPECT_GT(sizes.size(), 3u);  // subset sizes vary
  ASSERT_OK_AND_ASSIGN(const auto one, RandomCountQueries(t, 1, 200, 4));
  std::set<size_t> first;
  for (const auto& q : one) {
    ASSERT_EQ(q.columns.size(), 2u);
    first.insert(q.columns[0]);
  }
  EXPECT_EQ(first, (std::set<size_t>{0, 1}));  // both QIDs get drawn
  EXPECT_THAT(RandomCountQueries(t, 3, 1, 1), StatusIs(absl::StatusCode::kInvalidArgument, "2"));
}

TEST(EvaluateRandomizationTest, AnUnchangedTableHasNoErrorAndKeepsEveryRule) {
  const CodedTable t = RandomTable(2000, 6, 21);
  RaEvaluationOptions o;
  o.queries = 100;
  o.anatomy_l = 3;
  o.apriori = {0.02, 0.15};
  ASSERT_OK_AND_ASSIGN(const RaEvaluation e, EvaluateRandomization(t, t, o));
  ASSERT_EQ(e.query_errors.size(), 2u);  // j = 1..min(8, 2)
  for (const QueryErrorRow& r : e.query_errors) {
    EXPECT_EQ(r.queries, 100u);
    EXPECT_EQ(r.randomized_error, 0.0);
    EXPECT_EQ(r.randomized_median, 0.0);
    EXPECT_GT(r.anatomy_error, 0.0);  // Eq. (13) estimates
  }
  ASSERT_GT(e.randomized_associations.original[0], 0u);
  EXPECT_EQ(e.randomized_associations.recovered, e.randomized_associations.original);
  EXPECT_THAT(RaEvaluationToText(e, o), HasSubstr("Anatomy baseline: l = 3"));
  // A table that is not a release of the other.
  const CodedTable other = RandomTable(1999, 6, 21);
  EXPECT_THAT(EvaluateRandomization(t, other, o),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not match"));
}

}  // namespace
}  // namespace fedanon::evaluation
