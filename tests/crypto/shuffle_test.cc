#include "crypto/shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

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

}  // namespace
}  // namespace fedanon::crypto
