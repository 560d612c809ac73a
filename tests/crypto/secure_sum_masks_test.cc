#include "crypto/secure_sum_masks.h"

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "crypto/secret_bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::testing::StatusIs;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(MaskVectorTest, SizesAndFreshness) {
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> a, MaskVector(256));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> b, MaskVector(256));
  ASSERT_EQ(a.size(), 256u);
  ASSERT_EQ(b.size(), 256u);
  EXPECT_NE(a, b);
  size_t equal_positions = 0;
  for (size_t i = 0; i < a.size(); ++i) equal_positions += a[i] == b[i];
  EXPECT_EQ(equal_positions, 0u);  // each position collides with probability 2^-64
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> empty, MaskVector(0));
  EXPECT_TRUE(empty.empty());
}

TEST(MaskArithmeticTest, MaskThenUnmaskRestoresValues) {
  std::mt19937_64 rng(12345);  // test data only
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
    std::vector<uint64_t> values(n);
    for (auto& v : values) v = rng();
    // Force wraparound cases.
    if (n >= 7) {
      values[0] = 0;
      values[1] = kMax;
      values[2] = kMax - 1;
      values[3] = uint64_t{1} << 63;
    }
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask, MaskVector(n));
    std::vector<uint64_t> acc = values;
    ASSERT_OK(AddInPlace(absl::MakeSpan(acc), mask));
    if (n >= 7) {
      EXPECT_NE(acc, values);
    }
    ASSERT_OK(SubtractInPlace(absl::MakeSpan(acc), mask));
    EXPECT_EQ(acc, values) << "n=" << n;
  }
}

TEST(MaskArithmeticTest, WrapsModulo2To64) {
  std::vector<uint64_t> acc = {kMax, 0, 5, kMax};
  const std::vector<uint64_t> v = {1, 1, kMax, kMax};
  ASSERT_OK(AddInPlace(absl::MakeSpan(acc), v));
  EXPECT_EQ(acc, (std::vector<uint64_t>{0, 1, 4, kMax - 1}));
  ASSERT_OK(SubtractInPlace(absl::MakeSpan(acc), v));
  EXPECT_EQ(acc, (std::vector<uint64_t>{kMax, 0, 5, kMax}));
  std::vector<uint64_t> z = {0};
  ASSERT_OK(SubtractInPlace(absl::MakeSpan(z), std::vector<uint64_t>{1}));
  EXPECT_EQ(z[0], kMax);
}

TEST(MaskArithmeticTest, RingSecureSumOfThreeParties) {
  // Party 0 masks, parties 1 and 2 add their values, party 0 unmasks: the total appears.
  const std::vector<uint64_t> v0 = {3, kMax, 10}, v1 = {4, 2, 20}, v2 = {5, 3, 30};
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask, MaskVector(3));
  std::vector<uint64_t> running = mask;
  for (const auto* v : {&v0, &v1, &v2}) ASSERT_OK(AddInPlace(absl::MakeSpan(running), *v));
  ASSERT_OK(SubtractInPlace(absl::MakeSpan(running), mask));
  EXPECT_EQ(running, (std::vector<uint64_t>{12, 4, 60}));  // kMax + 2 + 3 wraps to 4
}

TEST(MaskArithmeticTest, SizeMismatchIsRejectedWithoutSideEffects) {
  std::vector<uint64_t> acc = {1, 2, 3};
  EXPECT_THAT(AddInPlace(absl::MakeSpan(acc), std::vector<uint64_t>{1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, "size mismatch"));
  EXPECT_THAT(SubtractInPlace(absl::MakeSpan(acc), std::vector<uint64_t>{1, 2, 3, 4}),
              StatusIs(absl::StatusCode::kInvalidArgument, "size mismatch"));
  EXPECT_EQ(acc, (std::vector<uint64_t>{1, 2, 3}));
}

// Loose uniformity sanity check: a chi-square statistic over the 256 byte values and the
// frequency of every bit position. The bounds are many standard deviations wide (false-failure
// probability far below 1e-9), so the test is effectively deterministic; it catches gross
// failures such as zero, constant, counter-like or truncated masks.
TEST(MaskVectorTest, BytesLookUniform) {
  constexpr size_t kWords = 1 << 16;  // 512 KiB
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> m, MaskVector(kWords));
  std::array<uint64_t, 256> counts{};
  std::array<uint64_t, 64> bit_counts{};
  for (uint64_t w : m) {
    for (int i = 0; i < 8; ++i) ++counts[(w >> (8 * i)) & 0xff];
    for (int b = 0; b < 64; ++b) bit_counts[b] += (w >> b) & 1;
  }
  const double expected = kWords * 8 / 256.0;
  double chi2 = 0;
  for (uint64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  // 255 degrees of freedom: mean 255, sd ~22.6. [120, 450] is about -6 .. +7 sd.
  EXPECT_GT(chi2, 120.0);
  EXPECT_LT(chi2, 450.0);
  // Each bit is set in kWords/2 = 32768 words, sd 128: allow +-1280 (10 sd).
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(static_cast<double>(bit_counts[b]), kWords / 2.0, 1280.0) << "bit " << b;
  }
}

// Known answer: AES-256 of the all-zero block under the all-zero key is
// dc95c078a2408989ad48a21492842087 (a published AES test value), so the all-zero seed's first two
// mask words are those 16 bytes read as little-endian 64-bit words.
TEST(MaskWordsFromSeedTest, KnownAnswerOfTheZeroSeed) {
  const std::string seed(kMaskSeedBytes, '\0');
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> w, MaskWordsFromSeed(seed, 0, 2));
  EXPECT_EQ(w, (std::vector<uint64_t>{0x898940a278c095dcULL, 0x8720849214a248adULL}));
}

// Every slice of the keystream, at odd and even offsets and across the 1 MiB pieces the
// implementation uses, is the same words as the whole.
TEST(MaskWordsFromSeedTest, AnySliceEqualsTheWholeStream) {
  ASSERT_OK_AND_ASSIGN(const SecretBytes seed, RandomBytes(kMaskSeedBytes));
  const size_t total = (size_t{1} << 17) + 37;  // more than one 1 MiB piece of keystream
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> whole,
                       MaskWordsFromSeed(seed.AsStringView(), 0, total));
  for (const auto& [offset, count] : std::vector<std::pair<uint64_t, size_t>>{
           {0, 1}, {1, 1}, {1, 2}, {3, 1000}, {130000, 1000}, {131071, 38}, {total, 0}}) {
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> part,
                         MaskWordsFromSeed(seed.AsStringView(), offset, count));
    EXPECT_EQ(part, std::vector<uint64_t>(whole.begin() + static_cast<ptrdiff_t>(offset),
                                          whole.begin() + static_cast<ptrdiff_t>(offset + count)))
        << offset << "+" << count;
  }
  // Another seed gives other words.
  ASSERT_OK_AND_ASSIGN(const SecretBytes other, RandomBytes(kMaskSeedBytes));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> again,
                       MaskWordsFromSeed(other.AsStringView(), 0, 4));
  EXPECT_NE(again, std::vector<uint64_t>(whole.begin(), whole.begin() + 4));
}

TEST(MaskWordsFromSeedTest, RefusesASeedOfTheWrongLength) {
  EXPECT_THAT(MaskWordsFromSeed(std::string(31, 'x'), 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "32 bytes"));
}

}  // namespace
}  // namespace fedanon::crypto
