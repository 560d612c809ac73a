// Known answers for the scores and the ranking shared by the TDS loop and the sequential-release
// loop (common/engine/candidate_score.h).
#include "common/engine/candidate_score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/engine/hierarchy.h"
#include "common/table/dataset.h"
#include "common/table/taxonomy.h"

namespace fedanon::testing {
namespace {

using engine::CandidateRank;
using engine::CandidateScore;
using engine::RanksAbove;
using engine::ScoreInputs;
using fedanon::v1::ScoreFunction;

TEST(CandidateScoreTest, EachScoreFunction) {
  ScoreInputs in;
  in.info_gain = 0.6;
  in.split_info = 1.5;
  in.priv_loss = 2;
  in.discernibility = 40;
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_INFOGAIN, in), 0.6);
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_UNSPECIFIED, in), 0.6);
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_GAINRATIO, in), 0.4);
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS, in), 0.2);
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY, in), 40);
  // Thesis Eq. 6.1: InfoGain(v) = |T[v]|, whatever the class counts say.
  in.distortion_units = 17;
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_DISTORTION, in), 17);
}

TEST(CandidateScoreTest, GainRatioWithoutSplitInfoIsInfoGain) {
  ScoreInputs in;
  in.info_gain = 0.25;
  in.split_info = 0;  // every record in one child (mohammed2011 §4)
  EXPECT_DOUBLE_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_GAINRATIO, in), 0.25);
}

TEST(CandidateScoreTest, WhichInputsAScoreReads) {
  EXPECT_TRUE(engine::ScoreNeedsPrivLoss(fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS));
  EXPECT_FALSE(engine::ScoreNeedsPrivLoss(fedanon::v1::SCORE_FUNCTION_GAINRATIO));
  EXPECT_TRUE(engine::ScoreNeedsDiscernibility(fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY));
  EXPECT_FALSE(engine::ScoreNeedsDiscernibility(fedanon::v1::SCORE_FUNCTION_INFOGAIN));
  // A score function that does not read an input ignores it.
  ScoreInputs a, b;
  a.info_gain = b.info_gain = 0.5;
  b.priv_loss = 7;
  b.discernibility = 9;
  EXPECT_EQ(CandidateScore(fedanon::v1::SCORE_FUNCTION_GAINRATIO, a),
            CandidateScore(fedanon::v1::SCORE_FUNCTION_GAINRATIO, b));
}

TEST(CandidateScoreTest, RankingAndTieBreak) {
  const CandidateRank base{0.5, 2, 3.0, 1};
  CandidateRank higher = base;
  higher.score = 0.6;
  higher.attr = 9;  // the score decides before anything else
  EXPECT_TRUE(RanksAbove(higher, base));
  EXPECT_FALSE(RanksAbove(base, higher));

  CandidateRank lower_attr = base;
  lower_attr.attr = 1;
  lower_attr.order_key = 99;
  EXPECT_TRUE(RanksAbove(lower_attr, base));
  EXPECT_FALSE(RanksAbove(base, lower_attr));

  CandidateRank lower_key = base;
  lower_key.order_key = 2.5;
  lower_key.c = 7;
  EXPECT_TRUE(RanksAbove(lower_key, base));
  EXPECT_FALSE(RanksAbove(base, lower_key));

  CandidateRank lower_c = base;
  lower_c.c = 0;
  EXPECT_TRUE(RanksAbove(lower_c, base));
  EXPECT_FALSE(RanksAbove(base, lower_c));

  // Equal ranks: neither beats the other (the candidate seen first stays the best).
  EXPECT_FALSE(RanksAbove(base, base));
}

// A taxonomy ANY -> {a, b, c}: one candidate on the root, one child per fine child.
struct ThreeLeaves {
  table::QidColumn column;
  std::unique_ptr<engine::AttributeHierarchy> hierarchy;
};

ThreeLeaves MakeThreeLeaves() {
  ThreeLeaves t;
  auto tax = table::Taxonomy::ParseArx("a;ANY\nb;ANY\nc;ANY\n", "test.csv", "x");
  EXPECT_TRUE(tax.ok()) << tax.status();
  t.column.name = "x";
  t.column.kind = table::QidKind::kTaxonomy;
  t.column.taxonomy = std::make_shared<const table::Taxonomy>(std::move(*tax));
  t.hierarchy = std::make_unique<engine::AttributeHierarchy>(&t.column);
  return t;
}

TEST(CandidateScoreTest, MeasureSplitFromClassCounts) {
  const ThreeLeaves t = MakeThreeLeaves();
  ASSERT_EQ(t.hierarchy->FineChildCount(0), 3);
  // Classes per fine child: a (3, 1), b (0, 2), c (1, 1).
  const std::vector<uint64_t> counts = {3, 1, 0, 2, 1, 1};
  const engine::SplitMeasures m = engine::MeasureSplit(*t.hierarchy, 0, 0, counts, 2);
  EXPECT_EQ(m.records, 8u);
  EXPECT_TRUE(m.beneficial);
  // H(4/8, 4/8) = 1; remainder 4/8 H(3/4, 1/4) + 2/8 * 0 + 2/8 * 1.
  const double h31 = -(0.75 * std::log2(0.75) + 0.25 * std::log2(0.25));
  EXPECT_NEAR(m.info_gain, 1 - (0.5 * h31 + 0.25), 1e-12);
  EXPECT_NEAR(m.split_info, 1.5, 1e-12);  // sizes 4, 2, 2
}

// The distortion score's units (thesis Eq. 6.1, §5.5): a taxonomy node removes one unit per
// record generalized to it, a disclosure ⊥ -> {u, ⊥'} only those of the records holding u.
TEST(CandidateScoreTest, DistortionUnitsOfASplitAndOfADisclosure) {
  const ThreeLeaves t = MakeThreeLeaves();
  const std::vector<uint64_t> counts = {3, 1, 0, 2, 1, 1};  // a 4, b 2, c 2 records
  EXPECT_EQ(engine::MeasureSplit(*t.hierarchy, 0, 0, counts, 2).distortion_units, 8u);
  // ⊥ over the same values: disclosing b removes 2 units, a 4, c 2 (the others stay ⊥).
  const std::vector<uint64_t> parent = engine::ParentClassCounts(counts, 2);
  EXPECT_EQ(engine::MeasureDisclosure(parent, counts, 0, 2).distortion_units, 4u);
  EXPECT_EQ(engine::MeasureDisclosure(parent, counts, 1, 2).distortion_units, 2u);
  EXPECT_EQ(engine::MeasureDisclosure(parent, counts, 2, 2).distortion_units, 2u);
  EXPECT_EQ(engine::MeasureDisclosure(parent, counts, 1, 2).records, 8u);
}

TEST(CandidateScoreTest, MeasureSplitOfOneClassIsNotBeneficial) {
  const ThreeLeaves t = MakeThreeLeaves();
  const std::vector<uint64_t> counts = {2, 0, 0, 0, 5, 0};
  const engine::SplitMeasures m = engine::MeasureSplit(*t.hierarchy, 0, 0, counts, 2);
  EXPECT_EQ(m.records, 7u);
  EXPECT_FALSE(m.beneficial);
  EXPECT_EQ(m.info_gain, 0);
}

}  // namespace
}  // namespace fedanon::testing
