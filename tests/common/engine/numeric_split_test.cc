// Binned numeric split search (common/engine/numeric_split.h): public cells, bins and the chosen
// threshold of a small table worked out by hand; the least bin size (the model's K, raised by
// min_split_bin, min_split_bin alone for a model without K); the `exact` opt-in reproducing the
// per-value choice; what the engine asks its count source for (captured by a recording source,
// not taken from the engine's own bookkeeping); and the report's numeric_split field.
#include "common/engine/numeric_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_replace.h"
#include "common/base/status_macros.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// x on the grid 0..15 (range [0, 16), precision 1), 8 public cells of 2 ranks each. By hand:
//   cell     [0,2) [2,4) [4,6) [6,8) [8,10) [10,12) [12,14) [14,16)
//   records    2     2     1     3     0      4       1       1
//   classes   YY    YY     Y    NNN          NNNN     N       Y
// K = 3: [0,2)+[2,4) = 4 closes bin [0,4); [4,6)+[6,8) = 4 closes [4,8); [8,10)+[10,12) = 4
// closes [8,12); the tail [12,16) holds 2 < 3 and joins it: bins [0,4) [4,8) [8,16), thresholds
// 4 and 8. InfoGain at 4: 0.4696 (4Y | 2Y 8N), at 8: 0.1613 (5Y 3N | 1Y 5N): the cut is at 4.
// The exact search would cut at 6 (5Y | 1Y 8N, gain 0.6617), inside bin [4,8).
constexpr char kSpec[] = R"(name: numeric
attributes:
  - {name: x, role: qid, type: continuous, range: [0, 16], precision: 1}
  - {name: s, role: sensitive, values: [a, b]}
  - {name: cls, role: class, values: [Y, N]}
PRIVACY
)";
constexpr char kLkc3[] = "privacy: {model: lkc, L: 1, K: 3}";

Table Records() {
  Table t;
  t.header = {"x", "s", "cls"};
  const std::vector<std::pair<int, const char*>> rows = {
      {0, "Y"}, {0, "Y"},  {3, "Y"},  {3, "Y"},  {5, "Y"},  {6, "N"},  {7, "N"},
      {7, "N"}, {10, "N"}, {10, "N"}, {10, "N"}, {10, "N"}, {12, "N"}, {15, "Y"}};
  for (size_t i = 0; i < rows.size(); ++i) {
    t.rows.push_back({std::to_string(rows[i].first), i % 2 ? "a" : "b", rows[i].second});
  }
  return t;
}

std::string Spec(const std::string& privacy, const std::string& extra) {
  return absl::StrReplaceAll(kSpec, {{"PRIVACY", privacy + "\n" + extra}});
}

// Records every request and reply that passes through (what a leader would decode).
class RecordingSource : public engine::CountSource {
 public:
  explicit RecordingSource(engine::CountSource* inner) : inner_(inner) {}
  absl::Status Specialize(int attr, engine::NodeIndex node, int c,
                          const std::vector<uint64_t>& sizes) override {
    return inner_->Specialize(attr, node, c, sizes);
  }
  absl::Status Split(int attr, engine::NodeIndex node, int32_t split) override {
    return inner_->Split(attr, node, split);
  }
  absl::StatusOr<std::vector<uint64_t>> Collect(const engine::StatsRequest& request) override {
    auto reply = inner_->Collect(request);
    if (reply.ok()) log.emplace_back(request, *reply);
    return reply;
  }
  std::vector<std::pair<engine::StatsRequest, std::vector<uint64_t>>> log;

 private:
  engine::CountSource* inner_;
};

struct Harness {
  fedanon::v1::JobSpec spec;
  table::Dataset data;
  engine::PrivacyModel model;
  std::vector<engine::AttributeHierarchy> hier;
  std::unique_ptr<engine::Tips> tips;
  std::unique_ptr<engine::LocalCountSource> local;
  std::unique_ptr<RecordingSource> source;
  std::unique_ptr<engine::TopDownSpecializer> engine;
};

absl::StatusOr<std::unique_ptr<Harness>> MakeHarness(const Job& job) {
  auto h = std::make_unique<Harness>();
  ASSIGN_OR_RETURN(h->spec, spec::LoadJobSpec(job.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(h->spec));
  ASSIGN_OR_RETURN(h->data, table::LoadDataset(h->spec, job.input_path));
  ASSIGN_OR_RETURN(h->model, engine::BuildPrivacyModel(h->spec, h->data));
  for (const auto& q : h->data.qids) h->hier.emplace_back(&q);
  h->tips = std::make_unique<engine::Tips>(&h->data, &h->hier);
  h->local = std::make_unique<engine::LocalCountSource>(h->tips.get());
  h->source = std::make_unique<RecordingSource>(h->local.get());
  engine::EngineOptions opts;
  opts.score = h->spec.score();
  opts.numeric = engine::NumericSplitFromSpec(h->spec);
  ASSIGN_OR_RETURN(h->engine, engine::TopDownSpecializer::Create(&h->data, &h->model, &h->hier,
                                                                 h->source.get(), opts));
  return h;
}

// The total of each range of a labelled range reply (classes summed).
std::vector<uint64_t> RangeTotals(const engine::RangeCountRequest& r,
                                  const std::vector<uint64_t>& words, size_t pos, size_t nc) {
  std::vector<uint64_t> totals;
  for (size_t i = 0; i + 1 < r.bounds.size(); ++i) {
    uint64_t n = 0;
    for (size_t k = 0; k < nc; ++k) n += words[pos + i * nc + k];
    totals.push_back(n);
  }
  return totals;
}

TEST(PublicCells, GridCellsAreEqualWidthUnionsOfRanks) {
  table::QidColumn col;
  col.kind = table::QidKind::kContinuous;
  col.precision = 1;
  col.range_lo = 0;
  col.range_hi = 16;
  for (int i = 0; i < 16; ++i) col.sorted_values.push_back(i);
  EXPECT_THAT(engine::PublicCellBounds(col, 8), ElementsAre(0, 2, 4, 6, 8, 10, 12, 14, 16));
  EXPECT_THAT(engine::PublicCellBounds(col, 5), ElementsAre(0, 4, 8, 12, 16));  // 4 wide: 4 cells
  EXPECT_THAT(engine::PublicCellBounds(col, 1), ElementsAre(0, 16));
  EXPECT_EQ(engine::PublicCellBounds(col, 100).size(), 17u);  // at most one cell per grid value
}

TEST(PublicCells, WithoutAGridCellsCutTheValueRange) {
  table::QidColumn col;
  col.kind = table::QidKind::kContinuous;
  col.range_lo = 1;
  col.range_hi = 100;
  col.sorted_values = {1, 2, 50, 99};  // ranks 0..3
  // Boundaries 1 + 99 i / 4 = 25.75, 50.5, 75.25: ranks 2, 3, 3 (an empty cell is dropped).
  EXPECT_THAT(engine::PublicCellBounds(col, 4), ElementsAre(0, 2, 3, 4));
  col.sorted_values.clear();
  EXPECT_THAT(engine::PublicCellBounds(col, 4), ElementsAre(0));
}

TEST(Bins, CellsMergeLeftToRightIntoBinsOfAtLeastK) {
  const std::vector<int32_t> cells = {0, 2, 4, 6, 8, 10, 12, 14, 16};
  const std::vector<uint64_t> counts = {2, 2, 1, 3, 0, 4, 1, 1};
  EXPECT_THAT(engine::MergeCellsIntoBins(cells, counts, 3), ElementsAre(0, 4, 8, 16));
  EXPECT_THAT(engine::MergeCellsIntoBins(cells, counts, 5), ElementsAre(0, 6, 16));
  EXPECT_THAT(engine::MergeCellsIntoBins(cells, counts, 14), ElementsAre(0, 16));  // one bin
  EXPECT_THAT(engine::MergeCellsIntoBins(cells, counts, 15), IsEmpty());           // < K in all
  // Leading and trailing empty cells belong to the first and last bins.
  EXPECT_THAT(engine::MergeCellsIntoBins(cells, {0, 3, 0, 0, 3, 0, 0, 0}, 3),
              ElementsAre(0, 4, 16));
}

TEST(Bins, LeastBinSizeIsTheModelsKRaisedByMinSplitBin) {
  engine::PrivacyModel lkc;
  lkc.constraints = {{{0}, 20, 1, 0.2}, {{1}, 20, 1, 0.2}};
  EXPECT_EQ(engine::SplitBinBound(lkc, 0), 20u);
  EXPECT_EQ(engine::SplitBinBound(lkc, 5), 20u);  // cannot lower K
  EXPECT_EQ(engine::SplitBinBound(lkc, 50), 50u);
  engine::PrivacyModel templates;
  templates.constraints = {{{0}, 7, 0, 1.0}, {{1}, 4, 0, 1.0}, {{0}, 1, 1, 0.5}};
  EXPECT_EQ(engine::SplitBinBound(templates, 0), 4u);  // the smallest k of the templates
  engine::PrivacyModel confidence_only;
  confidence_only.constraints = {{{0}, 1, 1, 0.5}};
  EXPECT_EQ(engine::SplitBinBound(confidence_only, 0), engine::kDefaultMinSplitBin);
  EXPECT_EQ(engine::SplitBinBound(confidence_only, 7), 7u);
}

TEST(BinnedSplit, TheCutIsTheBestBinBoundaryAndOnlyBinsAreLabelled) {
  const Job job = WriteJob("numeric_binned", Spec(kLkc3, "numeric_cells: 8"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  EXPECT_THAT(h->engine->SplitBins(0), ElementsAre(0, 4, 8, 16));
  EXPECT_EQ(h->hier[0].node(0).split_rank, 4);

  // Before the loop: one unlabelled request over exactly the public cells, one labelled request
  // over the bins, each bin describing >= K = 3 records, then the ordinary node/group request.
  ASSERT_GE(h->source->log.size(), 2u);
  const auto& [cells, cell_counts] = h->source->log[0];
  ASSERT_EQ(cells.range_counts.size(), 1u);
  EXPECT_FALSE(cells.range_counts[0].labelled);
  EXPECT_THAT(cells.range_counts[0].bounds, ElementsAre(0, 2, 4, 6, 8, 10, 12, 14, 16));
  EXPECT_THAT(cell_counts, ElementsAre(2, 2, 1, 3, 0, 4, 1, 1));
  const auto& [bins, bin_counts] = h->source->log[1];
  ASSERT_EQ(bins.range_counts.size(), 1u);
  EXPECT_TRUE(bins.range_counts[0].labelled);
  EXPECT_THAT(bins.range_counts[0].bounds, ElementsAre(0, 4, 8, 16));
  EXPECT_THAT(bin_counts, ElementsAre(4, 0, 1, 3, 1, 5));  // (bin, class Y/N)

  ASSERT_OK(h->engine->Run().status());
  size_t range_requests = 0;
  for (const auto& [request, reply] : h->source->log) {
    EXPECT_TRUE(request.rank_histograms.empty()) << "a per-value histogram was requested";
    range_requests += request.range_counts.size();
    size_t pos = 0;
    for (const auto& r : request.range_counts) {
      if (!r.labelled) {
        pos += r.bounds.size() - 1;
        continue;
      }
      for (uint64_t n : RangeTotals(r, reply, pos, 2)) EXPECT_GE(n, 3u);
      pos += (r.bounds.size() - 1) * 2;
    }
  }
  EXPECT_EQ(range_requests, 2u) << "child intervals must not ask for anything new";
  // Every threshold the run used is a bin boundary.
  for (size_t n = 0; n < h->hier[0].size(); ++n) {
    const int32_t split = h->hier[0].node(static_cast<engine::NodeIndex>(n)).split_rank;
    if (split >= 0) {
      EXPECT_THAT((std::vector<int32_t>{4, 8}), ::testing::Contains(split));
    }
  }
}

TEST(BinnedSplit, MinSplitBinRaisesTheLeastBinSize) {
  const Job job =
      WriteJob("numeric_min_bin", Spec(kLkc3, "numeric_cells: 8\nmin_split_bin: 5"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  EXPECT_THAT(h->engine->SplitBins(0), ElementsAre(0, 6, 16));
  EXPECT_EQ(h->hier[0].node(0).split_rank, 6);
}

TEST(BinnedSplit, ConfidenceOnlyModelsUseMinSplitBin) {
  const std::string confidence =
      "privacy: {model: templates, confidence: [{qid: [x], sensitive_values: [a], max: 1}]}";
  {
    // Default 20 > 14 records: no bin, nothing labelled is asked, the range stays whole.
    const Job job = WriteJob("numeric_conf_default", Spec(confidence, ""), Records());
    ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
    EXPECT_THAT(h->engine->SplitBins(0), IsEmpty());
    EXPECT_EQ(h->hier[0].node(0).split_rank, -1);
    for (const auto& [request, reply] : h->source->log) {
      for (const auto& r : request.range_counts) EXPECT_FALSE(r.labelled);
    }
  }
  const Job job =
      WriteJob("numeric_conf_3", Spec(confidence, "numeric_cells: 8\nmin_split_bin: 3"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  EXPECT_THAT(h->engine->SplitBins(0), ElementsAre(0, 4, 8, 16));
  EXPECT_EQ(h->hier[0].node(0).split_rank, 4);
}

TEST(ExactSplit, TheOptInReproducesThePerValueChoice) {
  const Job job = WriteJob("numeric_exact", Spec(kLkc3, "numeric_split: exact"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  EXPECT_THAT(h->engine->SplitBins(0), IsEmpty());
  // The old rule over the class histogram per rank: 6.
  EXPECT_EQ(engine::ChooseSplitRank(h->tips->RankClassHistogram(0, 0), 2, 0, true), 6);
  EXPECT_EQ(h->hier[0].node(0).split_rank, 6);
  ASSERT_FALSE(h->source->log.empty());
  EXPECT_EQ(h->source->log[0].first.rank_histograms.size(), 1u);
  for (const auto& [request, reply] : h->source->log) EXPECT_TRUE(request.range_counts.empty());
}

TEST(NumericSplitReport, TheReportSaysWhichSearchRan) {
  for (const auto& [extra, mode, text] :
       std::vector<std::tuple<std::string, fedanon::v1::NumericSplit, std::string>>{
           {"numeric_cells: 8", fedanon::v1::NUMERIC_SPLIT_BINNED, "NUMERIC_SPLIT_BINNED"},
           {"numeric_split: exact", fedanon::v1::NUMERIC_SPLIT_EXACT, "NUMERIC_SPLIT_EXACT"}}) {
    const Job job = WriteJob("numeric_report", Spec(kLkc3, extra), Records());
    ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, RunJob(job));
    EXPECT_EQ(report.numeric_split(), mode);
    std::ifstream in(job.report_path);
    std::stringstream json;
    json << in.rdbuf();
    EXPECT_THAT(json.str(), ::testing::HasSubstr("\"numeric_split\": \"" + text + "\""));
    // Both runs are private, truthful and maximal under their own rule (independent checker).
    ASSERT_OK_AND_ASSIGN(CheckerInput checker, MakeCheckerInput(job));
    const PrivacyCheck check = CheckPrivacy(checker);
    EXPECT_TRUE(check.satisfied) << check.violation;
    EXPECT_OK(CheckTruthful(checker));
    EXPECT_OK(CheckMaximal(checker));
  }
}

TEST(NumericSplitRequests, RangeRequestsTravelAndMalformedOnesAreRefused) {
  const Job job = WriteJob("numeric_wire", Spec(kLkc3, "numeric_cells: 8"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  engine::StatsRequest request;
  request.range_counts.push_back({0, {0, 4, 8, 16}, true});
  ASSERT_OK_AND_ASSIGN(engine::StatsRequest back, wire::FromProto(wire::ToProto(request), h->hier));
  EXPECT_EQ(back.range_counts, request.range_counts);
  for (const std::vector<int32_t>& bounds :
       std::vector<std::vector<int32_t>>{{0}, {4, 4, 8}, {8, 4}, {-1, 4}, {0, 17}}) {
    engine::StatsRequest bad;
    bad.range_counts.push_back({0, bounds, false});
    EXPECT_THAT(wire::FromProto(wire::ToProto(bad), h->hier),
                StatusIs(absl::StatusCode::kInvalidArgument, "increasing rank bounds"));
  }
  engine::StatsRequest not_continuous;
  not_continuous.range_counts.push_back({3, {0, 1}, false});
  EXPECT_THAT(wire::FromProto(wire::ToProto(not_continuous), h->hier),
              StatusIs(absl::StatusCode::kInvalidArgument, "not continuous"));
}

TEST(NumericSplitRequests, HoldersRefuseFinerThanPublicCells) {
  const Job job = WriteJob("numeric_check", Spec(kLkc3, "numeric_cells: 8"), Records());
  ASSERT_OK_AND_ASSIGN(auto h, MakeHarness(job));
  const engine::NumericSplitConfig config = engine::NumericSplitFromSpec(h->spec);
  engine::StatsRequest ok;
  ok.range_counts.push_back({0, {0, 2, 4, 6, 8, 10, 12, 14, 16}, false});
  ok.range_counts.push_back({0, {0, 4, 8, 16}, true});
  EXPECT_OK(engine::CheckNumericRequest(ok, h->hier, config));
  engine::StatsRequest per_value;
  per_value.rank_histograms.emplace_back(0, 0);
  EXPECT_THAT(engine::CheckNumericRequest(per_value, h->hier, config),
              StatusIs(absl::StatusCode::kInvalidArgument, "numeric_split: binned"));
  engine::StatsRequest finer;
  finer.range_counts.push_back({0, {0, 3, 16}, true});  // 3 is inside the cell [2, 4)
  EXPECT_THAT(engine::CheckNumericRequest(finer, h->hier, config),
              StatusIs(absl::StatusCode::kInvalidArgument, "unions of its public cells"));
  engine::StatsRequest other_cells;
  other_cells.range_counts.push_back({0, {0, 4, 8, 16}, false});  // unlabelled: the cells only
  EXPECT_THAT(engine::CheckNumericRequest(other_cells, h->hier, config),
              StatusIs(absl::StatusCode::kInvalidArgument, "not its public cells"));
  engine::NumericSplitConfig exact;
  exact.mode = fedanon::v1::NUMERIC_SPLIT_EXACT;
  EXPECT_OK(engine::CheckNumericRequest(per_value, h->hier, exact));
}

// The bins whose class counts the holders check before they are unmasked (protocol 4.0): each
// range of a labelled range count, `num_classes` words each, at its place in the answer after the
// unlabelled counts before it; none under the exact search.
TEST(GuardedRanges, EachRangeOfALabelledRangeCountInAnswerOrder) {
  engine::StatsRequest request;
  request.range_counts.push_back({0, {0, 2, 4, 6}, false});  // 3 words
  request.range_counts.push_back({0, {0, 4, 8, 16}, true});  // 3 bins x 2 classes
  request.range_counts.push_back({1, {0, 5}, false});        // 1 word
  request.range_counts.push_back({1, {0, 3, 5}, true});      // 2 bins x 2 classes
  request.group_keys.push_back({0, 0});
  const engine::NumericSplitConfig binned;
  EXPECT_THAT(engine::GuardedRanges(request, 2, binned),
              ElementsAre(engine::GuardedRange{3, 2}, engine::GuardedRange{5, 2},
                          engine::GuardedRange{7, 2}, engine::GuardedRange{10, 2},
                          engine::GuardedRange{12, 2}));
  // Without a class attribute a bin is one word.
  EXPECT_THAT(engine::GuardedRanges(request, 0, binned),
              ElementsAre(engine::GuardedRange{3, 1}, engine::GuardedRange{4, 1},
                          engine::GuardedRange{5, 1}, engine::GuardedRange{7, 1},
                          engine::GuardedRange{8, 1}));
  engine::NumericSplitConfig exact;
  exact.mode = fedanon::v1::NUMERIC_SPLIT_EXACT;
  EXPECT_THAT(engine::GuardedRanges(request, 2, exact), IsEmpty());
  engine::StatsRequest unlabelled;
  unlabelled.range_counts.push_back({0, {0, 2, 4}, false});
  unlabelled.node_class_counts.push_back({0, 0});
  EXPECT_THAT(engine::GuardedRanges(unlabelled, 2, binned), IsEmpty());
}

}  // namespace
}  // namespace fedanon::testing
