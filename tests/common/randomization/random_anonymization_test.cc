// Random anonymization (yang2010): the example distributions of §3 (Fig. 1) and the probabilistic
// anonymity of §4.1/§6 as known answers, Proposition 7's optimum, and statistical tests of the
// randomization itself (which attributes are replaced, and that every attribute's distribution is
// preserved) on generated tables with fixed seeds.
#include "common/randomization/random_anonymization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/randomization/random_source.h"
#include "tests/support/status_matchers.h"

namespace fedanon::randomization {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Pointwise;

// Dictionary-encodes `values` (one per record) in order of first appearance.
CategoricalColumn Column(const std::string& name, const std::vector<std::string>& values) {
  CategoricalColumn c;
  c.name = name;
  absl::flat_hash_map<std::string, uint32_t> codes;
  for (const std::string& v : values) {
    auto [it, inserted] = codes.try_emplace(v, static_cast<uint32_t>(c.values.size()));
    if (inserted) c.values.push_back(v);
    c.codes.push_back(it->second);
  }
  return c;
}

// The QID of the paper's Fig. 1 (10 records): only its distributions are printed in the text
// (§3, Dist1..Dist3), and they are all Pa depends on, so the records pair the values in an
// arbitrary order with those counts:
//   Age [20-30] 1/10, [30-40] 4/10, [40-50] 1/10, [50-60] 3/10, [60-70] 1/10
//   Job Doctor 1/10, Clerk 4/10, Trader 2/10, Engineer 1/10, Banker 2/10
//   Country USA 6/10, Germany 1/10, UK 2/10, India 1/10
std::vector<CategoricalColumn> Fig1Qid() {
  return {Column("Age", {"[20-30]", "[30-40]", "[30-40]", "[30-40]", "[30-40]", "[40-50]",
                         "[50-60]", "[50-60]", "[50-60]", "[60-70]"}),
          Column("Job", {"Doctor", "Clerk", "Clerk", "Clerk", "Clerk", "Trader", "Trader",
                         "Engineer", "Banker", "Banker"}),
          Column("Country",
                 {"USA", "USA", "USA", "USA", "USA", "USA", "Germany", "UK", "UK", "India"})};
}

std::vector<double> Frequencies(const CategoricalColumn& c) {
  std::vector<double> f;
  for (uint64_t n : ValueCounts(c)) f.push_back(static_cast<double>(n) / c.codes.size());
  return f;
}

TEST(RandomAnonymizationTest, Fig1DistributionsAsInSection3) {
  const std::vector<CategoricalColumn> qid = Fig1Qid();
  EXPECT_THAT(Frequencies(qid[0]), Pointwise(DoubleNear(1e-12), {0.1, 0.4, 0.1, 0.3, 0.1}));
  EXPECT_THAT(Frequencies(qid[1]), Pointwise(DoubleNear(1e-12), {0.1, 0.4, 0.2, 0.1, 0.2}));
  EXPECT_THAT(Frequencies(qid[2]), Pointwise(DoubleNear(1e-12), {0.6, 0.1, 0.2, 0.1}));
  // Entropy(Age) = -(3 * 0.1 ln 0.1 + 0.4 ln 0.4 + 0.3 ln 0.3).
  EXPECT_NEAR(Entropy(qid[0]),
              -(3 * 0.1 * std::log(0.1) + 0.4 * std::log(0.4) + 0.3 * std::log(0.3)), 1e-12);
}

// §6: "In Fig. 5, the probabilistic anonymity Pa(D') of the anonymized data set is about 11 by
// Proposition 7". Fig. 5 was made with p1 = p2 = p3 = 1/3 (§3), so Eq. (3) applies:
// ln Pa = ln 3 + (H_Age + H_Job + H_Country) / 3 with H = 1.41848, 1.47081, 1.08890 from the
// distributions above, i.e. Pa = 11.2986 (computed by hand from the printed fractions).
TEST(RandomAnonymizationTest, Fig5ProbabilisticAnonymityIsAbout11) {
  ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                       PlanRandomization(Fig1Qid(), 1, AttributeSelection::kUniform));
  EXPECT_THAT(plan.probabilities, ElementsAre(1.0 / 3, 1.0 / 3, 1.0 / 3));
  const double pa = ProbabilisticAnonymity(plan);
  EXPECT_NEAR(pa, 11.2986, 1e-4);
  EXPECT_EQ(std::lround(pa), 11);
  // Eq. (3): m times the geometric mean of the diversities e^Entropy.
  double product = 1;
  for (double h : plan.entropies) product *= std::exp(h);
  EXPECT_NEAR(pa, 3 * std::cbrt(product), 1e-9);
}

// Proposition 7: p_i proportional to e^Entropy(Q_i) maximizes Pa; at the optimum Eq. (1) gives
// ln Pa = ln sum_j e^H_j, i.e. Pa = 4.1313 + 4.3533 + 2.9710 = 11.4546 for Fig. 1. No point of
// a grid over the probability simplex does better.
TEST(RandomAnonymizationTest, EntropyWeightsMaximizeProbabilisticAnonymity) {
  ASSERT_OK_AND_ASSIGN(RandomizationPlan best,
                       PlanRandomization(Fig1Qid(), 1, AttributeSelection::kEntropyWeighted));
  EXPECT_THAT(best.probabilities, Pointwise(DoubleNear(1e-4), {0.3606, 0.3800, 0.2594}));
  const double best_pa = ProbabilisticAnonymity(best);
  double sum_diversities = 0;
  for (double h : best.entropies) sum_diversities += std::exp(h);
  EXPECT_NEAR(best_pa, sum_diversities, 1e-9);
  EXPECT_NEAR(best_pa, 11.4546, 1e-4);
  RandomizationPlan other = best;
  for (int a = 0; a <= 100; ++a) {
    for (int b = 0; a + b <= 100; ++b) {
      other.probabilities = {a / 100.0, b / 100.0, (100 - a - b) / 100.0};
      EXPECT_LE(ProbabilisticAnonymity(other), best_pa + 1e-12) << a << " " << b;
    }
  }
}

// Algorithm 2 (our extension of Eq. (1), see the header): k = m randomizes every attribute, so
// Pa is the product of the diversities; k = 2 of 3 gives ln Pa = ln 3 + (2/3) sum H.
TEST(RandomAnonymizationTest, ProbabilisticAnonymityOfAlgorithm2) {
  ASSERT_OK_AND_ASSIGN(RandomizationPlan all,
                       PlanRandomization(Fig1Qid(), 3, AttributeSelection::kUniform));
  const double sum = all.entropies[0] + all.entropies[1] + all.entropies[2];
  EXPECT_NEAR(ProbabilisticAnonymity(all), std::exp(sum), 1e-9);
  ASSERT_OK_AND_ASSIGN(RandomizationPlan two,
                       PlanRandomization(Fig1Qid(), 2, AttributeSelection::kUniform));
  EXPECT_NEAR(ProbabilisticAnonymity(two), std::exp(std::log(3.0) + 2.0 / 3 * sum), 1e-9);
  EXPECT_THAT(two.probabilities, ElementsAre(2.0 / 3, 2.0 / 3, 2.0 / 3));
}

TEST(RandomAnonymizationTest, PlanRejectsParametersThePaperDoesNotDefine) {
  EXPECT_THAT(PlanRandomization(Fig1Qid(), 0, AttributeSelection::kUniform),
              StatusIs(absl::StatusCode::kInvalidArgument, "between 1 and"));
  EXPECT_THAT(PlanRandomization(Fig1Qid(), 4, AttributeSelection::kUniform),
              StatusIs(absl::StatusCode::kInvalidArgument, "(3), not 4"));
  EXPECT_THAT(PlanRandomization(Fig1Qid(), 2, AttributeSelection::kEntropyWeighted),
              StatusIs(absl::StatusCode::kInvalidArgument, "Algorithm 2"));
  EXPECT_THAT(PlanRandomization({}, 1, AttributeSelection::kUniform),
              StatusIs(absl::StatusCode::kInvalidArgument, "needs a QID attribute"));
  std::vector<CategoricalColumn> uneven = Fig1Qid();
  uneven[1].codes.pop_back();
  EXPECT_THAT(PlanRandomization(uneven, 1, AttributeSelection::kUniform),
              StatusIs(absl::StatusCode::kInvalidArgument, "'Job' has 9 records"));
  std::vector<CategoricalColumn> bad_code = Fig1Qid();
  bad_code[2].codes[0] = 9;
  EXPECT_THAT(PlanRandomization(bad_code, 1, AttributeSelection::kUniform),
              StatusIs(absl::StatusCode::kInvalidArgument, "outside its dictionary"));
}

// A table of `n` records whose column i draws its values with integer weights weights[i].
std::vector<CategoricalColumn> GeneratedTable(size_t n,
                                              const std::vector<std::vector<int>>& weights,
                                              uint64_t seed) {
  auto random = RandomSource::Seeded(seed);
  std::vector<CategoricalColumn> table;
  for (size_t i = 0; i < weights.size(); ++i) {
    CategoricalColumn c;
    c.name = "q" + std::to_string(i);
    int total = 0;
    for (size_t v = 0; v < weights[i].size(); ++v) {
      c.values.push_back("v" + std::to_string(v));
      total += weights[i][v];
    }
    for (size_t r = 0; r < n; ++r) {
      int u = static_cast<int>(random->Below(total));
      uint32_t v = 0;
      while (u >= weights[i][v]) u -= weights[i][v++];
      c.codes.push_back(v);
    }
    table.push_back(std::move(c));
  }
  return table;
}

// Skewed distributions with 4, 5 and 6 values (different entropies, so unequal p_i).
const std::vector<std::vector<int>> kSkewed = {
    {50, 30, 15, 5}, {1, 1, 1, 1, 1}, {40, 20, 20, 10, 6, 4}};

TEST(RandomAnonymizationTest, SameSeedSameResultOtherSeedOtherResult) {
  const auto table = GeneratedTable(2000, kSkewed, 1);
  for (int k : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                         PlanRandomization(table, k,
                                           k == 1 ? AttributeSelection::kEntropyWeighted
                                                  : AttributeSelection::kUniform));
    auto a = RandomSource::Seeded(99), b = RandomSource::Seeded(99), c = RandomSource::Seeded(100);
    ASSERT_OK_AND_ASSIGN(auto ra, Randomize(table, plan, *a));
    ASSERT_OK_AND_ASSIGN(auto rb, Randomize(table, plan, *b));
    ASSERT_OK_AND_ASSIGN(auto rc, Randomize(table, plan, *c));
    for (size_t i = 0; i < table.size(); ++i) {
      EXPECT_EQ(ra[i].codes, rb[i].codes);
      EXPECT_NE(ra[i].codes, rc[i].codes);
      EXPECT_EQ(ra[i].values, table[i].values);
      EXPECT_EQ(ra[i].name, table[i].name);
    }
  }
}

// Algorithm 1 changes at most one QID value per record, Algorithm 2 at most k.
TEST(RandomAnonymizationTest, AtMostKValuesChangePerRecord) {
  const auto table = GeneratedTable(3000, {{1, 1, 1}, {1, 1, 1, 1}, {1, 1}, {1, 1, 1, 1, 1}}, 2);
  for (int k = 1; k <= 4; ++k) {
    ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                         PlanRandomization(table, k, AttributeSelection::kUniform));
    auto random = RandomSource::Seeded(k);
    ASSERT_OK_AND_ASSIGN(auto out, Randomize(table, plan, *random));
    size_t most = 0;
    for (size_t r = 0; r < 3000; ++r) {
      size_t changed = 0;
      for (size_t i = 0; i < table.size(); ++i) changed += out[i].codes[r] != table[i].codes[r];
      most = std::max(most, changed);
    }
    EXPECT_LE(most, static_cast<size_t>(k));
    EXPECT_EQ(most, static_cast<size_t>(k)) << "3000 records and no record changed in k values";
  }
}

// Which attribute Algorithm 1 replaces: attribute i is replaced with probability p_i and then
// changes with probability 1 - sum_v f_v^2 (the draw differs from the old value), so every record
// falls into one of m + 1 outcomes (attribute i changed, or none) with known probabilities; a
// chi-square test with m = 3 degrees of freedom at p = 1e-6 (critical value 30.665).
TEST(RandomAnonymizationTest, Algorithm1ReplacesAttributesWithProbabilitiesOfProposition7) {
  constexpr size_t kRecords = 30000;
  const auto table = GeneratedTable(kRecords, kSkewed, 3);
  ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                       PlanRandomization(table, 1, AttributeSelection::kEntropyWeighted));
  auto random = RandomSource::Seeded(4);
  ASSERT_OK_AND_ASSIGN(auto out, Randomize(table, plan, *random));
  std::vector<double> expected(table.size() + 1, 0);
  expected.back() = kRecords;
  for (size_t i = 0; i < table.size(); ++i) {
    double collision = 0;
    for (double f : Frequencies(table[i])) collision += f * f;
    expected[i] = kRecords * plan.probabilities[i] * (1 - collision);
    expected.back() -= expected[i];
  }
  std::vector<double> observed(table.size() + 1, 0);
  for (size_t r = 0; r < kRecords; ++r) {
    size_t outcome = table.size();
    for (size_t i = 0; i < table.size(); ++i) {
      if (out[i].codes[r] != table[i].codes[r]) outcome = i;
    }
    ++observed[outcome];
  }
  double chi2 = 0;
  for (size_t o = 0; o < observed.size(); ++o) {
    chi2 += (observed[o] - expected[o]) * (observed[o] - expected[o]) / expected[o];
  }
  EXPECT_LT(chi2, 30.665);
}

// Marginals are preserved. For one attribute randomized with probability p per record, the change
// of the count vector of its values is a sum of independent per-record terms with mean 0 and
// covariance n p (2 - p) (diag(f) - f f^T) (derived in docs/random-anonymization.md), i.e. a
// multinomial covariance scaled by p (2 - p); so sum_v (count'_v - count_v)^2 / (count_v p (2-p))
// is asymptotically chi-square with J - 1 degrees of freedom. Pooled over 3 attributes
// (J = 4, 5, 6) and 30 seeds: 360 degrees of freedom, whose two-sided 1e-6 range is
// [246.52, 502.23]. The same statistic for a wrong randomization (uniform over the distinct values
// instead of the empirical distribution) must fall outside, so the test has power.
double MarginalStatistic(const std::vector<CategoricalColumn>& before,
                         const std::vector<CategoricalColumn>& after,
                         const RandomizationPlan& plan) {
  double chi2 = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const std::vector<uint64_t> c0 = ValueCounts(before[i]), c1 = ValueCounts(after[i]);
    const double p = plan.probabilities[i];
    for (size_t v = 0; v < c0.size(); ++v) {
      const double d = static_cast<double>(c1[v]) - static_cast<double>(c0[v]);
      chi2 += d * d / (static_cast<double>(c0[v]) * p * (2 - p));
    }
  }
  return chi2;
}

TEST(RandomAnonymizationTest, MarginalDistributionsArePreserved) {
  constexpr size_t kRecords = 20000;
  const auto table = GeneratedTable(kRecords, kSkewed, 5);
  for (int k : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                         PlanRandomization(table, k,
                                           k == 1 ? AttributeSelection::kEntropyWeighted
                                                  : AttributeSelection::kUniform));
    double pooled = 0, wrong = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      auto random = RandomSource::Seeded(seed);
      ASSERT_OK_AND_ASSIGN(auto out, Randomize(table, plan, *random));
      pooled += MarginalStatistic(table, out, plan);
      // The wrong randomization: same records changed, values uniform over the dictionary.
      std::vector<CategoricalColumn> uniform = table;
      for (size_t i = 0; i < table.size(); ++i) {
        for (size_t r = 0; r < kRecords; ++r) {
          if (out[i].codes[r] != table[i].codes[r]) {
            uniform[i].codes[r] = static_cast<uint32_t>(random->Below(table[i].values.size()));
          }
        }
      }
      wrong += MarginalStatistic(table, uniform, plan);
    }
    EXPECT_GT(pooled, 246.52) << "k = " << k;
    EXPECT_LT(pooled, 502.23) << "k = " << k;
    EXPECT_GT(wrong, 502.23) << "k = " << k << ": the test cannot tell a wrong distribution";
  }
}

TEST(RandomAnonymizationTest, EmptyTableIsRandomizedToAnEmptyTable) {
  std::vector<CategoricalColumn> empty = {Column("a", {}), Column("b", {})};
  ASSERT_OK_AND_ASSIGN(RandomizationPlan plan,
                       PlanRandomization(empty, 1, AttributeSelection::kEntropyWeighted));
  EXPECT_NEAR(ProbabilisticAnonymity(plan), 2.0, 1e-12);  // two zero-entropy attributes
  auto random = RandomSource::Seeded(1);
  ASSERT_OK_AND_ASSIGN(auto out, Randomize(empty, plan, *random));
  EXPECT_TRUE(out[0].codes.empty());
}

}  // namespace
}  // namespace fedanon::randomization
