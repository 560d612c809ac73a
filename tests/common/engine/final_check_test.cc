// The party-side check of the final check (common/engine/final_check.h): the model re-checked on
// hand-made global count vectors, the layout over a cut, a holder's local counts, and the cap.
#include "common/engine/final_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "tests/support/status_matchers.h"

namespace fedanon::engine {
namespace {

using fedanon::testing::StatusIs;

// One constraint {g} k=3 conf(flu) <= 0.5 over a cut of two values, one tracked value.
FinalCheckLayout HandMade() {
  FinalCheckLayout layout;
  layout.tracked = {"flu"};
  layout.stride = 2;
  FinalCheckConstraint c;
  c.description = "{g} k=3 conf(flu) <= 0.5";
  c.attrs = {0};
  c.attr_names = {"g"};
  c.cut_labels = {{"ga", "gb"}};
  c.k = 3;
  c.sensitive_mask = 1;
  c.max_conf = 0.5;
  c.offset = 0;
  c.groups = 2;
  layout.constraints.push_back(c);
  layout.words = 4;
  return layout;
}

TEST(FinalCheck, AGroupOfKMinusOneFails) {
  EXPECT_THAT(CheckFinalCounts(HandMade(), {3, 1, 2, 0}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "final check failed: {g} k=3 conf(flu) <= 0.5: group (g=gb) holds 2 "
                       "records, fewer than 3"));
}

TEST(FinalCheck, GroupsOfKPassAndEmptyGroupsDoNotCount) {
  EXPECT_OK(CheckFinalCounts(HandMade(), {3, 1, 3, 0}));
  EXPECT_OK(CheckFinalCounts(HandMade(), {0, 0, 4, 2}));  // conf 2/4 = 0.5 is within the bound
}

TEST(FinalCheck, ConfidenceAboveCFails) {
  EXPECT_THAT(CheckFinalCounts(HandMade(), {4, 3, 3, 0}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "group (g=ga) infers 'flu' with confidence 3/4 = 0.75, above 0.5"));
  // More sensitive records than the group holds: a forged total, refused too.
  EXPECT_THAT(CheckFinalCounts(HandMade(), {3, 4, 3, 0}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "counts 4 records with 'flu'"));
}

TEST(FinalCheck, TotalsNoHonestRingProducesAreRefused) {
  const FinalCheckLayout layout = HandMade();
  const std::vector<uint64_t> own = {1, 0, 2, 1};
  EXPECT_OK(CheckFinalTotalsBounds(layout, {3, 1, 3, 1}, own, 6));
  // A word below this party's own: someone subtracted records.
  EXPECT_THAT(CheckFinalTotalsBounds(layout, {3, 1, 1, 1}, own, 6),
              StatusIs(absl::StatusCode::kDataLoss,
                       "word 2 is 1, below this party's own 2): a party added to the sum what "
                       "it does not hold"));
  // A negative offset mod 2^64: more records than the signed limit allows.
  EXPECT_THAT(CheckFinalTotalsBounds(layout, {3, 1, UINT64_MAX - 5, 1}, own, 6),
              StatusIs(absl::StatusCode::kDataLoss, "hold more than the job's 6 records at most"));
  EXPECT_THAT(CheckFinalTotalsBounds(layout, {3, 1, 4, 1}, own, 6),
              StatusIs(absl::StatusCode::kDataLoss, "hold more than the job's 6 records at most"));
  // Two constraints over the same records must count the same total.
  FinalCheckLayout two = layout;
  FinalCheckConstraint second = two.constraints[0];
  second.description = "{g} k=2";
  second.offset = 4;
  two.constraints.push_back(second);
  two.words = 8;
  EXPECT_OK(CheckFinalTotalsBounds(two, {3, 1, 3, 1, 3, 1, 3, 1}, std::vector<uint64_t>(8, 0), 9));
  EXPECT_THAT(
      CheckFinalTotalsBounds(two, {3, 1, 3, 1, 3, 1, 2, 1}, std::vector<uint64_t>(8, 0), 9),
      StatusIs(absl::StatusCode::kDataLoss,
               "the groups of {g} k=2 hold 5 records, those of {g} k=3 conf(flu) <= 0.5 6"));
}

TEST(FinalCheck, AVectorOfTheWrongLengthIsRefused) {
  EXPECT_THAT(CheckFinalCounts(HandMade(), {3, 1, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, "the layout 4"));
}

TEST(FinalCheck, MultiAttributeGroupsAreNamedByTheirCutValues) {
  // {a, b} k=2 over cuts of 2 x 3 values, no tracked value: group index = pos(a) * 3 + pos(b).
  FinalCheckLayout layout;
  layout.stride = 1;
  FinalCheckConstraint c;
  c.description = "{a, b} k=2";
  c.attrs = {0, 1};
  c.attr_names = {"a", "b"};
  c.cut_labels = {{"a0", "a1"}, {"b0", "b1", "b2"}};
  c.k = 2;
  c.groups = 6;
  layout.constraints.push_back(c);
  layout.words = 6;
  EXPECT_OK(CheckFinalCounts(layout, {2, 0, 5, 0, 9, 2}));
  EXPECT_THAT(CheckFinalCounts(layout, {2, 0, 5, 0, 1, 2}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "group (a=a1, b=b1) holds 1"));
}

constexpr char kSpec[] = R"(name: final-check
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: s, role: sensitive, values: [flu, none]}
privacy: {model: lkc, L: 1, K: 2, C: 0.6, sensitive_values: [flu]}
)";

TEST(FinalCheck, LocalCountsFollowTheCut) {
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(kSpec, "fc.yaml"));
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "final_check_local.csv").string();
  {
    std::ofstream out(path);
    out << "g,s\nga,flu\ngb,flu\ngb,none\ngc,none\ngc,none\n";
  }
  ASSERT_OK_AND_ASSIGN(const table::Dataset schema, table::BuildPublicSchema(spec, {}));
  ASSERT_OK_AND_ASSIGN(const table::Dataset data, table::LoadDataset(spec, path, &schema, {}));
  ASSERT_OK_AND_ASSIGN(const PrivacyModel model, BuildPrivacyModel(spec, data));
  std::vector<AttributeHierarchy> hier;
  for (const auto& q : data.qids) hier.emplace_back(&q);
  Tips tips(&data, &hier);
  // The root cut: one group of 5 records, 2 with flu.
  ASSERT_OK_AND_ASSIGN(FinalCheckLayout root, BuildFinalCheckLayout(model, data, hier, "*"));
  ASSERT_EQ(root.words, 2u);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> counts, LocalFinalCheckCounts(root, data, hier, tips));
  EXPECT_EQ(counts, (std::vector<uint64_t>{5, 2}));
  EXPECT_OK(CheckFinalCounts(root, counts));
  // Disclose the first hidden value: the cut has two values, so 2 groups of 2 words each.
  ASSERT_GT(hier[0].CandidateCount(0), 0);
  hier[0].Specialize(0, 0);
  tips.Specialize(0, 0, 0);
  ASSERT_OK_AND_ASSIGN(FinalCheckLayout cut, BuildFinalCheckLayout(model, data, hier, "*"));
  ASSERT_EQ(cut.words, 2 * cut.constraints[0].groups);
  ASSERT_OK_AND_ASSIGN(counts, LocalFinalCheckCounts(cut, data, hier, tips));
  uint64_t records = 0, flu = 0;
  for (uint64_t g = 0; g < cut.constraints[0].groups; ++g) {
    records += counts[2 * g];
    flu += counts[2 * g + 1];
  }
  EXPECT_EQ(records, 5u);
  EXPECT_EQ(flu, 2u);
  // The disclosed value ga holds one record: the check fails on K=2 and names the group.
  EXPECT_THAT(CheckFinalCounts(cut, counts),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "group (g=ga) holds 1 records, fewer than 2"));
}

TEST(FinalCheck, AVectorAboveTheCapIsANamedError) {
  // 6 attributes of 20 values, each fully disclosed, all in one constraint: 20^6 groups.
  std::string spec_text = "name: cap\nattributes:\n";
  std::string values;
  for (int v = 0; v < 20; ++v) values += absl::StrCat(v == 0 ? "" : ", ", "v", v);
  for (int a = 0; a < 6; ++a) {
    spec_text += absl::StrCat("  - {name: a", a, ", role: qid, values: [", values, "]}\n");
  }
  spec_text += "privacy: {model: lkc, L: 6, K: 2}\n";
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml(spec_text, "cap.yaml"));
  ASSERT_OK_AND_ASSIGN(const table::Dataset schema, table::BuildPublicSchema(spec, {}));
  ASSERT_OK_AND_ASSIGN(const PrivacyModel model, BuildPrivacyModel(spec, schema));
  std::vector<AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  ASSERT_OK(BuildFinalCheckLayout(model, schema, hier, "*").status());  // 1 group: fine
  for (auto& h : hier) {                                                // disclose every value
    for (bool more = true; more;) {
      more = false;
      for (size_t n = 0; n < h.size(); ++n) {
        const auto node = static_cast<NodeIndex>(n);
        if (h.node(node).children.empty() && h.CandidateCount(node) > 0) {
          h.Specialize(node, 0);
          more = true;
        }
      }
    }
  }
  EXPECT_THAT(BuildFinalCheckLayout(model, schema, hier, "*"),
              StatusIs(absl::StatusCode::kResourceExhausted, "exceeds the cap of 16777216 words"));
}

// ldiversity / tcloseness: the constraint's slots carry each group's sensitive histogram after
// its size; every non-empty group must meet the requirement, t-closeness against the sum of the
// histograms (the whole table).
FinalCheckLayout DistributionLayout(SensitiveDistribution d) {
  FinalCheckLayout layout;
  layout.stride = 1;
  layout.hist_words = 3;
  d.domain = 3;
  d.attribute = "disease";
  layout.distribution = d;
  FinalCheckConstraint c;
  c.description = "{g} k=2";
  c.attrs = {0};
  c.attr_names = {"g"};
  c.cut_labels = {{"ga", "gb"}};
  c.k = 2;
  c.groups = 2;
  c.distribution = true;
  layout.constraints.push_back(c);
  layout.words = 8;
  return layout;
}

TEST(FinalCheck, DistinctDiversityOnTheSummedHistograms) {
  SensitiveDistribution d;
  d.kind = SensitiveDistribution::Kind::kDistinct;
  d.l = 2;
  const FinalCheckLayout layout = DistributionLayout(d);
  // ga = {flu 2, hiv 1}: 2 values; gb = {cold 2}: 1 value.
  EXPECT_OK(CheckFinalCounts(layout, {3, 2, 1, 0, 2, 1, 0, 1}));
  EXPECT_THAT(CheckFinalCounts(layout, {3, 2, 1, 0, 2, 0, 0, 2}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "final check failed: {g} k=2: group (g=gb) of 2 records fails distinct "
                       "2-diversity of 'disease'"));
  // A histogram that does not add up to its group's size: a forged total.
  EXPECT_THAT(CheckFinalCounts(layout, {3, 2, 2, 0, 2, 1, 0, 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "group (g=ga) holds 3 records but its sensitive histogram 4"));
}

TEST(FinalCheck, TClosenessAgainstTheWholeTable) {
  SensitiveDistribution d;
  d.kind = SensitiveDistribution::Kind::kCloseness;
  d.distance = fedanon::v1::GROUND_DISTANCE_EQUAL;
  d.t = 0.3;
  const FinalCheckLayout layout = DistributionLayout(d);
  // The table: ga {2, 1, 1} + gb {2, 1, 0} = {4, 2, 1} (Q = 4/7, 2/7, 1/7). ga (1/2, 1/4, 1/4):
  // 1/2 (1/14 + 1/28 + 3/28) = 0.107; gb (2/3, 1/3, 0): 1/2 (2/21 + 1/21 + 3/21) = 1/7 = 0.143.
  EXPECT_OK(CheckFinalCounts(layout, {4, 2, 1, 1, 3, 2, 1, 0}));
  // ga {0, 0, 4}, gb {4, 0, 0}: Q = (1/2, 0, 1/2), each group at distance 1/2 > 0.3.
  EXPECT_THAT(CheckFinalCounts(layout, {4, 0, 0, 4, 4, 4, 0, 0}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "fails 0.3-closeness"));
}

}  // namespace
}  // namespace fedanon::engine
