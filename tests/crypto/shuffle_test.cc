#include "crypto/shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace fedanon::crypto {
namespace {

TEST(SecurePermutationTest, IsAPermutation) {
  for (size_t n : {0, 1, 2, 17, 1000}) {
    auto p = SecurePermutation(n);
    ASSERT_TRUE(p.ok());
    std::vector<size_t> sorted = *p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<size_t> expected(n);
    std::iota(expected.begin(), expected.end(), size_t{0});
    EXPECT_EQ(sorted, expected);
  }
}

TEST(SecurePermutationTest, PositionsAreRoughlyUniform) {
  // Where element 0 lands over many shuffles of 4: each position ~ 1/4 (loose 6-sigma bounds).
  constexpr int kTrials = 8000;
  int counts[4] = {0, 0, 0, 0};
  for (int t = 0; t < kTrials; ++t) {
    auto p = SecurePermutation(4);
    ASSERT_TRUE(p.ok());
    for (int pos = 0; pos < 4; ++pos) {
      if ((*p)[pos] == 0) ++counts[pos];
    }
  }
  for (int c : counts) {
    EXPECT_GT(c, 2000 - 233);
    EXPECT_LT(c, 2000 + 233);
  }
}

TEST(SeededPermutationTest, SameSeedSamePermutationOtherSeedAnother) {
  const std::string seed(kPermutationSeedBytes, '\x5a');
  std::string other = seed;
  other[0] = '\x5b';
  auto a = SeededPermutation(seed, 500);
  auto b = SeededPermutation(seed, 500);
  auto c = SeededPermutation(other, 500);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  std::vector<size_t> sorted = *a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> identity(500);
  std::iota(identity.begin(), identity.end(), size_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(*a, identity);
  // Fixed points of a uniform permutation: about 1 on average; far fewer than 20 in practice.
  size_t fixed = 0;
  for (size_t i = 0; i < a->size(); ++i) fixed += (*a)[i] == i;
  EXPECT_LT(fixed, 20u);
}

TEST(SeededPermutationTest, RefusesASeedOfTheWrongSize) {
  EXPECT_FALSE(SeededPermutation("short", 10).ok());
  EXPECT_FALSE(SeededPermutation(std::string(kPermutationSeedBytes + 1, 'x'), 10).ok());
}

}  // namespace
}  // namespace fedanon::crypto
