// A party's checks of a deviating leader in a horizontal job with `recoding: local`
// (party/local_party.h): statistics only for live groups with the key the party holds, labelled
// continuous counts only over ranges of whole global bins, splits only as candidates of the
// group's key with fresh ids, bins announced once as unions of public cells; and that the honest
// sequence answers with the centralized words.
#include "party/local_party.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/engine/local_recoding.h"
#include "common/engine/numeric_split.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

// Job (taxonomy), Age (continuous on a grid: 41 ranks, public cells of 2 ranks with
// numeric_cells 20), class; 60 records.
struct Fixture {
  fedanon::v1::JobSpec spec;
  table::Dataset data;
};

Fixture Make(const std::string& name) {
  Table t;
  t.header = {"Job", "Age", "cls"};
  for (int r = 0; r < 60; ++r) {
    t.rows.push_back({r % 3 == 0 ? "Eng" : (r % 3 == 1 ? "Law" : "Doc"), absl::StrCat(r % 40),
                      r % 2 ? "y" : "n"});
  }
  const Job job =
      WriteJob(name,
               "name: lp\nattributes:\n  - {name: Job, role: qid, taxonomy: tax/job.csv}\n"
               "  - {name: Age, role: qid, type: continuous, range: [0, 40], precision: 1}\n"
               "  - {name: cls, role: class, values: [y, n]}\n"
               "privacy: {model: lkc, L: 2, K: 5}\nnumeric_cells: 20\npartitioning: horizontal\n"
               "recoding: local\n",
               t, {{"tax/job.csv", "Eng;Tech;ANY\nLaw;Prof;ANY\nDoc;Prof;ANY\n"}});
  Fixture f;
  auto spec = spec::LoadJobSpec(job.spec_path);
  EXPECT_TRUE(spec.ok()) << spec.status();
  f.spec = *spec;
  auto data = table::LoadDataset(f.spec, job.input_path);
  EXPECT_TRUE(data.ok()) << data.status();
  f.data = *std::move(data);
  return f;
}

fedanon::v1::LocalGroupRef Ref(int32_t group, const std::vector<engine::LocalValue>& key) {
  fedanon::v1::LocalGroupRef r;
  r.set_group(group);
  for (const auto& v : key) {
    auto* p = r.add_key();
    p->set_node(v.node);
    p->set_lo(v.lo);
    p->set_hi(v.hi);
  }
  return r;
}

// A request of labelled ranges of Age (attribute 1) of `group` over fine children `bounds`.
fedanon::v1::LocalStatsRequest RangesRequest(int32_t group,
                                             const std::vector<engine::LocalValue>& key,
                                             const std::vector<int32_t>& bounds) {
  fedanon::v1::LocalStatsRequest req;
  auto* r = req.add_ranges();
  *r->mutable_group() = Ref(group, key);
  r->set_attribute(1);
  for (int32_t b : bounds) r->add_bounds(b);
  return req;
}

// Bins: the public cells 0,2,4,...,40 merged pairwise: 0,4,8,...,40 (10 bins).
fedanon::v1::LocalSetup BinsSetup() {
  fedanon::v1::LocalSetup s;
  s.add_bins();  // Job: none
  auto* b = s.add_bins();
  for (int r = 0; r <= 40; r += 4) b->add_bounds(r);
  return s;
}

TEST(LocalPartyTest, AnswersLiveGroupsAndRefusesUnknownOrRetiredOnes) {
  Fixture f = Make("lp_live");
  party::LocalParty party(&f.data, f.spec);
  const auto root = engine::LocalRootKey(f.data);
  fedanon::v1::LocalStatsRequest req;
  *req.add_groups() = Ref(0, root);
  // Before the bins: nothing is answered.
  EXPECT_THAT(party.Answer(req).status(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  EXPECT_THAT(party.ApplySetup(BinsSetup()), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> words, party.Answer(req));
  // [count, y, n], 2 taxonomy children x 3 words, 10 bins x 1 word (unlabelled).
  ASSERT_EQ(words.size(), 3u + 2 * 3 + 10);
  EXPECT_EQ(words[0], 60u);
  // An unknown group, and the root with a forged key.
  fedanon::v1::LocalStatsRequest unknown;
  *unknown.add_groups() = Ref(7, root);
  EXPECT_THAT(party.Answer(unknown).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a live group"));
  auto forged_key = root;
  forged_key[1].hi = 20;
  fedanon::v1::LocalStatsRequest forged;
  *forged.add_groups() = Ref(0, forged_key);
  EXPECT_THAT(party.Answer(forged).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "differs"));
  // Split the root on Job (children 1, 2); then the root is retired.
  fedanon::v1::LocalSplitInstruction split;
  *split.mutable_group() = Ref(0, root);
  split.set_attribute(0);
  split.add_child_of_fine(0);
  split.add_child_of_fine(1);
  split.add_new_ids(1);
  split.add_new_ids(2);
  ASSERT_OK(party.ApplySplit(split));
  EXPECT_EQ(party.live_groups(), 2u);
  EXPECT_THAT(party.Answer(req).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a live group"));
  // The same split again: the root is no longer live.
  EXPECT_THAT(party.ApplySplit(split), StatusIs(absl::StatusCode::kPermissionDenied, ""));
}

TEST(LocalPartyTest, LabelledCountsOnlyOverWholeBinsCoveringTheGroup) {
  Fixture f = Make("lp_ranges");
  party::LocalParty party(&f.data, f.spec);
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  const auto root = engine::LocalRootKey(f.data);
  auto range = [&](std::vector<int32_t> bounds, uint32_t attr = 1) {
    fedanon::v1::LocalStatsRequest req;
    auto* r = req.add_ranges();
    *r->mutable_group() = Ref(0, root);
    r->set_attribute(attr);
    for (int32_t b : bounds) r->add_bounds(b);
    return party.Answer(req);
  };
  // Whole bins covering the interval: answered, 3 words per range.
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> words, range({0, 5, 10}));
  ASSERT_EQ(words.size(), 2u * 3);
  EXPECT_EQ(words[0] + words[3], 60u);
  // Not covering the interval, not increasing, past the last bin, or a taxonomy attribute.
  EXPECT_THAT(range({0, 5}).status(), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(range({0, 5, 5, 10}).status(), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(range({0, 5, 20}).status(), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(range({0, 1, 2}, 0).status(), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  // Groups and ranges in one request.
  fedanon::v1::LocalStatsRequest both;
  *both.add_groups() = Ref(0, root);
  auto* r = both.add_ranges();
  *r->mutable_group() = Ref(0, root);
  r->set_attribute(1);
  r->add_bounds(0);
  r->add_bounds(10);
  EXPECT_THAT(party.Answer(both).status(), StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(LocalPartyTest, BinsMustBeUnionsOfPublicCells) {
  Fixture f = Make("lp_bins");
  party::LocalParty party(&f.data, f.spec);
  fedanon::v1::LocalSetup per_rank;
  per_rank.add_bins();
  auto* b = per_rank.add_bins();
  for (int r = 0; r <= 40; ++r) b->add_bounds(r);  // per rank: finer than the cells
  EXPECT_THAT(party.ApplySetup(per_rank),
              StatusIs(absl::StatusCode::kPermissionDenied, "public cells"));
  fedanon::v1::LocalSetup on_taxonomy = BinsSetup();
  on_taxonomy.mutable_bins(0)->add_bounds(0);
  on_taxonomy.mutable_bins(0)->add_bounds(1);
  EXPECT_THAT(party.ApplySetup(on_taxonomy), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  fedanon::v1::LocalSetup partial = BinsSetup();
  partial.mutable_bins(1)->mutable_bounds()->RemoveLast();  // does not reach the range's end
  EXPECT_THAT(party.ApplySetup(partial), StatusIs(absl::StatusCode::kPermissionDenied, ""));
}

TEST(LocalPartyTest, SplitsMustBeCandidatesWithFreshIds) {
  Fixture f = Make("lp_split");
  party::LocalParty party(&f.data, f.spec);
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  const auto root = engine::LocalRootKey(f.data);
  auto split = [&](uint32_t attr, std::vector<int> map, std::vector<int32_t> ids) {
    fedanon::v1::LocalSplitInstruction s;
    *s.mutable_group() = Ref(0, root);
    s.set_attribute(attr);
    for (int m : map) s.add_child_of_fine(m);
    for (int32_t id : ids) s.add_new_ids(id);
    return party.ApplySplit(s);
  };
  // Taxonomy children swapped; an interval "split" that is not a threshold; a threshold at the
  // interval's edge; ids that are not the next fresh ones; an attribute that does not exist.
  EXPECT_THAT(split(0, {1, 0}, {1, 2}), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(split(1, {0, 1, 0, 1, 1, 1, 1, 1, 1, 1}, {1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(split(1, std::vector<int>(10, 1), {1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(split(0, {0, 1}, {5, 6}), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(split(0, {0, 1}, {0, 1}), StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(split(9, {0, 1}, {1, 2}), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  // Binned: a threshold before the group's within-group bins of the attribute were asked, then one
  // inside such a bin (its sides would difference it).
  EXPECT_THAT(split(1, {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, {1, 2}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "a threshold of 'Age' in group 0 comes before any class counts over its "
                       "within-group bins were asked"));
  ASSERT_OK(party.RecordRanges(RangesRequest(0, root, {0, 3, 10})));
  EXPECT_THAT(split(1, {0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, {1, 2}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the threshold of 'Age' in group 0 at bin 4 is not a boundary of the "
                       "group's within-group bins"));
  // A threshold on a within-group bin's boundary with fresh ids is applied.
  EXPECT_OK(split(1, {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, {1, 2}));
  EXPECT_EQ(party.live_groups(), 2u);
}

// A group's within-group bins of an attribute are recorded once (a second set, or the same twice
// in one request, would difference the first), only for live groups with their keys; their
// guarded ranges are each bin's count word, in answer order, as Answer lays the words out.
TEST(LocalPartyTest, WithinGroupBinsAreAskedOnceAndGuardedByTheirCounts) {
  Fixture f = Make("lp_record");
  party::LocalParty party(&f.data, f.spec);
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  const auto root = engine::LocalRootKey(f.data);
  fedanon::v1::LocalStatsRequest twice = RangesRequest(0, root, {0, 5, 10});
  *twice.add_ranges() = twice.ranges(0);
  EXPECT_THAT(party.RecordRanges(twice),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "class counts of 'Age' in group 0 were asked over within-group bins "
                       "already"));
  EXPECT_THAT(party.RecordRanges(RangesRequest(3, root, {0, 5, 10})),
              StatusIs(absl::StatusCode::kPermissionDenied, "is not a live group"));
  const fedanon::v1::LocalStatsRequest once = RangesRequest(0, root, {0, 2, 5, 10});
  ASSERT_OK(party.RecordRanges(once));
  EXPECT_THAT(
      party.RecordRanges(RangesRequest(0, root, {0, 5, 10})),
      StatusIs(absl::StatusCode::kPermissionDenied, "asked over within-group bins already"));
  // Three bins of 3 words (count, y, n): the count of each.
  const std::vector<engine::GuardedRange> guarded = party.GuardedRanges(once);
  ASSERT_EQ(guarded, (std::vector<engine::GuardedRange>{{0, 1}, {3, 1}, {6, 1}}));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> words, party.Answer(once));
  ASSERT_EQ(words.size(), 9u);
  EXPECT_EQ(words[guarded[0].offset] + words[guarded[1].offset] + words[guarded[2].offset], 60u);
  fedanon::v1::LocalStatsRequest groups;
  *groups.add_groups() = Ref(0, root);
  EXPECT_TRUE(party.GuardedRanges(groups).empty());
}

// One party holding every record answers as the centralized source does.
TEST(LocalPartyTest, HonestSequenceAnswersTheCentralizedWords) {
  Fixture f = Make("lp_honest");
  party::LocalParty party(&f.data, f.spec);
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  engine::InProcessLocalSource central(&f.data);
  std::vector<std::vector<int32_t>> bins(2);
  for (int r = 0; r <= 40; r += 4) bins[1].push_back(r);
  engine::LocalFineMap fine(&f.data, true, bins);
  ASSERT_OK(central.UseFineMap(&fine));
  const auto root = engine::LocalRootKey(f.data);
  fedanon::v1::LocalStatsRequest req;
  *req.add_groups() = Ref(0, root);
  ASSERT_OK_AND_ASSIGN(const auto got, party.Answer(req));
  ASSERT_OK_AND_ASSIGN(const auto want, central.GroupStatsBatch({{0, root}}));
  EXPECT_EQ(got, want[0]);
}

// The released counts (integration by a secure sum): only for exactly the live groups, each once
// with its key, over the declared combinations; per group its records per class value.
TEST(LocalPartyTest, ReleasedCountsOnlyForExactlyTheLiveGroups) {
  Fixture f = Make("lp_released");
  party::LocalParty party(&f.data, f.spec);
  ASSERT_OK(party.ApplySetup(BinsSetup()));
  const auto root = engine::LocalRootKey(f.data);
  // Age split at rank 12 (the first three bins): group 1 = ages 0..11, group 2 = ages 12..40.
  fedanon::v1::LocalSplitInstruction s;
  *s.mutable_group() = Ref(0, root);
  s.set_attribute(1);
  for (int m : {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}) s.add_child_of_fine(m);
  s.add_new_ids(1);
  s.add_new_ids(2);
  ASSERT_OK(party.RecordRanges(RangesRequest(0, root, {0, 3, 10})));
  ASSERT_OK(party.ApplySplit(s));
  std::vector<engine::LocalValue> low = root, high = root;
  low[1].hi = 12;
  high[1].lo = 12;
  ASSERT_EQ(f.data.ValueCombinations(), 2u);  // cls: y, n
  auto released = [&](std::vector<fedanon::v1::LocalGroupRef> refs, uint64_t combos = 2) {
    fedanon::v1::LocalStatsRequest req;
    for (auto& r : refs) *req.add_released_groups() = std::move(r);
    req.set_released_combinations(combos);
    return party.Answer(req);
  };
  // Expected from the table itself: age = r % 40, cls = y for odd r.
  std::vector<uint64_t> want(4, 0);
  for (int r = 0; r < 60; ++r) ++want[(r % 40 < 12 ? 0 : 2) + (r % 2 ? 0 : 1)];
  ASSERT_OK_AND_ASSIGN(const auto got, released({Ref(1, low), Ref(2, high)}));
  EXPECT_EQ(got, want);
  ASSERT_OK_AND_ASSIGN(const auto swapped, released({Ref(2, high), Ref(1, low)}));
  EXPECT_EQ(swapped, (std::vector<uint64_t>{want[2], want[3], want[0], want[1]}));
  // Refused: a group left out, one named twice, the retired root, a key that is not the
  // party's, the wrong number of combinations, and released counts mixed with statistics.
  EXPECT_THAT(released({Ref(1, low)}),
              StatusIs(absl::StatusCode::kPermissionDenied, "omit final group 2"));
  EXPECT_THAT(released({Ref(1, low), Ref(2, high), Ref(1, low)}),
              StatusIs(absl::StatusCode::kPermissionDenied, "name group 1 twice"));
  EXPECT_THAT(released({Ref(0, root), Ref(1, low), Ref(2, high)}),
              StatusIs(absl::StatusCode::kPermissionDenied, "group 0 is not a live group"));
  std::vector<engine::LocalValue> half = low;
  half[1].hi = 6;
  EXPECT_THAT(released({Ref(1, half), Ref(2, high)}),
              StatusIs(absl::StatusCode::kPermissionDenied, "key of group 1 differs"));
  EXPECT_THAT(released({Ref(1, low), Ref(2, high)}, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "undeclared domain"));
  fedanon::v1::LocalStatsRequest mixed;
  *mixed.add_released_groups() = Ref(1, low);
  *mixed.add_released_groups() = Ref(2, high);
  mixed.set_released_combinations(2);
  *mixed.add_groups() = Ref(1, low);
  EXPECT_THAT(party.Answer(mixed), StatusIs(absl::StatusCode::kInvalidArgument, "asked alone"));
}

}  // namespace
}  // namespace fedanon::testing
