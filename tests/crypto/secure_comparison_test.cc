// The secure comparison (crypto/secure_comparison.h) against plain computation at every bit
// width and for every kind; each side's transcript against the other's input (in distribution);
// its messages replayed, reordered, forged, resized and mixed between instances, each refused by
// name.
#include "crypto/secure_comparison.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "crypto/random_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::testing::StatusIs;

uint64_t Mask(uint32_t n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

struct Outcome {
  ComparisonResult evaluator;
  ComparisonResult garbler;
  std::vector<std::string> messages;  // 1 .. 5
};

absl::StatusOr<Outcome> RunProtocol(const ComparisonSpec& spec, std::vector<uint64_t> g,
                                    std::vector<uint64_t> e, std::string_view g_seed = {},
                                    std::string_view e_seed = {}) {
  absl::StatusOr<std::unique_ptr<ComparisonGarbler>> garbler =
      ComparisonGarbler::Create(spec, std::move(g), g_seed);
  if (!garbler.ok()) return garbler.status();
  absl::StatusOr<std::unique_ptr<ComparisonEvaluator>> evaluator =
      ComparisonEvaluator::Create(spec, std::move(e), e_seed);
  if (!evaluator.ok()) return evaluator.status();
  Outcome out;
  absl::StatusOr<std::string> m = (*evaluator)->Start();
  if (!m.ok()) return m.status();
  out.messages.push_back(*m);
  m = (*garbler)->AnswerBase(*m);
  if (!m.ok()) return m.status();
  out.messages.push_back(*m);
  m = (*evaluator)->Extend(*m);
  if (!m.ok()) return m.status();
  out.messages.push_back(*m);
  m = (*garbler)->Garble(*m);
  if (!m.ok()) return m.status();
  out.messages.push_back(*m);
  m = (*evaluator)->Evaluate(*m);
  if (!m.ok()) return m.status();
  out.messages.push_back(*m);
  out.evaluator = (*evaluator)->result();
  absl::StatusOr<ComparisonResult> r = (*garbler)->Finish(*m);
  if (!r.ok()) return r.status();
  out.garbler = *r;
  return out;
}

void ExpectMatchesPlain(const ComparisonSpec& spec, const std::vector<uint64_t>& g,
                        const std::vector<uint64_t>& e) {
  ASSERT_OK_AND_ASSIGN(const ComparisonResult plain, ComparePlain(spec, g, e));
  ASSERT_OK_AND_ASSIGN(const Outcome out, RunProtocol(spec, g, e));
  EXPECT_EQ(out.evaluator, plain) << spec.instance;
  EXPECT_EQ(out.garbler, plain) << spec.instance;
  ASSERT_OK_AND_ASSIGN(const ComparisonCost cost, CostOfComparison(spec));
  EXPECT_EQ(cost.evaluator_bytes,
            out.messages[0].size() + out.messages[2].size() + out.messages[4].size());
  EXPECT_EQ(cost.garbler_bytes, out.messages[1].size() + out.messages[3].size());
}

TEST(SecureComparisonTest, EveryKindAtEveryWidthEqualsPlainComputation) {
  std::mt19937_64 rng(31);
  for (uint32_t n = 1; n <= 64; ++n) {
    const uint64_t mask = Mask(n);
    // [g > e]: equal values, neighbours and extremes besides random ones.
    std::vector<uint64_t> g = {0, mask, mask, 5 & mask, rng() & mask, rng() & mask};
    std::vector<uint64_t> e = {0, mask, 0, 4 & mask, rng() & mask, rng() & mask};
    const ComparisonOutput mode = n % 2 == 0 ? ComparisonOutput::kEach : ComparisonOutput::kAll;
    ExpectMatchesPlain({absl::StrCat("gt-", n), ComparisonKind::kGreaterThan, n, 0, g.size(), mode},
                       g, e);
    // [s == 0 or s >= K]: sums at 0, K - 1, K, and wrapping ones.
    const uint64_t k = std::max<uint64_t>(1, rng() & mask);
    const uint64_t a = rng() & mask;
    g = {a, a, a, a, rng() & mask, 0};
    e = {(0 - a) & mask, (k - 1 - a) & mask, (k - a) & mask, (mask - a) & mask, rng() & mask, 0};
    ExpectMatchesPlain(
        {absl::StrCat("zk-", n), ComparisonKind::kSumZeroOrAtLeast, n, k, g.size(), mode}, g, e);
    // [s >= 0] as two's complement: s = 0, -1, the largest and the smallest value.
    const uint64_t top = uint64_t{1} << (n - 1);
    g = {a, a, a, a, rng() & mask};
    e = {(0 - a) & mask, (mask - a) & mask, (top - 1 - a) & mask, (top - a) & mask, rng() & mask};
    ExpectMatchesPlain(
        {absl::StrCat("nn-", n), ComparisonKind::kSumNonNegative, n, 0, g.size(), mode}, g, e);
  }
}

// Values wider than a word: `count` values of ComparisonWords(bits) words each.
TEST(SecureComparisonTest, WideValuesEqualPlainComputation) {
  std::mt19937_64 rng(34);
  for (const uint32_t n : {65u, 100u, 128u, 129u, 200u, 256u, 511u, 512u}) {
    const uint32_t w = ComparisonWords(n);
    const uint64_t top = n % 64 == 0 ? ~uint64_t{0} : (uint64_t{1} << (n % 64)) - 1;
    auto random_value = [&] {
      std::vector<uint64_t> v(w);
      for (uint64_t& x : v) x = rng();
      v.back() &= top;
      return v;
    };
    auto concat = [](std::vector<std::vector<uint64_t>> values) {
      std::vector<uint64_t> out;
      for (const auto& v : values) out.insert(out.end(), v.begin(), v.end());
      return out;
    };
    const std::vector<uint64_t> x = random_value();
    std::vector<uint64_t> x_high = x;  // differs from x only in the top word
    x_high.back() = (x_high.back() + 1) & top;
    std::vector<uint64_t> zero(w, 0);
    std::vector<uint64_t> minus_x(w);  // -x mod 2^n
    {
      uint64_t borrow = 0;
      for (uint32_t k = 0; k < w; ++k) {
        const uint64_t t = 0 - x[k] - borrow;
        borrow = (x[k] != 0 || borrow != 0) ? 1 : 0;
        minus_x[k] = t;
      }
      minus_x.back() &= top;
    }
    // [g > e]: equal, top word decides, random.
    const std::vector<uint64_t> g = concat({x, x_high, x, random_value()});
    const std::vector<uint64_t> e = concat({x, x, x_high, random_value()});
    ExpectMatchesPlain({absl::StrCat("wide-gt-", n), ComparisonKind::kGreaterThan, n, 0, 4,
                        ComparisonOutput::kEach},
                       g, e);
    // Sums: x + (-x) = 0, x + 0, and random ones against a 64-bit threshold.
    const std::vector<uint64_t> sg = concat({x, x, random_value(), zero});
    const std::vector<uint64_t> se = concat({minus_x, zero, random_value(), zero});
    ExpectMatchesPlain({absl::StrCat("wide-zk-", n), ComparisonKind::kSumZeroOrAtLeast, n,
                        rng() | 1, 4, ComparisonOutput::kEach},
                       sg, se);
    ExpectMatchesPlain({absl::StrCat("wide-nn-", n), ComparisonKind::kSumNonNegative, n, 0, 4,
                        ComparisonOutput::kEach},
                       sg, se);
    ExpectMatchesPlain({absl::StrCat("wide-argmax-", n), ComparisonKind::kSharedArgmax, n, 0, 4,
                        ComparisonOutput::kEach},
                       concat({random_value(), random_value(), x_high, x}),
                       concat({random_value(), random_value(), zero, zero}));
  }
}

TEST(SecureComparisonTest, ArgmaxOfSharedKeysEqualsPlainWithTiesToTheLowestIndex) {
  std::mt19937_64 rng(32);
  for (const uint32_t n : {1u, 8u, 40u, 64u}) {
    for (const uint64_t keys : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{17}}) {
      std::vector<uint64_t> g(keys), e(keys);
      for (uint64_t j = 0; j < keys; ++j) {
        g[j] = rng() & Mask(n);
        e[j] = rng() & Mask(n);
      }
      ExpectMatchesPlain({absl::StrCat("argmax-", n, "-", keys), ComparisonKind::kSharedArgmax, n,
                          0, keys, ComparisonOutput::kEach},
                         g, e);
    }
  }
  // Keys 7, 9, 9, 3 shared as (x, key - x): the first 9 wins.
  const std::vector<uint64_t> keys = {7, 9, 9, 3};
  std::vector<uint64_t> g, e;
  for (uint64_t key : keys) {
    g.push_back(rng() & 0xffff);
    e.push_back((key - g.back()) & 0xffff);
  }
  ASSERT_OK_AND_ASSIGN(
      const Outcome out,
      RunProtocol({"tie", ComparisonKind::kSharedArgmax, 16, 0, 4, ComparisonOutput::kEach}, g, e));
  EXPECT_EQ(out.evaluator.winner, 1u);
  EXPECT_EQ(out.garbler.winner, 1u);
}

TEST(SecureComparisonTest, ManyInstancesAcrossBatchesAndTheirConjunction) {
  std::mt19937_64 rng(33);
  for (const uint64_t count : {uint64_t{1025}, uint64_t{2500}}) {
    std::vector<uint64_t> g(count), e(count);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t size = (i % 7 == 0) ? 0 : 20 + rng() % 50;  // empty or at least 20
      g[i] = rng() & 0xffffffff;
      e[i] = (size - g[i]) & 0xffffffff;
    }
    ComparisonSpec spec{
        absl::StrCat("groups-", count), ComparisonKind::kSumZeroOrAtLeast, 32, 20, count,
        ComparisonOutput::kAll};
    ExpectMatchesPlain(spec, g, e);
    ASSERT_OK_AND_ASSIGN(Outcome out, RunProtocol(spec, g, e));
    EXPECT_TRUE(out.evaluator.all);
    EXPECT_EQ(out.messages[4].size(), 37u + 16u);  // one output label: only the conjunction
    // One group of 19 records (K - 1) makes the conjunction fail, for both sides.
    e[count / 2] = (19 - g[count / 2]) & 0xffffffff;
    ExpectMatchesPlain(spec, g, e);
    ASSERT_OK_AND_ASSIGN(out, RunProtocol(spec, g, e));
    EXPECT_FALSE(out.evaluator.all);
    EXPECT_FALSE(out.garbler.all);
    spec.output = ComparisonOutput::kEach;
    spec.instance += "-each";
    ExpectMatchesPlain(spec, g, e);
  }
}

// Each message's bits, over many runs, have the same frequencies whichever input the other side
// holds (both inputs give the same result). A message that carried the input would differ by
// about 1 in some bit's frequency (z about 12 for 150 runs each); 6 standard deviations over the
// few thousand bits compared has a false-alarm probability below 10^-5. The statistic is shown
// to catch a transcript that leaks the input (the control at the end).
class TranscriptFrequencies {
 public:
  void Add(int input, const std::string& bytes) {
    auto& counts = ones_[input];
    if (counts.empty()) counts.assign(bytes.size() * 8, 0);
    ASSERT_EQ(counts.size(), bytes.size() * 8) << "message sizes differ between inputs";
    for (size_t k = 0; k < counts.size(); ++k) counts[k] += (bytes[k / 8] >> (k % 8)) & 1;
    ++runs_[input];
  }
  // The largest |z| of the two-sample difference of proportions over all bits (0 for constant
  // bits).
  double MaxZ() const {
    double worst = 0;
    for (size_t k = 0; k < ones_[0].size(); ++k) {
      const double p0 = static_cast<double>(ones_[0][k]) / runs_[0];
      const double p1 = static_cast<double>(ones_[1][k]) / runs_[1];
      const double p = (ones_[0][k] + ones_[1][k]) / static_cast<double>(runs_[0] + runs_[1]);
      const double se = std::sqrt(p * (1 - p) * (1.0 / runs_[0] + 1.0 / runs_[1]));
      if (se > 0) worst = std::max(worst, std::abs(p0 - p1) / se);
    }
    return worst;
  }

 private:
  std::vector<int> ones_[2];
  int runs_[2] = {0, 0};
};

TEST(SecureComparisonTest, EachSideSeesTheSameDistributionWhateverTheOtherHolds) {
  // [g > e] with 12-bit inputs, (g, e) = (3000, 2000) or (2100, 1234): true in both. The
  // evaluator's view (messages 2 and 4) and the garbler's (messages 3 and 5) are compared between
  // the two input pairs.
  constexpr int kRuns = 150;
  TranscriptFrequencies evaluator_view[2];
  TranscriptFrequencies garbler_view[2];
  TranscriptFrequencies leaky;  // control: message 4 with the garbler's input's low byte
  const ComparisonSpec spec{"view", ComparisonKind::kGreaterThan, 12, 0,
                            1,      ComparisonOutput::kEach};
  for (int run = 0; run < kRuns; ++run) {
    for (int which = 0; which < 2; ++which) {
      const uint64_t g = which == 0 ? 3000 : 2100;
      const uint64_t e = which == 0 ? 2000 : 1234;
      ASSERT_OK_AND_ASSIGN(const Outcome out, RunProtocol(spec, {g}, {e}));
      ASSERT_EQ(out.evaluator.each, std::vector<uint8_t>{1});
      evaluator_view[0].Add(which, out.messages[1]);
      evaluator_view[1].Add(which, out.messages[3]);
      garbler_view[0].Add(which, out.messages[2]);
      garbler_view[1].Add(which, out.messages[4]);
      leaky.Add(which, out.messages[3] + std::string(1, static_cast<char>(g & 0xff)));
    }
  }
  EXPECT_LT(evaluator_view[0].MaxZ(), 6.0);
  EXPECT_LT(evaluator_view[1].MaxZ(), 6.0);
  EXPECT_LT(garbler_view[0].MaxZ(), 6.0);
  EXPECT_LT(garbler_view[1].MaxZ(), 6.0);
  EXPECT_GT(leaky.MaxZ(), 6.0);  // 3000 = 0xbb8 and 2100 = 0x834 differ in their low byte
}

struct Sides {
  std::unique_ptr<ComparisonGarbler> garbler;
  std::unique_ptr<ComparisonEvaluator> evaluator;
};

Sides Make(const std::string& instance) {
  const ComparisonSpec spec{
      instance, ComparisonKind::kSumZeroOrAtLeast, 16, 5, 3, ComparisonOutput::kEach};
  return {*ComparisonGarbler::Create(spec, {1, 2, 3}),
          *ComparisonEvaluator::Create(spec, {4, 0, 1})};
}

TEST(SecureComparisonTest, ReplayedReorderedForgedAndMixedMessagesAreRefusedByName) {
  using absl::StatusCode;
  Sides a = Make("job-1/round-3/final-check/0");
  Sides b = Make("job-1/round-3/final-check/1");
  ASSERT_OK_AND_ASSIGN(const std::string a1, a.evaluator->Start());
  ASSERT_OK_AND_ASSIGN(const std::string b1, b.evaluator->Start());
  // Mixed between instances: b's message given to a.
  EXPECT_THAT(a.garbler->AnswerBase(b1),
              StatusIs(StatusCode::kPermissionDenied, "another comparison instance"));
  // Not a comparison message; wrong size.
  EXPECT_THAT(a.garbler->AnswerBase("GARBAGE-that-is-long-enough-for-a-header-000000"),
              StatusIs(StatusCode::kInvalidArgument, "not a comparison message"));
  EXPECT_THAT(a.garbler->AnswerBase(a1 + "x"),
              StatusIs(StatusCode::kInvalidArgument, "body is 34 bytes, expected 33"));
  ASSERT_OK_AND_ASSIGN(const std::string a2, a.garbler->AnswerBase(a1));
  // Replayed: message 1 again.
  EXPECT_THAT(a.garbler->AnswerBase(a1),
              StatusIs(StatusCode::kFailedPrecondition, "AnswerBase called out of order"));
  // Reordered: message 1 where message 3 is expected.
  EXPECT_THAT(a.garbler->Garble(a1),
              StatusIs(StatusCode::kFailedPrecondition,
                       "a step 1 message where step 3 was expected (replayed or reordered)"));
  EXPECT_THAT(a.evaluator->Evaluate(a2),
              StatusIs(StatusCode::kFailedPrecondition, "Evaluate called out of order"));
  ASSERT_OK_AND_ASSIGN(std::string a3, a.evaluator->Extend(a2));
  // Forged: a changed byte of the OT extension fails its check.
  std::string forged3 = a3;
  forged3[100] ^= 1;
  EXPECT_THAT(a.garbler->Garble(forged3),
              StatusIs(StatusCode::kPermissionDenied, "consistency check failed"));
  // The garbler's instance is spent after a refused message 3: no second try.
  EXPECT_THAT(a.garbler->Garble(a3), StatusIs(StatusCode::kFailedPrecondition, "out of order"));

  // A fresh pair runs through; then a forged message 5 (an output label changed) is refused.
  Sides c = Make("job-1/round-3/final-check/2");
  ASSERT_OK_AND_ASSIGN(const std::string c1, c.evaluator->Start());
  ASSERT_OK_AND_ASSIGN(const std::string c2, c.garbler->AnswerBase(c1));
  ASSERT_OK_AND_ASSIGN(const std::string c3, c.evaluator->Extend(c2));
  ASSERT_OK_AND_ASSIGN(const std::string c4, c.garbler->Garble(c3));
  ASSERT_OK_AND_ASSIGN(std::string c5, c.evaluator->Evaluate(c4));
  EXPECT_EQ(c.evaluator->result().each, (std::vector<uint8_t>{1, 0, 0}));  // 5, 2, 4 against K=5
  std::string forged5 = c5;
  forged5[37 + 16 + 3] ^= 0x10;  // output label 1
  EXPECT_THAT(c.garbler->Finish(forged5),
              StatusIs(StatusCode::kPermissionDenied, "output label 1 is not one the circuit has"));
  EXPECT_THAT(c.garbler->Finish(c5), StatusIs(StatusCode::kFailedPrecondition, "out of order"));

  Sides d = Make("job-1/round-3/final-check/3");
  ASSERT_OK_AND_ASSIGN(const std::string d1, d.evaluator->Start());
  ASSERT_OK_AND_ASSIGN(const std::string d2, d.garbler->AnswerBase(d1));
  ASSERT_OK_AND_ASSIGN(const std::string d3, d.evaluator->Extend(d2));
  ASSERT_OK_AND_ASSIGN(std::string d4, d.garbler->Garble(d3));
  // A forged label of the garbler's first input bit makes the evaluator's output labels invalid
  // (the bit reaches the output through AND gates), which the garbler then refuses.
  d4[37 + 3 * 16 * 16 + 8] ^= 0x55;
  ASSERT_OK_AND_ASSIGN(const std::string d5, d.evaluator->Evaluate(d4));
  EXPECT_THAT(d.garbler->Finish(d5),
              StatusIs(StatusCode::kPermissionDenied, "not one the circuit"));
}

TEST(SecureComparisonTest, SpecsAndInputsOutsideTheirRangesAreRefused) {
  using absl::StatusCode;
  const auto invalid = [](const ComparisonSpec& spec) {
    return ValidateComparisonSpec(spec).code() == StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(invalid({"", ComparisonKind::kGreaterThan, 8, 0, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid({"x", ComparisonKind::kGreaterThan, 0, 0, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid(
      {"x", ComparisonKind::kGreaterThan, kMaxComparisonBits + 1, 0, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid({"x", ComparisonKind::kGreaterThan, 8, 1, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid({"x", ComparisonKind::kGreaterThan, 8, 0, 0, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid({"x", ComparisonKind::kSumZeroOrAtLeast, 8, 0, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(
      invalid({"x", ComparisonKind::kSumZeroOrAtLeast, 8, 256, 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid({"x", ComparisonKind::kSharedArgmax, 8, 0, 2, ComparisonOutput::kAll}));
  EXPECT_TRUE(invalid(
      {"x", ComparisonKind::kSharedArgmax, 8, 0, kMaxArgmaxKeys + 1, ComparisonOutput::kEach}));
  EXPECT_TRUE(invalid(
      {"x", ComparisonKind::kGreaterThan, 8, 0, kMaxComparisonCount + 1, ComparisonOutput::kEach}));
  const ComparisonSpec ok{"x", ComparisonKind::kGreaterThan, 8, 0, 2, ComparisonOutput::kEach};
  EXPECT_THAT(ComparisonGarbler::Create(ok, {1, 256}).status(),
              StatusIs(StatusCode::kInvalidArgument, "input 1 does not fit in 8 bits"));
  EXPECT_THAT(ComparisonEvaluator::Create(ok, {1}).status(),
              StatusIs(StatusCode::kInvalidArgument, "gave 1 words for 2 inputs of 1 words"));
  // The digest binds every field.
  ComparisonSpec other = ok;
  other.count = 3;
  EXPECT_NE(ComparisonSpecDigest(ok), ComparisonSpecDigest(other));
  other = ok;
  other.instance = "y";
  EXPECT_NE(ComparisonSpecDigest(ok), ComparisonSpecDigest(other));
}

// The stream a kept seed feeds (crypto/random_stream.h): draw i is AES-128-CTR under the first 16
// bytes of SHA-256(domain || "5:label" || seed || i as 8 bytes little-endian); the expected bytes
// were computed with Python's hashlib and `openssl enc -aes-128-ctr`.
TEST(SecureComparisonTest, TheSeededRandomStreamMatchesItsKnownAnswer) {
  std::string seed(32, '\0');
  for (int i = 0; i < 32; ++i) seed[static_cast<size_t>(i)] = static_cast<char>(i);
  ASSERT_OK_AND_ASSIGN(mpc::RandomStream stream, mpc::RandomStream::FromSeed(seed, "label"));
  uint8_t first[20];
  uint8_t second[20];
  ASSERT_OK(stream.Fill(first, sizeof(first)));
  ASSERT_OK(stream.Fill(second, sizeof(second)));
  EXPECT_EQ(absl::BytesToHexString(std::string(reinterpret_cast<char*>(first), 20)),
            "735b82971759316b8699aafc4e679a1fadd0e93d");
  EXPECT_EQ(absl::BytesToHexString(std::string(reinterpret_cast<char*>(second), 20)),
            "600dca38048e6e3e9a4b97e2dedb27404c5950ea");
  EXPECT_THAT(mpc::RandomStream::FromSeed(seed.substr(1), "label").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "32 bytes"));
}

// With kept seeds a side sends the same messages again, so a party restarted in the middle of an
// instance runs its answered steps again and goes on: here a new evaluator, built from the same
// seed and fed the garbler's messages it had received, sends the same messages and finishes the
// instance with the garbler that never restarted. Other seeds give other messages.
TEST(SecureComparisonTest, AKeptSeedReplaysTheSameMessagesSoAnInstanceResumesAfterARestart) {
  const ComparisonSpec spec{.instance = "resume",
                            .kind = ComparisonKind::kSharedArgmax,
                            .bits = 193,
                            .count = 3,
                            .output = ComparisonOutput::kEach};
  const uint32_t words = ComparisonWords(spec.bits);
  std::vector<uint64_t> g(3 * words, 0);
  std::vector<uint64_t> e(3 * words, 0);
  g[0 * words + 3] = 1;  // key 0: 2^192
  g[1 * words + 2] = 5;  // key 1: 2^192 + 5 * 2^128 (shares: the top bit from e)
  e[1 * words + 3] = 1;
  e[2 * words + 0] = 7;  // key 2: 7
  const std::string g_seed(kComparisonSeedBytes, 'g');
  const std::string e_seed(kComparisonSeedBytes, 'e');
  ASSERT_OK_AND_ASSIGN(const Outcome first, RunProtocol(spec, g, e, g_seed, e_seed));
  ASSERT_OK_AND_ASSIGN(const Outcome again, RunProtocol(spec, g, e, g_seed, e_seed));
  EXPECT_EQ(first.messages, again.messages);
  EXPECT_EQ(first.evaluator.winner, 1u);
  EXPECT_EQ(first.garbler.winner, 1u);
  ASSERT_OK_AND_ASSIGN(const Outcome other,
                       RunProtocol(spec, g, e, std::string(kComparisonSeedBytes, 'G'),
                                   std::string(kComparisonSeedBytes, 'E')));
  for (size_t m = 0; m < 4; ++m) EXPECT_NE(other.messages[m], first.messages[m]) << m;
  EXPECT_EQ(other.evaluator.winner, 1u);

  // The evaluator restarts after message 3 left: the new one answers 2 again and goes on.
  ASSERT_OK_AND_ASSIGN(auto garbler, ComparisonGarbler::Create(spec, g, g_seed));
  ASSERT_OK_AND_ASSIGN(auto evaluator, ComparisonEvaluator::Create(spec, e, e_seed));
  ASSERT_OK_AND_ASSIGN(const std::string m1, evaluator->Start());
  ASSERT_OK_AND_ASSIGN(const std::string m2, garbler->AnswerBase(m1));
  ASSERT_OK_AND_ASSIGN(const std::string m3, evaluator->Extend(m2));
  evaluator.reset();
  ASSERT_OK_AND_ASSIGN(auto restarted, ComparisonEvaluator::Create(spec, e, e_seed));
  ASSERT_OK_AND_ASSIGN(const std::string m1_again, restarted->Start());
  EXPECT_EQ(m1_again, m1);
  ASSERT_OK_AND_ASSIGN(const std::string m3_again, restarted->Extend(m2));
  EXPECT_EQ(m3_again, m3);
  ASSERT_OK_AND_ASSIGN(const std::string m4, garbler->Garble(m3));
  ASSERT_OK_AND_ASSIGN(const std::string m5, restarted->Evaluate(m4));
  EXPECT_EQ(restarted->result().winner, 1u);
  ASSERT_OK_AND_ASSIGN(const ComparisonResult g_result, garbler->Finish(m5));
  EXPECT_EQ(g_result.winner, 1u);

  EXPECT_THAT(ComparisonGarbler::Create(spec, g, "short").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "32 bytes"));
  EXPECT_THAT(ComparisonEvaluator::Create(spec, e, "short").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "32 bytes"));
}

// ComparisonSide, the one mapping of an instance's six steps (1, 3, 5 the evaluator's; 2, 4, 6 the
// garbler's) used by every protocol on the comparison: driven step by step it gives both sides
// the plain result (here a bin check: a masked total and minus its mask, at least K or empty);
// a step out of order or of the other role is refused by name, and a side that failed is spent.
TEST(SecureComparisonTest, ASideDrivenByNumberedStepsGivesThePlainResultAndRefusesOtherSteps) {
  const ComparisonSpec spec{.instance = "side",
                            .kind = ComparisonKind::kSumZeroOrAtLeast,
                            .bits = 64,
                            .threshold = 10,
                            .count = 3,
                            .output = ComparisonOutput::kAll};
  const std::vector<uint64_t> mask = {0x1234567890abcdefULL, 5, ~uint64_t{0}};
  for (const std::vector<uint64_t>& totals :
       {std::vector<uint64_t>{12, 0, 10}, std::vector<uint64_t>{12, 9, 10}}) {
    std::vector<uint64_t> g;
    std::vector<uint64_t> e;
    for (size_t i = 0; i < totals.size(); ++i) {
      g.push_back(uint64_t{0} - mask[i]);
      e.push_back(totals[i] + mask[i]);
    }
    ASSERT_OK_AND_ASSIGN(const ComparisonResult plain, ComparePlain(spec, g, e));
    ASSERT_OK_AND_ASSIGN(auto garbler, ComparisonSide::Create(ComparisonRole::kGarbler, spec, g));
    ASSERT_OK_AND_ASSIGN(auto evaluator,
                         ComparisonSide::Create(ComparisonRole::kEvaluator, spec, e));
    EXPECT_EQ(garbler->next_step(), 2);
    EXPECT_EQ(evaluator->next_step(), 1);
    EXPECT_THAT(garbler->Step(1, "").status(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "step 1 out of order (this garbler's next is 2)"));
    std::string message;
    for (int step = 1; step <= kComparisonSteps; ++step) {
      ComparisonSide& side = step % 2 == 1 ? *evaluator : *garbler;
      ASSERT_OK_AND_ASSIGN(message, side.Step(step, message));
    }
    EXPECT_TRUE(message.empty());
    ASSERT_TRUE(garbler->result().has_value());
    ASSERT_TRUE(evaluator->result().has_value());
    EXPECT_EQ(*garbler->result(), plain);
    EXPECT_EQ(*evaluator->result(), plain);
    EXPECT_EQ(plain.all, totals[1] != 9);
    EXPECT_EQ(garbler->next_step(), 0);
    EXPECT_THAT(evaluator->Step(5, "").status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "its part has ended"));
  }
  // A step that fails spends the side.
  ASSERT_OK_AND_ASSIGN(auto garbler, ComparisonSide::Create(ComparisonRole::kGarbler, spec,
                                                            std::vector<uint64_t>(3, 0)));
  EXPECT_FALSE(garbler->Step(2, "not a message").ok());
  EXPECT_EQ(garbler->next_step(), 0);
}

// Base OTs kept for later instances (protocol 4.1's vertical winners): one instance runs them,
// and every later instance between the same two sides starts at step 3 (the evaluator, no
// message) and 4 (the garbler), three messages instead of five, and still gives the plain
// result, for every kind and at several widths. Different instances from one base send
// different messages for the same inputs (fresh OT seeds, tweaks and labels).
struct KeptBases {
  ComparisonBase garbler;
  ComparisonBase evaluator;
};

absl::StatusOr<KeptBases> RunFirstInstance() {
  const ComparisonSpec spec{"first", ComparisonKind::kGreaterThan, 8, 0,
                            1,       ComparisonOutput::kEach};
  absl::StatusOr<std::unique_ptr<ComparisonSide>> g =
      ComparisonSide::Create(ComparisonRole::kGarbler, spec, {7});
  if (!g.ok()) return g.status();
  absl::StatusOr<std::unique_ptr<ComparisonSide>> e =
      ComparisonSide::Create(ComparisonRole::kEvaluator, spec, {9});
  if (!e.ok()) return e.status();
  std::string message;
  for (int step = 1; step <= kComparisonSteps; ++step) {
    ComparisonSide& side = step % 2 == 1 ? **e : **g;
    absl::StatusOr<std::string> next = side.Step(step, message);
    if (!next.ok()) return next.status();
    message = *std::move(next);
  }
  if (!(*g)->base() || !(*e)->base() || (*g)->result()->each != std::vector<uint8_t>{0}) {
    return absl::InternalError("the first instance kept no base OTs or gave a wrong result");
  }
  return KeptBases{*(*g)->base(), *(*e)->base()};
}

// Steps 3 to 6 of an instance from kept bases: the messages 3, 4 and 5, and both results.
absl::StatusOr<Outcome> RunFromKept(const KeptBases& kept, const ComparisonSpec& spec,
                                    std::vector<uint64_t> g, std::vector<uint64_t> e) {
  absl::StatusOr<std::unique_ptr<ComparisonSide>> garbler =
      ComparisonSide::Create(ComparisonRole::kGarbler, spec, std::move(g), {}, &kept.garbler);
  if (!garbler.ok()) return garbler.status();
  absl::StatusOr<std::unique_ptr<ComparisonSide>> evaluator =
      ComparisonSide::Create(ComparisonRole::kEvaluator, spec, std::move(e), {}, &kept.evaluator);
  if (!evaluator.ok()) return evaluator.status();
  if ((*garbler)->next_step() != 4 || (*evaluator)->next_step() != 3) {
    return absl::InternalError("an instance from kept base OTs does not start at steps 3 and 4");
  }
  Outcome out;
  std::string message;
  for (int step = 3; step <= kComparisonSteps; ++step) {
    ComparisonSide& side = step % 2 == 1 ? **evaluator : **garbler;
    absl::StatusOr<std::string> next = side.Step(step, message);
    if (!next.ok()) return next.status();
    message = *std::move(next);
    if (!message.empty()) out.messages.push_back(message);
  }
  if ((*garbler)->base() || (*evaluator)->base()) {
    return absl::InternalError("an instance from kept base OTs claims to have run its own");
  }
  out.garbler = *(*garbler)->result();
  out.evaluator = *(*evaluator)->result();
  return out;
}

TEST(SecureComparisonTest, InstancesFromKeptBaseOtsStartAtStepThreeAndEqualPlainComputation) {
  ASSERT_OK_AND_ASSIGN(const KeptBases kept, RunFirstInstance());
  std::mt19937_64 rng(44);
  int instance = 0;
  for (const ComparisonKind kind :
       {ComparisonKind::kGreaterThan, ComparisonKind::kSumZeroOrAtLeast,
        ComparisonKind::kSumNonNegative, ComparisonKind::kSharedArgmax}) {
    for (const uint32_t bits : {1u, 7u, 64u, 193u}) {
      const uint64_t count = kind == ComparisonKind::kSharedArgmax ? 3 : 4;
      ComparisonSpec spec{
          absl::StrCat("kept/", instance++), kind, bits, 0, count, ComparisonOutput::kEach};
      if (kind == ComparisonKind::kSumZeroOrAtLeast) spec.threshold = bits == 1 ? 1 : 3;
      const uint32_t words = ComparisonWords(bits);
      std::vector<uint64_t> g(count * words);
      std::vector<uint64_t> e(count * words);
      for (size_t i = 0; i < g.size(); ++i) {
        const uint32_t in_word = std::min<uint32_t>(64, bits - (i % words) * 64);
        g[i] = rng() & Mask(in_word);
        e[i] = rng() & Mask(in_word);
      }
      ASSERT_OK_AND_ASSIGN(const ComparisonResult plain, ComparePlain(spec, g, e));
      ASSERT_OK_AND_ASSIGN(const Outcome out, RunFromKept(kept, spec, g, e));
      EXPECT_EQ(out.evaluator, plain) << spec.instance;
      EXPECT_EQ(out.garbler, plain) << spec.instance;
      ASSERT_EQ(out.messages.size(), 3u);
      ASSERT_OK_AND_ASSIGN(const ComparisonCost cost, CostOfComparison(spec));
      // The evaluator saves its message 1 only: a 37-byte header and a 33-byte point.
      EXPECT_EQ(cost.evaluator_bytes - out.messages[0].size() - out.messages[2].size(), 70u);
    }
  }
  // Two instances from one base with the same inputs: every message differs.
  const ComparisonSpec a{"kept/a", ComparisonKind::kGreaterThan, 16, 0, 2, ComparisonOutput::kEach};
  ComparisonSpec b = a;
  b.instance = "kept/b";
  ASSERT_OK_AND_ASSIGN(const Outcome out_a, RunFromKept(kept, a, {5, 6}, {6, 5}));
  ASSERT_OK_AND_ASSIGN(const Outcome out_b, RunFromKept(kept, b, {5, 6}, {6, 5}));
  for (size_t k = 0; k < 3; ++k) EXPECT_NE(out_a.messages[k], out_b.messages[k]) << k;
}

// A kept base refuses what it must: steps 1 and 2 of its instance, a message 2, the other role's
// base; and a base that is not the other side's (another pair's) makes the garbler refuse the
// evaluator's output labels rather than give a result.
TEST(SecureComparisonTest, KeptBaseOtsRefuseTheStepsTheySkipAndAnotherPairsBaseFailsTheCheck) {
  ASSERT_OK_AND_ASSIGN(const KeptBases kept, RunFirstInstance());
  ASSERT_OK_AND_ASSIGN(const KeptBases other_pair, RunFirstInstance());
  const ComparisonSpec spec{"kept/refusals",        ComparisonKind::kGreaterThan, 32, 0, 3,
                            ComparisonOutput::kEach};
  EXPECT_THAT(ComparisonSide::Create(ComparisonRole::kGarbler, spec, {1, 2, 3}, {}, &kept.evaluator)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "given to a garbler"));
  EXPECT_THAT(ComparisonSide::Create(ComparisonRole::kEvaluator, spec, {1, 2, 3}, {}, &kept.garbler)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "given to an evaluator"));
  ASSERT_OK_AND_ASSIGN(auto evaluator, ComparisonSide::Create(ComparisonRole::kEvaluator, spec,
                                                              {1, 2, 3}, {}, &kept.evaluator));
  EXPECT_THAT(evaluator->Step(1, "").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "this evaluator's next is 3"));
  ASSERT_OK_AND_ASSIGN(auto evaluator2, ComparisonSide::Create(ComparisonRole::kEvaluator, spec,
                                                               {1, 2, 3}, {}, &kept.evaluator));
  EXPECT_THAT(evaluator2->Step(3, "a message 2").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "takes no message 2"));
  ASSERT_OK_AND_ASSIGN(auto garbler, ComparisonSide::Create(ComparisonRole::kGarbler, spec,
                                                            {1, 2, 3}, {}, &kept.garbler));
  EXPECT_THAT(garbler->Step(2, "").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "this garbler's next is 4"));

  // The evaluator extends another pair's base: its labels are not the garbler's.
  ASSERT_OK_AND_ASSIGN(
      auto g, ComparisonSide::Create(ComparisonRole::kGarbler, spec, {1, 2, 3}, {}, &kept.garbler));
  ASSERT_OK_AND_ASSIGN(auto e, ComparisonSide::Create(ComparisonRole::kEvaluator, spec, {3, 2, 1},
                                                      {}, &other_pair.evaluator));
  ASSERT_OK_AND_ASSIGN(const std::string m3, e->Step(3, ""));
  const absl::StatusOr<std::string> m4 = g->Step(4, m3);
  if (m4.ok()) {  // the consistency check may pass by chance of the seeds; the labels never do
    const absl::StatusOr<std::string> m5 = e->Step(5, *m4);
    if (m5.ok()) {
      EXPECT_THAT(g->Step(6, *m5).status(),
                  StatusIs(absl::StatusCode::kPermissionDenied, "output label"));
    }
  } else {
    EXPECT_THAT(m4.status(), StatusIs(absl::StatusCode::kPermissionDenied, "consistency check"));
  }
  EXPECT_FALSE(g->result().has_value());
}

// The distribution test above for instances from kept base OTs: one pair of kept bases serves
// every instance, and each instance has its own spec (its own digest, the context its OT seeds,
// check coefficients and hash tweaks derive from), as the callers name theirs. The inputs are the
// fresh test's, (g, e) = (3000, 2000) or (2100, 1234), [g > e] true in both: the evaluator's view
// (message 4) and the garbler's (messages 3 and 5) are compared between the two, 150 instances
// each, |z| below 6 on every bit. Every message's body (past its 37-byte header) differs between
// instances, so the statistic does not pass on constant messages. Two controls show it would
// catch a leak: message 4 with the garbler's input's low byte, as above; and instances that all
// share one spec, whose OT seeds are then the same in each, so that message 3's rows
// u_j = G(k0_j) ^ G(k1_j) ^ r repeat one mask and carry the evaluator's input bits (2000 and 1234
// differ in bits 1, 8 and 9): what a per-instance derivation that failed would show.
TEST(SecureComparisonTest,
     InstancesFromKeptBaseOtsShowEachSideTheSameDistributionWhateverTheOtherHolds) {
  ASSERT_OK_AND_ASSIGN(const KeptBases kept, RunFirstInstance());
  constexpr int kRuns = 150;
  constexpr size_t kHeaderBytes = 37;
  TranscriptFrequencies evaluator_view;   // message 4
  TranscriptFrequencies garbler_view[2];  // messages 3 and 5
  TranscriptFrequencies leaky;            // control: message 4 with g's low byte
  TranscriptFrequencies one_spec;         // control: message 3 when every instance shares a spec
  std::set<std::string> bodies[3];        // messages 3, 4 and 5 past their headers
  const ComparisonSpec shared{.instance = "kept-view/one-spec",
                              .kind = ComparisonKind::kGreaterThan,
                              .bits = 12,
                              .count = 1,
                              .output = ComparisonOutput::kEach};
  for (int run = 0; run < kRuns; ++run) {
    for (int which = 0; which < 2; ++which) {
      const uint64_t g = which == 0 ? 3000 : 2100;
      const uint64_t e = which == 0 ? 2000 : 1234;
      ComparisonSpec spec = shared;  // its own instance name, so its own digest
      spec.instance = absl::StrCat("kept-view/", which, "/", run);
      ASSERT_OK_AND_ASSIGN(const Outcome out, RunFromKept(kept, spec, {g}, {e}));
      ASSERT_EQ(out.evaluator.each, std::vector<uint8_t>{1});
      ASSERT_EQ(out.garbler.each, std::vector<uint8_t>{1});
      ASSERT_EQ(out.messages.size(), 3u);
      garbler_view[0].Add(which, out.messages[0]);
      evaluator_view.Add(which, out.messages[1]);
      garbler_view[1].Add(which, out.messages[2]);
      leaky.Add(which, out.messages[1] + std::string(1, static_cast<char>(g & 0xff)));
      for (size_t k = 0; k < 3; ++k) {
        ASSERT_GT(out.messages[k].size(), kHeaderBytes);
        bodies[k].insert(out.messages[k].substr(kHeaderBytes));
      }
      ASSERT_OK_AND_ASSIGN(const Outcome reused, RunFromKept(kept, shared, {g}, {e}));
      ASSERT_EQ(reused.evaluator.each, std::vector<uint8_t>{1});
      one_spec.Add(which, reused.messages[0]);
    }
  }
  EXPECT_LT(evaluator_view.MaxZ(), 6.0);
  EXPECT_LT(garbler_view[0].MaxZ(), 6.0);
  EXPECT_LT(garbler_view[1].MaxZ(), 6.0);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(bodies[k].size(), 2u * kRuns) << "message " << k + 3;
  EXPECT_GT(leaky.MaxZ(), 6.0);     // 3000 = 0xbb8 and 2100 = 0x834 differ in their low byte
  EXPECT_GT(one_spec.MaxZ(), 6.0);  // each population's bits 1, 8, 9 constant, and opposite
}

}  // namespace
}  // namespace fedanon::crypto
