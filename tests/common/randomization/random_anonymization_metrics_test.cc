// The reports of a random anonymization (yang2010 §4.2, §5.2): the Proposition 10 bound, the
// relative bias of supports, Definition 8's c-amplification and the variance of R(q), against
// answers worked out by hand on small tables and on the distributions of the paper's own Fig. 1
// example, the zero bias of length-1 combinations the paper states, and, on a generated table
// with associated attributes, the growth of the bias with the combination length (Proposition
// 12) and with k (§6).
#include "common/randomization/random_anonymization_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/randomization/random_source.h"
#include "tests/support/status_matchers.h"

namespace fedanon::randomization {
namespace {

using ::fedanon::testing::StatusIs;

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

// A: a a a b, B: x x y y (4 records).
std::vector<CategoricalColumn> Tiny(int copies = 1) {
  std::vector<std::string> a, b;
  for (int i = 0; i < copies; ++i) {
    a.insert(a.end(), {"a", "a", "a", "b"});
    b.insert(b.end(), {"x", "x", "y", "y"});
  }
  return {Column("A", a), Column("B", b)};
}

RandomizationPlan Plan(const std::vector<CategoricalColumn>& table, int k,
                       AttributeSelection selection = AttributeSelection::kUniform) {
  auto plan = PlanRandomization(table, k, selection);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// Proposition 10 by hand, p_i = 1/2, released table (b,x) (a,x) (a,y) (b,y) against D = Tiny():
//   (b,x): not in D, first term 0; second max(P(b), P(x)) / (P(b) + P(x)) = .5 / .75 = 2/3.
//   (a,x): supp .5 / min(supp(x) = .5, supp(a) = .75) = 1.
//   (a,y): supp .25 / min(supp(y) = .5, supp(a) = .75) = .5; second .75 / (.75 + .5) = .6.
//   (b,y): supp .25 / min(supp(y) = .5, supp(b) = .25) = 1.
// max 1, mean (2/3 + 1 + .6 + 1) / 4.
TEST(Proposition10BoundTest, WorkedExample) {
  const auto original = Tiny();
  const std::vector<CategoricalColumn> released = {{"A", original[0].values, {1, 0, 0, 1}},
                                                   {"B", original[1].values, {0, 0, 1, 1}}};
  ASSERT_OK_AND_ASSIGN(PriorKnowledgeBound bound,
                       Proposition10Bound(original, released, Plan(original, 1)));
  EXPECT_DOUBLE_EQ(bound.max, 1.0);
  EXPECT_NEAR(bound.mean, (2.0 / 3 + 1 + 0.6 + 1) / 4, 1e-12);
}

// With one QID attribute q' - q'_1 is empty (support 1): the bound is supp(q') / 1 or 1/1.
TEST(Proposition10BoundTest, SingleAttribute) {
  const std::vector<CategoricalColumn> original = {Column("A", {"a", "a", "a", "b"})};
  ASSERT_OK_AND_ASSIGN(PriorKnowledgeBound bound,
                       Proposition10Bound(original, original, Plan(original, 1)));
  EXPECT_DOUBLE_EQ(bound.max, 1.0);  // the second term is P/P = 1 for every record
}

TEST(Proposition10BoundTest, RejectsAlgorithm2AndMismatchedTables) {
  const auto original = Tiny();
  EXPECT_THAT(Proposition10Bound(original, original, Plan(original, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, "Algorithm 1"));
  std::vector<CategoricalColumn> shorter = original;
  shorter[0].codes.pop_back();
  shorter[1].codes.pop_back();
  EXPECT_THAT(Proposition10Bound(original, shorter, Plan(original, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not match"));
}

// Prop. 12 by hand on Tiny(), p_i = 1/2, length 2: B(q) = (1/2) |sum_i (1 / lift_i - 1)| with
// lift(q_i, q - q_i) = supp(q) / (supp(q - q_i) P(Q_i = q_i)):
//   (a,x) supp .5:  lifts .5/(.5*.75) = 4/3 and .5/(.75*.5) = 4/3 -> B = |(-.25 - .25)| / 2 = .25
//   (a,y) supp .25: lifts .25/(.5*.75) = 2/3 and .25/(.75*.5) = 2/3 -> B = (.5 + .5) / 2 = .5
//   (b,y) supp .25: lifts .25/(.5*.25) = 2 and .25/(.25*.5) = 2   -> B = |-.5 - .5| / 2 = .5
// Support-weighted: .5 * .25 + .25 * .5 + .25 * .5 = .375.
TEST(RelativeBiasTest, Proposition12WorkedExample) {
  const auto original = Tiny();
  ASSERT_OK_AND_ASSIGN(RelativeBias bias,
                       MeasureRelativeBias(original, original, Plan(original, 1), 2));
  EXPECT_NEAR(bias.predicted, 0.375, 1e-12);
  EXPECT_EQ(bias.measured, 0.0);  // D' = D here
  EXPECT_EQ(bias.attribute_sets, 1u);
  EXPECT_EQ(bias.combinations, 3u);
}

// The prediction is the expectation: averaged over seeds, the measured bias of a large copy of
// Tiny() (5000 copies, same supports so the same B = .375) comes out at .375. Per combination the
// count's standard deviation is at most sqrt(n) / 2 = 71 on counts >= 5000, so the mean of 20
// runs is within 0.02 of the expectation with overwhelming probability.
TEST(RelativeBiasTest, PredictionIsTheMeanOfTheMeasurement) {
  const auto original = Tiny(5000);
  const RandomizationPlan plan = Plan(original, 1);
  double sum = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto random = RandomSource::Seeded(seed);
    ASSERT_OK_AND_ASSIGN(auto released, Randomize(original, plan, *random));
    ASSERT_OK_AND_ASSIGN(RelativeBias bias, MeasureRelativeBias(original, released, plan, 2));
    EXPECT_NEAR(bias.predicted, 0.375, 1e-12);
    sum += bias.measured;
  }
  EXPECT_NEAR(sum / 20, 0.375, 0.02);
}

// A table of n records over m attributes with values 0..3, each equal to a shared latent value
// with probability 1/2 (else uniform): associated attributes, so lifts differ from 1. (With much
// stronger association the bias of long combinations saturates near its maximum.)
std::vector<CategoricalColumn> Associated(size_t n, size_t m, uint64_t seed) {
  auto random = RandomSource::Seeded(seed);
  std::vector<CategoricalColumn> table(m);
  for (size_t i = 0; i < m; ++i) {
    table[i].name = "q" + std::to_string(i);
    table[i].values = {"0", "1", "2", "3"};
  }
  for (size_t r = 0; r < n; ++r) {
    const uint32_t latent = static_cast<uint32_t>(random->Below(4));
    for (size_t i = 0; i < m; ++i) {
      table[i].codes.push_back(random->Below(2) == 0 ? latent
                                                     : static_cast<uint32_t>(random->Below(4)));
    }
  }
  return table;
}

// §5.2 / §8: "when association length is 1, our method delivers zero bias" (B = 0 for length 1,
// every plan); and with a single QID attribute (m = 1) every combination has length 1.
TEST(RelativeBiasTest, LengthOneHasZeroBias) {
  const auto table = Associated(2000, 4, 11);
  for (int k = 1; k <= 4; ++k) {
    ASSERT_OK_AND_ASSIGN(RelativeBias bias, MeasureRelativeBias(table, table, Plan(table, k), 1));
    EXPECT_NEAR(bias.predicted, 0.0, 1e-12) << "k = " << k;
  }
  ASSERT_OK_AND_ASSIGN(
      RelativeBias entropy,
      MeasureRelativeBias(table, table, Plan(table, 1, AttributeSelection::kEntropyWeighted), 1));
  EXPECT_NEAR(entropy.predicted, 0.0, 1e-12);
}

// Proposition 12: the relative bias grows with the length of the value combination. Measured on
// one randomization of a 20000-record table with 5 associated attributes: both the prediction and
// the measurement increase strictly from length 1 to 5. The measured mean |R(q)| also carries
// sampling noise (E|R| >= |E R|); for lengths 1-4, whose combinations hold 78 records or more on
// average, it stays within 0.02 of the prediction (observed: within 0.007), for length 5 (20 on
// average) it must at least not fall below it by more than that.
TEST(RelativeBiasTest, BiasGrowsWithCombinationLength) {
  const auto table = Associated(20000, 5, 12);
  const RandomizationPlan plan = Plan(table, 1);
  auto random = RandomSource::Seeded(13);
  ASSERT_OK_AND_ASSIGN(auto released, Randomize(table, plan, *random));
  std::vector<RelativeBias> biases;
  for (int length = 1; length <= 5; ++length) {
    ASSERT_OK_AND_ASSIGN(RelativeBias bias, MeasureRelativeBias(table, released, plan, length));
    biases.push_back(bias);
  }
  for (size_t l = 1; l < biases.size(); ++l) {
    EXPECT_GT(biases[l].predicted, biases[l - 1].predicted) << "length " << l + 1;
    EXPECT_GT(biases[l].measured, biases[l - 1].measured) << "length " << l + 1;
  }
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_NEAR(biases[l].measured, biases[l].predicted, 0.02) << "length " << l + 1;
  }
  EXPECT_GT(biases[4].measured, biases[4].predicted - 0.02);
  EXPECT_EQ(biases[0].attribute_sets, 5u);
  EXPECT_EQ(biases[1].attribute_sets, 10u);
  EXPECT_EQ(biases[4].attribute_sets, 1u);
}

// §6: "the range of B(q) increases with k" (Algorithm 2). For length 3 of 5 attributes it grows
// strictly up to k = 4; from there on every randomized part leaves at most one value of q, and
// since supp(q_j) = P(Q_j = q_j) exactly, E supp'(q) is then prod_i P(Q_i = q_i) whichever part
// is drawn: k = 5 has the same bias as k = 4.
TEST(RelativeBiasTest, BiasGrowsWithAttributesPerRecord) {
  const auto table = Associated(5000, 5, 14);
  std::vector<double> predicted;
  for (int k = 1; k <= 5; ++k) {
    ASSERT_OK_AND_ASSIGN(RelativeBias bias, MeasureRelativeBias(table, table, Plan(table, k), 3));
    predicted.push_back(bias.predicted);
  }
  for (size_t k = 1; k < 4; ++k) EXPECT_GT(predicted[k], predicted[k - 1]) << "k = " << k + 1;
  EXPECT_NEAR(predicted[4], predicted[3], 1e-12);
}

// 40 attributes: all 40 at once is one attribute set with 40 one-attribute parts (k = 1), cheap;
// length 20 would be C(40, 20) = 1.4e11 attribute sets and is refused with a message.
TEST(RelativeBiasTest, ManyAttributes) {
  const auto table = Associated(200, 40, 15);
  const RandomizationPlan plan = Plan(table, 1);
  ASSERT_OK_AND_ASSIGN(RelativeBias all, MeasureRelativeBias(table, table, plan, 40));
  EXPECT_EQ(all.attribute_sets, 1u);
  EXPECT_GT(all.predicted, 0.0);
  EXPECT_THAT(MeasureRelativeBias(table, table, plan, 20),
              StatusIs(absl::StatusCode::kInvalidArgument, "passes over the table"));
}

TEST(RelativeBiasTest, RejectsLengthsOutOfRange) {
  const auto table = Tiny();
  EXPECT_THAT(MeasureRelativeBias(table, table, Plan(table, 1), 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "(2), not 0"));
  EXPECT_THAT(MeasureRelativeBias(table, table, Plan(table, 1), 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "(2), not 3"));
}

// Definition 8 by hand for Algorithm 1 with p_i = 1/2 on D = Tiny() (P(a) = .75, P(b) = .25,
// P(x) = P(y) = .5), released table (a,x) (a,x) (b,y) (a,y): the weights p_i P(Q_i = q'_i) are
//   (a,x): .375 and .25 -> c = 1.5;  (b,y): .125 and .25 -> c = 2;  (a,y): .375 and .25 -> 1.5.
// max 2, mean (1.5 + 1.5 + 2 + 1.5) / 4 = 1.625.
TEST(CAmplificationTest, WorkedExample) {
  const auto original = Tiny();
  const std::vector<CategoricalColumn> released = {{"A", original[0].values, {0, 0, 1, 0}},
                                                   {"B", original[1].values, {0, 0, 1, 1}}};
  ASSERT_OK_AND_ASSIGN(Amplification c, CAmplification(original, released, Plan(original, 1)));
  EXPECT_DOUBLE_EQ(c.max, 2);
  EXPECT_DOUBLE_EQ(c.mean, 1.625);
  EXPECT_THAT(CAmplification(original, released, Plan(original, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, "Algorithm 1"));
}

// The paper's own example (§3, Fig. 1): 10 records, QID {Age, Job, Country} with the printed
// distributions (Dist1..Dist3; the records pair the values in an arbitrary order, which neither
// measure below depends on) and p1 = p2 = p3 = 1/3 as in §3.
std::vector<CategoricalColumn> Fig1Qid() {
  return {Column("Age", {"[20-30]", "[30-40]", "[30-40]", "[30-40]", "[30-40]", "[40-50]",
                         "[50-60]", "[50-60]", "[50-60]", "[60-70]"}),
          Column("Job", {"Doctor", "Clerk", "Clerk", "Clerk", "Clerk", "Trader", "Trader",
                         "Engineer", "Banker", "Banker"}),
          Column("Country",
                 {"USA", "USA", "USA", "USA", "USA", "USA", "Germany", "UK", "UK", "India"})};
}

// Definition 8 on Fig. 1 (§4.2.1: q' comes from an original differing in attribute i with
// probability p_i P(Q_i = q'_i); with p_i = 1/3 the ratio is that of the P's). Released records:
//   {[20-30], Clerk, USA}    (§6's example): P = .1, .4, .6 -> c = 6
//   {[30-40], Clerk, USA}:                    .4, .4, .6 -> 1.5
//   {[20-30], Doctor, Germany}:               .1, .1, .1 -> 1 (every candidate equally likely)
//   {[50-60], Banker, India}:                 .3, .2, .1 -> 3
//   and Fig1Qid()'s records 5-10 unchanged: {[30-40], Clerk, USA} 1.5, {[40-50], Trader, USA}
//   6, {[50-60], Trader, Germany} 3, {[50-60], Engineer, UK} 3, {[50-60], Banker, UK} 1.5,
//   {[60-70], Banker, India} 2.
// max 6, mean (6 + 1.5 + 1 + 3 + 1.5 + 6 + 3 + 3 + 1.5 + 2) / 10 = 2.85.
TEST(CAmplificationTest, PaperFig1Distributions) {
  const auto original = Fig1Qid();
  // Codes in order of first appearance: Age [20-30] 0, [30-40] 1, [40-50] 2, [50-60] 3,
  // [60-70] 4; Job Doctor 0, Clerk 1, Trader 2, Engineer 3, Banker 4; Country USA 0, Germany 1,
  // UK 2, India 3.
  const std::vector<CategoricalColumn> released = {
      {"Age", original[0].values, {0, 1, 0, 3, 1, 2, 3, 3, 3, 4}},
      {"Job", original[1].values, {1, 1, 0, 4, 1, 2, 2, 3, 4, 4}},
      {"Country", original[2].values, {0, 0, 1, 3, 0, 0, 1, 2, 2, 3}}};
  ASSERT_OK_AND_ASSIGN(Amplification c, CAmplification(original, released, Plan(original, 1)));
  EXPECT_DOUBLE_EQ(c.max, 6);
  EXPECT_NEAR(c.mean, 2.85, 1e-12);
}

// The variance of R(q) for length 1 on Fig. 1 (n = 10, p = 1/3). For a value of count c
// (P = c / 10), Eq. (11) as printed is p^2 (1 / P)^2 (P - P^2) = (1/9)(10 - c) / c. Exactly, each
// of the c records holding it keeps it with s = 1 - p (1 - P) and each other record takes it
// with t = p P: Var count' = c s (1 - s) + (n - c) t (1 - t) = n P p (1 - P)(2 - p), so
// Var R = Var count' / c^2 = Eq. (11) * (2 - p) / (p n) = Eq. (11) / 2 here (e.g. c = 4:
// 1/6 and 1/12). Weighted by count over the 14 values of the three attributes (30 record-values):
//   Eq. (11): (1/9) sum (10 - c) / 30 = (1/9)(140 - 30) / 30 = 11/27;  exact: 11/54.
// The sample variance over 4,000 seeded runs is close to the exact one.
TEST(RelativeVarianceTest, PaperFig1LengthOne) {
  const auto d = Fig1Qid();
  ASSERT_OK_AND_ASSIGN(RelativeVariance v, MeasureRelativeVariance(d, Plan(d, 1), 1, 4000, 3));
  EXPECT_EQ(v.combinations, 14u);
  EXPECT_NEAR(v.eq11, 11.0 / 27, 1e-12);
  EXPECT_NEAR(v.independent, 11.0 / 54, 1e-12);
  EXPECT_NEAR(v.measured, 11.0 / 54, 0.02);
}

// One attribute (m = 1, p = 1: every record is redrawn) with values x x y y: count'(x) is
// Binomial(4, 1/2), so Var count' = 1 and Var R(x) = 1 / 2^2 = .25 (the same for y). Eq. (11)
// as printed gives p^2 (supp(q - q)/supp(q))^2 (P - P^2) = (4/2)^2 * .25 = 1: it treats the
// records as moving together. The sample variance over 4000 seeded runs is close to .25.
TEST(RelativeVarianceTest, SingleAttributeBinomial) {
  const std::vector<CategoricalColumn> d = {Column("A", {"x", "x", "y", "y"})};
  ASSERT_OK_AND_ASSIGN(RelativeVariance v, MeasureRelativeVariance(d, Plan(d, 1), 1, 4000, 7));
  EXPECT_EQ(v.combinations, 2u);
  EXPECT_DOUBLE_EQ(v.independent, 0.25);
  EXPECT_DOUBLE_EQ(v.eq11, 1.0);
  EXPECT_NEAR(v.measured, 0.25, 0.03);
  EXPECT_THAT(MeasureRelativeVariance(d, Plan(d, 1), 1, 1, 7),
              StatusIs(absl::StatusCode::kInvalidArgument, "at least 2"));
}

// Two attributes, p_i = 1/2, D = Tiny(), length 1, q = (A = a), count 3: each of its records
// stays with probability 1 - .5 * (1 - .75) = .875 (variance .109375 each), and the b record
// becomes a with probability .5 * .75 = .375 (variance .234375): Var count' = .5625, Var R =
// .5625 / 9 = .0625. q = (A = b), count 1: stays .625 (.234375); each a record moves with
// .5 * .25 = .125 (.109375 each): Var count' = .5625, Var R = .5625. For B, x and y (count 2):
// stays .75 (.1875 each), the other two move with .25 (.1875 each): Var count' = .75, Var R =
// .1875 each. Support-weighted over the 4 combinations of both attribute sets:
// (3 * .0625 + 1 * .5625 + 2 * .1875 + 2 * .1875) / 8 = .1875.
TEST(RelativeVarianceTest, TwoAttributesByHand) {
  const auto d = Tiny();
  ASSERT_OK_AND_ASSIGN(RelativeVariance v, MeasureRelativeVariance(d, Plan(d, 1), 1, 3000, 11));
  EXPECT_EQ(v.combinations, 4u);
  EXPECT_NEAR(v.independent, 0.1875, 1e-12);
  EXPECT_NEAR(v.measured, 0.1875, 0.02);
}

}  // namespace
}  // namespace fedanon::randomization
