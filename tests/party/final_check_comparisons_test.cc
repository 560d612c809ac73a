// The two-party final check by secure comparison (party/final_check_comparisons.h) against the
// engine's plain check of the summed counts (engine::CheckFinalCounts): on random layouts and
// counts split between two parties, both parties refuse exactly when the plain check does and
// name the same constraint; boundaries (a group of k - 1, a confidence exactly at its bound);
// steps out of role or order and messages of another instance are refused.
#include "party/final_check_comparisons.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/engine/final_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

using ::fedanon::testing::StatusIs;
using Role = FinalCheckComparisons::Role;

// Two constraints: {a} k=3 bounding 'Divorced' at 0.5, and {a,b} k=2 bounding both tracked values
// at 0.2.
engine::FinalCheckLayout TestLayout(uint64_t groups0, uint64_t groups1) {
  engine::FinalCheckLayout layout;
  layout.tracked = {"Divorced", "Separated"};
  layout.stride = 3;
  engine::FinalCheckConstraint c0;
  c0.description = "{a} k=3";
  c0.k = 3;
  c0.sensitive_mask = 0b01;
  c0.max_conf = 0.5;
  c0.offset = 0;
  c0.groups = groups0;
  engine::FinalCheckConstraint c1;
  c1.description = "{a, b} k=2";
  c1.k = 2;
  c1.sensitive_mask = 0b11;
  c1.max_conf = 0.2;
  c1.offset = groups0 * layout.stride;
  c1.groups = groups1;
  layout.constraints = {c0, c1};
  layout.words = (groups0 + groups1) * layout.stride;
  return layout;
}

struct TwoParty {
  absl::Status garbler;
  absl::Status evaluator;
};

// Runs every instance between a garbler holding `a` and an evaluator holding `b`.
TwoParty RunCheck(const engine::FinalCheckLayout& layout, const std::vector<uint64_t>& a,
                  const std::vector<uint64_t>& b, uint64_t groups_per_instance) {
  absl::StatusOr<std::vector<FinalCheckComparison>> plan =
      PlanFinalCheckComparisons(layout, 1000, "job-1/run-1/7/chain", groups_per_instance);
  EXPECT_TRUE(plan.ok()) << plan.status();
  auto g = *FinalCheckComparisons::Create(*plan, layout, a, Role::kGarbler);
  auto e = *FinalCheckComparisons::Create(*plan, layout, b, Role::kEvaluator);
  for (size_t i = 0; i < plan->size(); ++i) {
    std::string m = *e->Step(i, 1, "");
    m = *g->Step(i, 2, m);
    m = *e->Step(i, 3, m);
    m = *g->Step(i, 4, m);
    m = *e->Step(i, 5, m);
    EXPECT_EQ(*g->Step(i, 6, m), "");
  }
  return {g->Verdict(), e->Verdict()};
}

// The constraint the plain check names (descriptions are unique in TestLayout).
std::string NamedConstraint(const engine::FinalCheckLayout& layout, const absl::Status& s) {
  for (const auto& c : layout.constraints) {
    if (absl::StrContains(s.message(), absl::StrCat("final check failed: ", c.description, ":"))) {
      return c.description;
    }
  }
  return "";
}

TEST(FinalCheckComparisonsTest, BothPartiesRefuseExactlyWhenThePlainCheckDoes) {
  std::mt19937_64 rng(41);
  int passed = 0;
  int refused = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const engine::FinalCheckLayout layout = TestLayout(1 + rng() % 9, 1 + rng() % 12);
    std::vector<uint64_t> a(layout.words, 0), b(layout.words, 0), total(layout.words, 0);
    for (const auto& c : layout.constraints) {
      for (uint64_t grp = 0; grp < c.groups; ++grp) {
        const uint64_t at = c.offset + grp * layout.stride;
        // Mostly groups that hold (empty, or >= k with few sensitive records); now and then any.
        const bool wild = rng() % (trial % 3 == 0 ? 4 : 40) == 0;
        const uint64_t size = wild ? rng() % 6 : (rng() % 3 == 0 ? 0 : c.k + rng() % 20);
        const uint64_t divorced = wild ? rng() % (size + 1) : size / 6;
        const uint64_t separated = wild ? rng() % (size - divorced + 1) : size / 7;
        const uint64_t size_a = rng() % (size + 1);
        const uint64_t div_a = std::min(divorced, rng() % (size_a + 1));
        const uint64_t sep_a = std::min(separated, rng() % (size_a - div_a + 1));
        a[at] = size_a;
        a[at + 1] = div_a;
        a[at + 2] = sep_a;
        b[at] = size - size_a;
        b[at + 1] = divorced - div_a;
        b[at + 2] = separated - sep_a;
        total[at] = size;
        total[at + 1] = divorced;
        total[at + 2] = separated;
      }
    }
    const absl::Status plain = engine::CheckFinalCounts(layout, total);
    const TwoParty two = RunCheck(layout, a, b, 2 + rng() % 5);
    EXPECT_EQ(two.garbler.ok(), plain.ok()) << trial << ": " << plain << " / " << two.garbler;
    EXPECT_EQ(two.evaluator.ok(), plain.ok()) << trial << ": " << plain << " / " << two.evaluator;
    if (plain.ok()) {
      ++passed;
      continue;
    }
    ++refused;
    const std::string named = NamedConstraint(layout, plain);
    ASSERT_FALSE(named.empty()) << plain;
    EXPECT_THAT(two.garbler, StatusIs(absl::StatusCode::kFailedPrecondition,
                                      absl::StrCat("final check failed: ", named, ": among")));
    EXPECT_EQ(two.garbler, two.evaluator);
  }
  EXPECT_GT(passed, 0);
  EXPECT_GT(refused, 0);
}

TEST(FinalCheckComparisonsTest, AGroupOfKMinusOneAndABoundExactlyMetOrJustExceeded) {
  const engine::FinalCheckLayout layout = TestLayout(1, 1);
  // {a}: 3 records (k) with 1 'Divorced' in the first constraint; {a,b}: 5 records, 1 of each.
  std::vector<uint64_t> a = {2, 1, 0, 3, 1, 0};
  std::vector<uint64_t> b = {1, 0, 0, 2, 0, 1};
  TwoParty two = RunCheck(layout, a, b, 8);
  ASSERT_OK(two.garbler);
  ASSERT_OK(two.evaluator);  // 1/5 = 0.2 exactly: within the bound
  // 2 of 5 'Separated' in {a,b}: 0.4 > 0.2.
  b[5] = 2;
  b[3] = 2;
  a[3] = 3;
  two = RunCheck(layout, a, b, 8);
  EXPECT_THAT(two.garbler, StatusIs(absl::StatusCode::kFailedPrecondition,
                                    "{a, b} k=2: among groups 0 to 0 of 1, a group infers "
                                    "'Separated' with confidence above 0.2"));
  EXPECT_EQ(two.evaluator, two.garbler);
  // The first constraint's group holds k - 1 = 2 records: both refuse, whatever the leader says.
  b = {0, 0, 0, 2, 0, 1};
  two = RunCheck(layout, a, b, 8);
  EXPECT_THAT(two.garbler,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "{a} k=3: among groups 0 to 0 of 1, a group holds fewer than 3"));
  EXPECT_EQ(two.evaluator, two.garbler);
}

TEST(FinalCheckComparisonsTest, StepsOutOfRoleOrOrderAndOtherInstancesMessagesAreRefused) {
  const engine::FinalCheckLayout layout = TestLayout(2, 2);
  const std::vector<uint64_t> counts(layout.words, 0);
  ASSERT_OK_AND_ASSIGN(const std::vector<FinalCheckComparison> plan,
                       PlanFinalCheckComparisons(layout, 1000, "p", 1));
  ASSERT_GE(plan.size(), 2u);
  auto g = *FinalCheckComparisons::Create(plan, layout, counts, Role::kGarbler);
  auto e = *FinalCheckComparisons::Create(plan, layout, counts, Role::kEvaluator);
  EXPECT_THAT(g->Step(0, 1, ""),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not this party's"));
  EXPECT_THAT(e->Step(plan.size(), 1, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not exist"));
  ASSERT_OK_AND_ASSIGN(const std::string m0, e->Step(0, 1, ""));
  ASSERT_OK_AND_ASSIGN(const std::string m1, e->Step(1, 1, ""));
  EXPECT_THAT(e->Step(0, 1, ""), StatusIs(absl::StatusCode::kFailedPrecondition, "replayed"));
  // Instance 1's message given as instance 0's: another instance, refused by the primitive, and
  // instance 0 is spent at the garbler.
  EXPECT_THAT(g->Step(0, 2, m1),
              StatusIs(absl::StatusCode::kPermissionDenied, "another comparison instance"));
  EXPECT_THAT(g->Step(0, 2, m0), StatusIs(absl::StatusCode::kFailedPrecondition, "already ended"));
  EXPECT_THAT(g->Verdict(), StatusIs(absl::StatusCode::kFailedPrecondition, "have not ended"));
}

// Constraints with the same k share instances (one per chunk of their groups together), and a
// refusal names the constraints of the instance that failed.
TEST(FinalCheckComparisonsTest, ConstraintsWithOneConditionShareInstances) {
  engine::FinalCheckLayout layout = TestLayout(3, 4);
  layout.constraints[1].k = 3;
  layout.constraints[1].description = "{a, b} k=3";
  layout.constraints[0].sensitive_mask = 0;
  layout.constraints[1].sensitive_mask = 0;
  ASSERT_OK_AND_ASSIGN(const std::vector<FinalCheckComparison> plan,
                       PlanFinalCheckComparisons(layout, 1000, "p", 5));
  ASSERT_EQ(plan.size(), 2u);  // 7 groups of k=3 in chunks of 5
  ASSERT_EQ(plan[0].segments.size(), 2u);
  EXPECT_EQ(plan[0].segments[1].count, 2u);
  EXPECT_EQ(plan[1].segments[0].first_group, 2u);
  std::vector<uint64_t> a(layout.words, 0), b(layout.words, 0);
  for (uint64_t g = 0; g < 7; ++g) a[g * layout.stride] = 3;  // every group holds 3
  ASSERT_OK(RunCheck(layout, a, b, 5).garbler);
  b[1 * layout.stride] = 0;
  a[1 * layout.stride] = 2;  // {a}'s group 1 holds 2
  const TwoParty two = RunCheck(layout, a, b, 5);
  EXPECT_THAT(two.garbler,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "final check failed: among {a} k=3 (groups 0 to 2 of 3), {a, b} k=3 "
                       "(groups 0 to 1 of 4), a group holds fewer than 3 records"));
  EXPECT_EQ(two.evaluator, two.garbler);
}

TEST(FinalCheckComparisonsTest, PlansNameWhatTheyCannotCheck) {
  engine::FinalCheckLayout layout = TestLayout(1, 1);
  layout.distribution = engine::SensitiveDistribution{};
  EXPECT_THAT(PlanFinalCheckComparisons(layout, 1000, "p"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "cannot check ldiversity"));
  layout = TestLayout(1, 1);
  layout.constraints[1].max_conf = -1;
  EXPECT_THAT(PlanFinalCheckComparisons(layout, 1000, "p"),
              StatusIs(absl::StatusCode::kInvalidArgument, "bounds confidence at -1"));
  // A bound of 1 or more always holds: no instance for it.
  layout = TestLayout(3, 1);
  layout.constraints[0].max_conf = 1.0;
  layout.constraints[1].sensitive_mask = 0;
  ASSERT_OK_AND_ASSIGN(const std::vector<FinalCheckComparison> plan,
                       PlanFinalCheckComparisons(layout, 1000, "p", 2));
  ASSERT_EQ(plan.size(), 3u);  // {a}: 2 chunks of sizes; {a,b}: 1
  EXPECT_EQ(plan[0].spec.count, 2u);
  EXPECT_EQ(plan[1].segments[0].first_group, 2u);
  EXPECT_EQ(plan[2].segments[0].constraint, 1u);
}

}  // namespace
}  // namespace fedanon::party
