// The secure choice of a vertical round's winner (party/vertical_winner_comparison.h): the
// tie-break key orders proposals exactly as the engine's tie-break (engine::RanksAbove), the
// shares add up to the key, and the argmax the two computing parties evaluate over the shares
// names the party the engine would pick, at both of them.
#include "party/vertical_winner_comparison.h"

#include <array>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

using ::fedanon::testing::StatusIs;
using Choice = engine::TopDownSpecializer::Choice;

// -1, 0, 1 as the key's order (most significant word first).
int CompareKeys(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  for (size_t w = kWinnerKeyWords; w-- > 0;) {
    if (a[w] != b[w]) return a[w] > b[w] ? 1 : -1;
  }
  return 0;
}

std::optional<Choice> RandomChoice(std::mt19937_64& rng, bool may_decline) {
  if (may_decline && rng() % 4 == 0) return std::nullopt;
  static constexpr std::array<double, 9> kScores = {-3.5, -1e-300, -0.0, 0.0,  1e-300,
                                                    0.25, 0.5,     1.0,  1e300};
  static constexpr std::array<double, 5> kOrderKeys = {-2.0, -0.0, 0.0, 3.0, 7.5};
  Choice c;
  c.attr = static_cast<int>(rng() % 4);
  c.node = static_cast<engine::NodeIndex>(rng() % 3);
  c.c = static_cast<int>(rng() % 3);
  c.score = kScores[rng() % kScores.size()];
  c.order_key = kOrderKeys[rng() % kOrderKeys.size()];
  return c;
}

TEST(VerticalWinnerKey, OrdersProposalsExactlyAsTheEnginesTieBreak) {
  std::mt19937_64 rng(44);
  int ranked = 0;
  int tied = 0;
  for (int i = 0; i < 20000; ++i) {
    const Choice a = *RandomChoice(rng, false);
    const Choice b = *RandomChoice(rng, false);
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> ka, WinnerKey(a));
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> kb, WinnerKey(b));
    const bool a_beats = engine::TopDownSpecializer::Beats(a, b);
    const bool b_beats = engine::TopDownSpecializer::Beats(b, a);
    const int order = CompareKeys(ka, kb);
    EXPECT_EQ(order > 0, a_beats) << i;
    EXPECT_EQ(order < 0, b_beats) << i;
    ranked += order != 0 ? 1 : 0;
    tied += order == 0 ? 1 : 0;
  }
  EXPECT_GT(ranked, 15000);
  EXPECT_GT(tied, 10);  // equal on all four fields: neither ranks above
}

TEST(VerticalWinnerKey, AnyParticipantOutranksNotParticipateAndBadKeysAreRefused) {
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> none, WinnerKey(std::nullopt));
  EXPECT_EQ(none, std::vector<uint64_t>(kWinnerKeyWords, 0));
  Choice worst;
  worst.attr = 0x7fffffff;
  worst.c = 0x7fffffff;
  worst.score = -1e308;
  worst.order_key = 1e308;
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> k, WinnerKey(worst));
  EXPECT_GT(CompareKeys(k, none), 0);
  Choice nan = worst;
  nan.score = std::nan("");
  EXPECT_THAT(WinnerKey(nan).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "without a tie-break key"));
  Choice negative = worst;
  negative.attr = -1;
  EXPECT_THAT(WinnerKey(negative).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "without a tie-break key"));
}

TEST(VerticalWinnerKey, SharesAddUpToTheKeyAndTravelAsThirtyTwoBytes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> key, WinnerKey(RandomChoice(rng, true)));
    ASSERT_OK_AND_ASSIGN(const auto shares, SplitWinnerKey(key));
    // Add them back modulo 2^193.
    std::vector<uint64_t> sum(kWinnerKeyWords);
    uint64_t carry = 0;
    for (size_t w = 0; w < kWinnerKeyWords; ++w) {
      const uint64_t s = shares.first[w] + shares.second[w];
      const uint64_t c1 = s < shares.first[w] ? 1 : 0;
      sum[w] = s + carry;
      carry = c1 + (sum[w] < s ? 1 : 0);
    }
    sum[kWinnerKeyWords - 1] &= 1;
    EXPECT_EQ(sum, key);
    for (const auto* share : {&shares.first, &shares.second}) {
      const std::string bytes = EncodeWinnerShare(*share);
      EXPECT_EQ(bytes.size(), 32u);
      ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> back, DecodeWinnerShare(bytes));
      EXPECT_EQ(back, *share);
    }
  }
  EXPECT_THAT(DecodeWinnerShare(std::string(31, '\0')).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "31 bytes"));
  std::string high(32, '\0');
  high[24] = 2;  // bit 193
  EXPECT_THAT(DecodeWinnerShare(high).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "193 bits or more"));
}

// Both computing parties' sides over the shares a round would give them, message by message.
absl::StatusOr<std::pair<uint64_t, uint64_t>> RunArgmax(
    const std::vector<std::optional<Choice>>& choices) {
  const size_t n = choices.size();
  std::vector<uint64_t> g(n * kWinnerKeyWords, 0);
  std::vector<uint64_t> e(n * kWinnerKeyWords, 0);
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(const std::vector<uint64_t> key, WinnerKey(choices[i]));
    std::vector<uint64_t> gs(kWinnerKeyWords, 0);
    std::vector<uint64_t> es(kWinnerKeyWords, 0);
    if (i == 0) {
      gs = key;
    } else if (i == 1) {
      es = key;
    } else {
      ASSIGN_OR_RETURN(auto shares, SplitWinnerKey(key));
      gs = shares.first;
      es = shares.second;
    }
    std::copy(gs.begin(), gs.end(), g.begin() + static_cast<ptrdiff_t>(i * kWinnerKeyWords));
    std::copy(es.begin(), es.end(), e.begin() + static_cast<ptrdiff_t>(i * kWinnerKeyWords));
  }
  const std::string instance = WinnerComparisonInstance(3, 7);
  ASSIGN_OR_RETURN(auto garbler, VerticalWinnerComparison::Create(true, instance, n, g, {}));
  ASSIGN_OR_RETURN(auto evaluator, VerticalWinnerComparison::Create(false, instance, n, e, {}));
  std::string m;
  for (int s = 1; s <= crypto::kComparisonSteps; ++s) {
    VerticalWinnerComparison& side = s % 2 == 1 ? *evaluator : *garbler;
    if (side.next_step() != s) return absl::InternalError("next step");
    ASSIGN_OR_RETURN(m, side.Step(s, m));
  }
  if (!garbler->winner() || !evaluator->winner()) return absl::InternalError("no winner");
  return std::make_pair(*garbler->winner(), *evaluator->winner());
}

TEST(VerticalWinnerComparisonTest, TheArgmaxOverSharesNamesTheEnginesBestAtBothParties) {
  std::mt19937_64 rng(2026);
  for (size_t n = 2; n <= 5; ++n) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<std::optional<Choice>> choices(n);
      int best = -1;
      for (size_t i = 0; i < n; ++i) {
        choices[i] = RandomChoice(rng, true);
        if (choices[i]) choices[i]->attr = static_cast<int>(i);  // an attribute is one party's
        if (choices[i] && (best < 0 || engine::TopDownSpecializer::Beats(
                                           *choices[i], *choices[static_cast<size_t>(best)]))) {
          best = static_cast<int>(i);
        }
      }
      if (best < 0) continue;  // every party declined: the round ends without a comparison
      ASSERT_OK_AND_ASSIGN(const auto winners, RunArgmax(choices));
      EXPECT_EQ(winners.first, static_cast<uint64_t>(best)) << n << " " << trial;
      EXPECT_EQ(winners.second, static_cast<uint64_t>(best)) << n << " " << trial;
    }
  }
}

TEST(VerticalWinnerComparisonTest, StepsOutOfTheRolesOrderAreRefused) {
  const std::vector<uint64_t> zeros(2 * kWinnerKeyWords, 0);
  ASSERT_OK_AND_ASSIGN(auto garbler, VerticalWinnerComparison::Create(true, "x", 2, zeros, {}));
  ASSERT_OK_AND_ASSIGN(auto evaluator, VerticalWinnerComparison::Create(false, "x", 2, zeros, {}));
  EXPECT_THAT(garbler->Step(1, "").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "step 1 out of order"));
  EXPECT_THAT(evaluator->Step(3, "").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "step 3 out of order"));
  EXPECT_THAT(VerticalWinnerComparison::Create(true, "x", 1, {0, 0, 0, 0}, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "among 1 parties"));
}

}  // namespace
}  // namespace fedanon::party
