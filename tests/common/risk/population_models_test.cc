// Known answers for the population-uniqueness models (common/risk/population_models.h). Each
// figure is worked out below from the published formula, by hand where the formula is closed
// (Zayatz, Shlosser's estimate, the SNB moments at a chosen (alpha, beta), the digamma values)
// and, for the two maximum-likelihood fits, by an independent computation: Pitman's (theta,
// alpha) maximize the log-likelihood directly (Nelder-Mead on L, no score equations), and the
// score equations are then checked here with plain sums instead of the digamma forms.
#include "common/risk/population_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "common/risk/special_functions.h"

namespace fedanon::risk {
namespace {

TEST(SpecialFunctionsTest, KnownValues) {
  constexpr double kEulerGamma = 0.57721566490153286;
  EXPECT_NEAR(Digamma(1), -kEulerGamma, 1e-13);
  EXPECT_NEAR(Digamma(0.5), -kEulerGamma - 2 * std::log(2.0), 1e-13);
  EXPECT_NEAR(Digamma(5), -kEulerGamma + 1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4, 1e-13);
  EXPECT_NEAR(Digamma(1e6), std::log(1e6) - 0.5e-6, 1e-12);
  EXPECT_NEAR(Trigamma(1), std::numbers::pi * std::numbers::pi / 6, 1e-13);
  EXPECT_NEAR(Trigamma(0.5), std::numbers::pi * std::numbers::pi / 2, 1e-12);
  EXPECT_NEAR(Trigamma(3), std::numbers::pi * std::numbers::pi / 6 - 1 - 0.25, 1e-13);
  // psi(x + 1) - psi(x) = 1 / x everywhere.
  for (double x : {0.01, 0.3, 2.5, 9.9, 10.1, 123.4}) {
    EXPECT_NEAR(Digamma(x + 1) - Digamma(x), 1 / x, 1e-12 * (1 + 1 / x)) << x;
    EXPECT_NEAR(Trigamma(x) - Trigamma(x + 1), 1 / (x * x), 1e-12 * (1 + 1 / (x * x))) << x;
  }
}

// Sample of n = 5 from a population of N = 10 (pi = 1/2): classes of sizes 1, 1, 3.
// P(X = 1) for X ~ Hypergeometric(10, s, 5): s = 1: 5/10 = 1/2; s = 3: 3 C(7, 4) / C(10, 5) =
// 3 * 35 / 252 = 5/12. Share of sample uniques unique in the population (Zayatz 1991):
// (2/3 * 1/2) / (2/3 * 1/2 + 1/3 * 5/12) = (1/3) / (17/36) = 12/17; population uniques =
// f1 * share / pi = 2 * 12/17 / (1/2) = 48/17.
TEST(ZayatzTest, HandWorkedExample) {
  const PopulationEstimate e = ZayatzUniques({{1, 2}, {3, 1}}, 10);
  ASSERT_TRUE(e.available) << e.note;
  EXPECT_NEAR(e.uniques, 48.0 / 17, 1e-12);
}

// The same table as its own population (N = n): every sample unique is a population unique.
TEST(ZayatzTest, WholePopulationKeepsTheSampleUniques) {
  const PopulationEstimate e = ZayatzUniques({{1, 2}, {3, 1}}, 5);
  ASSERT_TRUE(e.available);
  EXPECT_NEAR(e.uniques, 2, 1e-12);
}

TEST(ZayatzTest, NoSampleUniquesGivesZero) {
  const PopulationEstimate e = ZayatzUniques({{2, 3}, {4, 1}}, 1000);
  EXPECT_TRUE(e.available);
  EXPECT_EQ(e.uniques, 0);
}

// Haas & Stokes's estimate with f1 = 2, f3 = 1, pi = 1/2:
//   sum i pi^2 (1-pi^2)^(i-1) f_i = 1*1/4*1*2 + 3*1/4*(3/4)^2*1 = 1/2 + 27/64 = 59/64,
//   sum (1-pi)^i ((1+pi)^i - 1) f_i = 1/2*1/2*2 + 1/8*(27/8 - 1) = 1/2 + 19/64 = 51/64,
//   sum (1-pi)^i f_i = 1/2*2 + 1/8 = 9/8,   sum i pi (1-pi)^(i-1) f_i = 1 + 3/8 = 11/8,
//   K = 3 + 2 * (59/51) * (9/11)^2 = 3 + 9558/6171.
TEST(ShlosserTest, HandWorkedExample) {
  EXPECT_NEAR(ShlosserClasses({{1, 2}, {3, 1}}, 0.5), 3 + 9558.0 / 6171, 1e-12);
}

// SNB moments at alpha = 1, beta = 1/2, pi = 1/2, K = 100: d = (1/2)(1/2) = 1/4, p = beta /
// (1 - d) = 2/3; E[c1] = 100 * 1/2 * 2/3 * (1 + (1/4)/(3/4)) = 400/9; E[c2] = 100 * 1 * 1/2 *
// 1/2 * 1/4 * (2 - 0) / (2 (3/4)^3) = 400/27. The fit must give back alpha and beta, and the
// population uniques K beta^alpha = 50.
TEST(SnbTest, RecoversTheParametersOfHandComputedMoments) {
  const std::optional<SnbParameters> p = FitSnb(100, 0.5, 400.0 / 9, 400.0 / 27);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->alpha, 1, 1e-9);
  EXPECT_NEAR(p->beta, 0.5, 1e-9);
  EXPECT_NEAR(100 * std::pow(p->beta, p->alpha), 50, 1e-7);
}

// The SNB moment equations (Chen & Keller-McNulty 1998) at (alpha, beta), written out directly.
double SnbC1(double k, double pi, double a, double b) {
  const double d = (1 - b) * (1 - pi);
  return k * pi * std::pow(b / (1 - d), a) * (1 + a * d / (1 - d));
}
double SnbC2(double k, double pi, double a, double b) {
  const double d = (1 - b) * (1 - pi);
  return k * a * std::pow(b, a) * (1 - b) * pi * pi * (2 - (1 - a) * d) /
         (2 * std::pow(1 - d, a + 2));
}

// Sizes 1 (x10), 2 (x2), 4, 8: n = 26, u = 14; in a population of 100 (pi = 0.26). The fitted
// (alpha, beta) must satisfy both moment equations; the estimate (22.464036...) is the one an
// independent script of the same equations gives (the first root from p = 1 downwards).
TEST(SnbTest, FitSatisfiesTheMomentEquations) {
  const ClassSizeHistogram h = {{1, 10}, {2, 2}, {4, 1}, {8, 1}};
  const double pi = 26.0 / 100;
  const double k = ShlosserClasses(h, pi);
  EXPECT_NEAR(k, 34.36738922643061, 1e-9);
  const std::optional<SnbParameters> p = FitSnb(k, pi, 10, 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(SnbC1(k, pi, p->alpha, p->beta), 10, 1e-8);
  EXPECT_NEAR(SnbC2(k, pi, p->alpha, p->beta), 2, 1e-8);
  const PopulationEstimate e = SnbUniques(h, 100);
  ASSERT_TRUE(e.available) << e.note;
  EXPECT_NEAR(e.uniques, 22.46403611058079, 1e-6);
}

// Pitman's log-likelihood of the partition, written out as sums (Hoshino 2001).
double PitmanScoreTheta(const ClassSizeHistogram& h, double t, double a) {
  double n = 0, u = 0;
  for (const auto& [s, c] : h) {
    n += static_cast<double>(s * c);
    u += static_cast<double>(c);
  }
  double g = 0;
  for (int i = 1; i < u; ++i) g += 1 / (t + i * a);
  for (int i = 1; i < n; ++i) g -= 1 / (t + i);
  return g;
}
double PitmanScoreAlpha(const ClassSizeHistogram& h, double t, double a) {
  double u = 0;
  for (const auto& [s, c] : h) u += static_cast<double>(c);
  double g = 0;
  for (int i = 1; i < u; ++i) g += i / (t + i * a);
  for (const auto& [s, c] : h) {
    for (uint64_t k = 1; k < s; ++k) g -= static_cast<double>(c) / (static_cast<double>(k) - a);
  }
  return g;
}

// Sizes 1 (x10), 2 (x2), 4, 8. Maximizing L(theta, alpha) directly (Nelder-Mead over the
// log-likelihood, then refined on the score equations with plain sums) gives theta =
// 2.9477627040, alpha = 0.5592956176; the population uniques for N = 1000 are
// Gamma(theta + 1) / Gamma(theta + alpha) * 1000^alpha = 79.937208189.
TEST(PitmanTest, MaximumLikelihoodAndEstimate) {
  const ClassSizeHistogram h = {{1, 10}, {2, 2}, {4, 1}, {8, 1}};
  const std::optional<PitmanParameters> p = FitPitman(h);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->theta, 2.9477627040, 1e-7);
  EXPECT_NEAR(p->alpha, 0.5592956176, 1e-8);
  EXPECT_NEAR(PitmanScoreTheta(h, p->theta, p->alpha), 0, 1e-9);
  EXPECT_NEAR(PitmanScoreAlpha(h, p->theta, p->alpha), 0, 1e-9);
  const PopulationEstimate e = PitmanUniques(h, 1000);
  ASSERT_TRUE(e.available) << e.note;
  EXPECT_NEAR(e.uniques, 79.937208189, 1e-5);
}

// Few uniques and classes of similar size: the likelihood is largest at alpha = 0 (Ewens), where
// Pitman's estimate does not depend on N: not available, as in ARX.
TEST(PitmanTest, NoInteriorMaximum) {
  EXPECT_FALSE(FitPitman({{1, 6}, {2, 3}, {3, 1}, {5, 1}}).has_value());
  EXPECT_FALSE(PitmanUniques({{1, 6}, {2, 3}, {3, 1}, {5, 1}}, 1000).available);
  EXPECT_FALSE(FitPitman({{1, 7}}).has_value());  // every record unique
  EXPECT_FALSE(FitPitman({{9, 1}}).has_value());  // one class
}

// A large table (n = 100,000 with 30,000 classes) goes through the digamma forms; the fit still
// solves the score equations written as plain sums.
TEST(PitmanTest, LargeTableSolvesTheScoreEquations) {
  const ClassSizeHistogram h = {{1, 20000}, {2, 5000}, {3, 2000}, {5, 1500}, {20, 1000}, {45, 500}};
  const std::optional<PitmanParameters> p = FitPitman(h);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(PitmanScoreTheta(h, p->theta, p->alpha), 0, 1e-7);
  EXPECT_NEAR(PitmanScoreAlpha(h, p->theta, p->alpha), 0, 1e-5);
}

// Dankar et al.: pi <= 0.1 -> Pitman (Zayatz when Pitman has no solution); else the smaller of
// Zayatz and SNB (Zayatz when SNB has none).
TEST(DankarTest, DecisionRule) {
  const PopulationEstimate pitman{.available = true, .uniques = 5, .note = ""};
  const PopulationEstimate none{.available = false, .uniques = 0, .note = ""};
  const PopulationEstimate zayatz{.available = true, .uniques = 8, .note = ""};
  const PopulationEstimate snb{.available = true, .uniques = 7, .note = ""};
  EXPECT_EQ(DankarRule(0.05, pitman, zayatz, snb).chosen, UniquenessModel::kPitman);
  EXPECT_EQ(DankarRule(0.1, pitman, zayatz, snb).estimate.uniques, 5);
  EXPECT_EQ(DankarRule(0.05, none, zayatz, snb).chosen, UniquenessModel::kZayatz);
  EXPECT_EQ(DankarRule(0.2, pitman, zayatz, snb).chosen, UniquenessModel::kSnb);
  EXPECT_EQ(DankarRule(0.2, pitman, snb, zayatz).chosen, UniquenessModel::kZayatz);
  EXPECT_EQ(DankarRule(0.2, pitman, zayatz, none).chosen, UniquenessModel::kZayatz);
}

// The example above at N = 100 (pi = 0.26): Zayatz 24.638857 (share 0.640610), SNB 22.464036,
// so the rule takes SNB; at N = 1000 (pi = 0.026), Pitman.
TEST(DankarTest, OnTheExampleTable) {
  const ClassSizeHistogram h = {{1, 10}, {2, 2}, {4, 1}, {8, 1}};
  const PopulationEstimate zayatz = ZayatzUniques(h, 100);
  EXPECT_NEAR(zayatz.uniques, 24.638857380670405, 1e-9);
  const DankarEstimate at100 = DankarRule(0.26, PitmanUniques(h, 100), zayatz, SnbUniques(h, 100));
  EXPECT_EQ(at100.chosen, UniquenessModel::kSnb);
  EXPECT_NEAR(at100.estimate.uniques, 22.46403611058079, 1e-6);
  const DankarEstimate at1000 =
      DankarRule(0.026, PitmanUniques(h, 1000), ZayatzUniques(h, 1000), SnbUniques(h, 1000));
  EXPECT_EQ(at1000.chosen, UniquenessModel::kPitman);
  EXPECT_NEAR(at1000.estimate.uniques, 79.937208189, 1e-5);
}

}  // namespace
}  // namespace fedanon::risk
