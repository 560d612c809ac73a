// The requirements of ldiversity and tcloseness on one group's sensitive distribution
// (common/engine/sensitive_distribution.h): hand-worked known answers, the published examples of
// Li et al. 2007 and of the thesis, the closed forms against the independent checker's
// transportation-problem EMD, and the union closure the specialization loop relies on.
#include "common/engine/sensitive_distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "tests/checker/brute_force_checker.h"

namespace fedanon::engine {
namespace {

using Counts = std::vector<uint64_t>;

SensitiveDistribution Diversity(SensitiveDistribution::Kind kind, double l, double c = 0,
                                size_t domain = 4) {
  SensitiveDistribution d;
  d.kind = kind;
  d.l = l;
  d.c = c;
  d.domain = domain;
  d.attribute = "s";
  return d;
}

// A tree given as parent links (parents before children), the values' leaves, the heights.
SensitiveDistribution Tree(std::vector<int32_t> parent, std::vector<int32_t> leaf_of_value) {
  SensitiveDistribution d;
  d.kind = SensitiveDistribution::Kind::kCloseness;
  d.distance = fedanon::v1::GROUND_DISTANCE_HIERARCHICAL;
  d.parent = std::move(parent);
  d.leaf_of_value = std::move(leaf_of_value);
  d.domain = d.leaf_of_value.size();
  d.height.assign(d.parent.size(), 0);
  for (size_t n = d.parent.size(); n-- > 0;) {
    if (d.parent[n] >= 0) d.height[d.parent[n]] = std::max(d.height[d.parent[n]], d.height[n] + 1);
  }
  d.tree_height = d.height[0];
  return d;
}

// The checker's ground distance of a tree: height(lowest common ancestor) / height.
std::vector<std::vector<double>> TreeDistances(const SensitiveDistribution& d) {
  std::vector<std::vector<double>> out(d.domain, std::vector<double>(d.domain, 0));
  auto ancestors = [&](int32_t n) {
    std::vector<int32_t> up;
    for (; n >= 0; n = d.parent[n]) up.push_back(n);
    return up;
  };
  for (size_t i = 0; i < d.domain; ++i) {
    for (size_t j = 0; j < d.domain; ++j) {
      const auto a = ancestors(d.leaf_of_value[i]);
      for (int32_t n : ancestors(d.leaf_of_value[j])) {
        if (std::find(a.begin(), a.end(), n) != a.end()) {
          out[i][j] = static_cast<double>(d.height[n]) / d.tree_height;
          break;
        }
      }
    }
  }
  return out;
}

TEST(SensitiveDistribution, DistinctAndEntropyKnownAnswers) {
  EXPECT_EQ(DistinctValues(Counts{3, 0, 1}), 2u);
  // {2, 2}: entropy ln 2; four equal values: ln 4.
  EXPECT_NEAR(NaturalEntropy(Counts{2, 2}), std::log(2.0), 1e-15);
  EXPECT_NEAR(NaturalEntropy(Counts{1, 1, 1, 1}), std::log(4.0), 1e-15);
  // fung2007 thesis §5.1's example: 90 HIV and 10 flu records are "entropy 1.4-diverse":
  // H = -0.9 ln 0.9 - 0.1 ln 0.1 = 0.0948 + 0.2303 = 0.3251, e^H = 1.384.
  EXPECT_NEAR(std::exp(NaturalEntropy(Counts{90, 10})), 1.384, 1e-3);
  const Counts none;
  EXPECT_TRUE(Diversity(SensitiveDistribution::Kind::kEntropy, 1.38).Holds(Counts{90, 10}, none));
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kEntropy, 1.4).Holds(Counts{90, 10}, none));
  // Exactly ln 2 meets entropy 2-diversity (the bound is inclusive).
  EXPECT_TRUE(Diversity(SensitiveDistribution::Kind::kEntropy, 2).Holds(Counts{5, 5, 0}, none));
  EXPECT_TRUE(Diversity(SensitiveDistribution::Kind::kDistinct, 2).Holds(Counts{1, 0, 9}, none));
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kDistinct, 3).Holds(Counts{1, 0, 9}, none));
}

TEST(SensitiveDistribution, RecursiveKnownAnswers) {
  const Counts none;
  // Counts 5, 3, 2, 1. l = 2: r_1 = 5, r_2 + r_3 + r_4 = 6: holds for c = 1 (5 < 6), not for
  // c = 0.8 (5 < 4.8 fails). l = 3: tail r_3 + r_4 = 3: c = 2 gives 5 < 6, c = 1.5 gives 4.5.
  const Counts g{2, 5, 1, 3};
  EXPECT_DOUBLE_EQ(RecursiveRatio(g, 2), 5.0 / 6.0);
  EXPECT_TRUE(Diversity(SensitiveDistribution::Kind::kRecursive, 2, 1).Holds(g, none));
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kRecursive, 2, 0.8).Holds(g, none));
  EXPECT_DOUBLE_EQ(RecursiveRatio(g, 3), 5.0 / 3.0);
  EXPECT_TRUE(Diversity(SensitiveDistribution::Kind::kRecursive, 3, 2).Holds(g, none));
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kRecursive, 3, 1.5).Holds(g, none));
  // Strict: r_1 = c * tail fails. Fewer than l values: the tail is empty.
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kRecursive, 2, 1).Holds(Counts{3, 3}, none));
  EXPECT_FALSE(Diversity(SensitiveDistribution::Kind::kRecursive, 3, 9).Holds(Counts{3, 3}, none));
  EXPECT_TRUE(std::isinf(RecursiveRatio(Counts{3, 3}, 3)));
}

TEST(SensitiveDistribution, LiEtAlSalaryExample) {
  // Li, Li, Venkatasubramanian 2007, section 4.2: salaries {3k, ..., 11k}, one record each in the
  // table (Q uniform over 9 values). P1 = {3k, 4k, 5k}: ordered distance 0.375; P2 = {6k, 8k,
  // 11k}: 0.167. By hand: P1 - Q = (2, 2, 2, -1, -1, -1, -1, -1, -1)/9, prefix sums 2, 4, 6, 5,
  // 4, 3, 2, 1, 0 (/9) add to 3, over m - 1 = 8: 3/8. P2 - Q = (-1, -1, -1, 2, -1, 2, -1, -1,
  // 2)/9, prefix sums -1, -2, -3, -1, -2, 0, -1, -2, 0: |.| adds to 12/9, over 8: 1/6.
  const Counts q(9, 1);
  const Counts p1{1, 1, 1, 0, 0, 0, 0, 0, 0};
  const Counts p2{0, 0, 0, 1, 0, 1, 0, 0, 1};
  EXPECT_DOUBLE_EQ(OrderedDistanceEmd(p1, q), 0.375);
  EXPECT_NEAR(OrderedDistanceEmd(p2, q), 1.0 / 6.0, 1e-15);
  // Equal distance, by hand: 1/2 (3 * 2/9 + 6 * 1/9) = 2/3 for either.
  EXPECT_NEAR(EqualDistanceEmd(p1, q), 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(EqualDistanceEmd(p2, q), 2.0 / 3.0, 1e-15);
  // A group with the table's own distribution is at distance 0.
  EXPECT_EQ(OrderedDistanceEmd(Counts(9, 4), q), 0.0);
}

TEST(SensitiveDistribution, HierarchicalDistanceByHand) {
  // * -> {A -> {a1, a2}, B -> {b1, b2}}, H = 2. Q = one record of each; the group holds two a1.
  // Surplus a1 3/4, a2 b1 b2 -1/4 each. Node A (height 1): min(3/4, 1/4) = 1/4, cost 1/4; its
  // surplus 1/2. B: -1/2. Root (height 2): min(1/2, 1/2) * 2 = 1. (1/4 + 1) / H = 0.625. As a
  // transport: 1/4 from a1 to a2 at 1/2, 1/2 from a1 to b1, b2 at 1: 1/8 + 1/2 = 5/8.
  const SensitiveDistribution tree = Tree({-1, 0, 0, 1, 1, 2, 2}, {3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(HierarchicalDistanceEmd(tree, Counts{2, 0, 0, 0}, Counts{1, 1, 1, 1}), 0.625);
  // Leaves at different depths (an ARX line `x;*` beside `y;Y;*` and `z;Y;*`): H = 2, d(x, y) =
  // 1, d(y, z) = 1/2. Two y against one of each: move 1/3 to z (1/6) and 1/3 to x (1/3) = 1/2.
  const SensitiveDistribution uneven = Tree({-1, 0, 0, 2, 2}, {1, 3, 4});
  EXPECT_DOUBLE_EQ(HierarchicalDistanceEmd(uneven, Counts{0, 2, 0}, Counts{1, 1, 1}), 0.5);
}

// The closed forms of Li et al. equal the EMD the checker computes as a transportation problem.
TEST(SensitiveDistribution, ClosedFormsEqualTheTransportationProblem) {
  std::mt19937_64 rng(46);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t m = 2 + rng() % 7;
    Counts p(m), q(m);
    for (size_t i = 0; i < m; ++i) {
      p[i] = rng() % 6;
      q[i] = 1 + rng() % 9;
    }
    if (std::accumulate(p.begin(), p.end(), uint64_t{0}) == 0) p[0] = 1;
    std::vector<std::vector<double>> equal(m, std::vector<double>(m, 1)), ordered = equal;
    for (size_t i = 0; i < m; ++i) {
      equal[i][i] = 0;
      for (size_t j = 0; j < m; ++j) {
        ordered[i][j] = std::fabs(static_cast<double>(i) - static_cast<double>(j)) / (m - 1);
      }
    }
    EXPECT_NEAR(EqualDistanceEmd(p, q), testing::TransportationEmd(p, q, equal), 1e-12);
    EXPECT_NEAR(OrderedDistanceEmd(p, q), testing::TransportationEmd(p, q, ordered), 1e-12);
    // A random tree: node n > 0 hangs under a random earlier node; the values are its leaves.
    const size_t nodes = m + 1 + rng() % 6;
    std::vector<int32_t> parent(nodes, -1);
    for (size_t n = 1; n < nodes; ++n) parent[n] = static_cast<int32_t>(rng() % n);
    std::vector<int32_t> leaves;
    for (size_t n = 0; n < nodes; ++n) {
      if (std::find(parent.begin(), parent.end(), static_cast<int32_t>(n)) == parent.end()) {
        leaves.push_back(static_cast<int32_t>(n));
      }
    }
    leaves.resize(std::min(leaves.size(), m));
    const Counts pl(p.begin(), p.begin() + static_cast<ptrdiff_t>(leaves.size()));
    const Counts ql(q.begin(), q.begin() + static_cast<ptrdiff_t>(leaves.size()));
    if (std::accumulate(pl.begin(), pl.end(), uint64_t{0}) == 0) continue;
    const SensitiveDistribution tree = Tree(parent, leaves);
    EXPECT_NEAR(HierarchicalDistanceEmd(tree, pl, ql),
                testing::TransportationEmd(pl, ql, TreeDistances(tree)), 1e-12)
        << "trial " << trial;
  }
}

// What the engine relies on (docs/engine.md): two disjoint groups that each meet a requirement
// make a group that meets it, for every variant and ground distance, with Q fixed (the whole
// table, as no record is ever suppressed).
TEST(SensitiveDistribution, EveryRequirementIsClosedUnderUnion) {
  std::mt19937_64 rng(7);
  const SensitiveDistribution tree = Tree({-1, 0, 0, 1, 1, 2, 2, 2}, {3, 4, 5, 6, 7});
  int unions_checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t m = 5;
    Counts a(m), b(m), q(m), both(m);
    for (size_t i = 0; i < m; ++i) {
      a[i] = rng() % 5;
      b[i] = rng() % 5;
      q[i] = 1 + rng() % 8;
      both[i] = a[i] + b[i];
    }
    std::vector<SensitiveDistribution> models = {
        Diversity(SensitiveDistribution::Kind::kDistinct, 2 + rng() % 3, 0, m),
        Diversity(SensitiveDistribution::Kind::kEntropy, 1.2 + (rng() % 30) / 10.0, 0, m),
        Diversity(SensitiveDistribution::Kind::kRecursive, 2 + rng() % 3, 0.5 + (rng() % 30) / 10.0,
                  m)};
    for (auto distance : {fedanon::v1::GROUND_DISTANCE_EQUAL, fedanon::v1::GROUND_DISTANCE_ORDERED,
                          fedanon::v1::GROUND_DISTANCE_HIERARCHICAL}) {
      SensitiveDistribution t = distance == fedanon::v1::GROUND_DISTANCE_HIERARCHICAL
                                    ? tree
                                    : Diversity(SensitiveDistribution::Kind::kCloseness, 0, 0, m);
      t.kind = SensitiveDistribution::Kind::kCloseness;
      t.distance = distance;
      t.t = (rng() % 60) / 100.0;
      models.push_back(t);
    }
    for (const SensitiveDistribution& model : models) {
      if (model.Holds(a, q) && model.Holds(b, q)) {
        ++unions_checked;
        EXPECT_TRUE(model.Holds(both, q)) << model.Describe() << " trial " << trial;
      }
    }
  }
  EXPECT_GT(unions_checked, 10000);  // the property was exercised, not vacuous
}

}  // namespace
}  // namespace fedanon::engine
