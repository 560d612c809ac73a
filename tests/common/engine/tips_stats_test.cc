// TIPS count statistics on a table large enough to be counted by two threads, with 0, 2 and 6
// tracked sensitive values (the last beyond the small-set fast path): every statistic (and each
// attribute's block of the group statistics alone) equals a direct count over each partition's
// records with the hierarchy's own FineChildOf, and
// specializing puts every record in the partition of its generalized record, in input order.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "common/table/taxonomy.h"

namespace fedanon::engine {
namespace {

constexpr char kTaxonomy[] =
    "a;A;ANY\n"
    "b;A;ANY\n"
    "c;B;ANY\n"
    "d;B;ANY\n"
    "e;ANY\n";

// 200,000 records (above the two-thread threshold) with random codes for a taxonomy, a
// suppression and a continuous column, two classes and `tracked` sensitive values.
std::unique_ptr<table::Dataset> RandomDataset(size_t tracked, uint32_t seed) {
  auto ds = std::make_unique<table::Dataset>();
  const size_t n = 200'000;
  ds->num_records = n;
  std::mt19937 rng(seed);
  auto tax = table::Taxonomy::ParseArx(kTaxonomy, "t.csv", "t");
  EXPECT_TRUE(tax.ok()) << tax.status();
  auto taxonomy = std::make_shared<const table::Taxonomy>(std::move(*tax));
  std::vector<int32_t> leaves;
  for (size_t t = 0; t < taxonomy->size(); ++t) {
    if (taxonomy->is_leaf(static_cast<table::Taxonomy::NodeId>(t)))
      leaves.push_back(static_cast<int32_t>(t));
  }
  table::QidColumn t;
  t.name = "t";
  t.kind = table::QidKind::kTaxonomy;
  t.taxonomy = taxonomy;
  table::QidColumn s;
  s.name = "s";
  s.kind = table::QidKind::kSuppression;
  s.values = {"x", "y", "z", "w"};
  table::QidColumn c;
  c.name = "c";
  c.kind = table::QidKind::kContinuous;
  for (int v = 0; v < 50; ++v) c.sorted_values.push_back(v);
  c.range_lo = 0;
  c.range_hi = 50;
  for (size_t r = 0; r < n; ++r) {
    t.codes.push_back(leaves[rng() % leaves.size()]);
    s.codes.push_back(static_cast<int32_t>(rng() % 4));
    c.codes.push_back(static_cast<int32_t>(rng() % 50));
    ds->class_codes.push_back(static_cast<uint16_t>(rng() % 2));
    ds->sensitive_bits.push_back(tracked == 0 ? 0 : rng() & ((uint64_t{1} << tracked) - 1));
  }
  if (tracked == 0) ds->sensitive_bits.clear();
  ds->qids = {std::move(t), std::move(s), std::move(c)};
  ds->class_labels = {"no", "yes"};
  for (size_t i = 0; i < tracked; ++i) ds->tracked.push_back({"sens", "v" + std::to_string(i)});
  return ds;
}

// Group statistics of `key` counted one record at a time (GroupStatsLayout).
std::vector<uint64_t> DirectGroupStats(const table::Dataset& ds,
                                       const std::vector<AttributeHierarchy>& h, const Tips& tips,
                                       const std::vector<NodeIndex>& key) {
  const size_t m = ds.tracked.size(), stride = 1 + m;
  std::vector<size_t> offset;
  size_t words = stride;
  for (size_t a = 0; a < key.size(); ++a) {
    offset.push_back(words);
    words += stride * static_cast<size_t>(h[a].FineChildCount(key[a]));
  }
  std::vector<uint64_t> w(words, 0);
  const int32_t p = tips.FindPartition(key);
  if (p < 0) return w;
  auto add = [&](size_t at, uint32_t r) {
    ++w[at];
    for (size_t b = 0; b < m; ++b) {
      if (ds.sensitive_bits[r] >> b & 1) ++w[at + 1 + b];
    }
  };
  for (uint32_t r : tips.records(p)) {
    add(0, r);
    for (size_t a = 0; a < key.size(); ++a) {
      if (h[a].FineChildCount(key[a]) == 0) continue;
      add(offset[a] + stride * static_cast<size_t>(h[a].FineChildOf(key[a], ds.qids[a].codes[r])),
          r);
    }
  }
  return w;
}

class TipsStatsTest : public ::testing::TestWithParam<size_t> {};

TEST_P(TipsStatsTest, EveryStatisticEqualsADirectCount) {
  const std::unique_ptr<table::Dataset> ds =
      RandomDataset(GetParam(), 7 + static_cast<uint32_t>(GetParam()));
  std::vector<AttributeHierarchy> hier;
  for (const table::QidColumn& q : ds->qids) hier.emplace_back(&q);
  hier[2].SetSplit(0, 20);
  Tips tips(ds.get(), &hier);
  // Specialize the taxonomy root, then the continuous root, then disclose one suppressed value.
  hier[0].Specialize(0, 0);
  tips.Specialize(0, 0, 0);
  const std::vector<NodeIndex> halves = hier[2].Specialize(0, 0);
  hier[2].SetSplit(halves[0], 7);
  hier[2].SetSplit(halves[1], 33);
  tips.Specialize(2, 0, 0);
  hier[1].Specialize(0, 1);
  tips.Specialize(1, 0, 1);

  std::vector<std::vector<NodeIndex>> keys;
  for (size_t p = 0; p < tips.partition_count(); ++p) {
    if (tips.alive(static_cast<int32_t>(p))) keys.push_back(tips.key(static_cast<int32_t>(p)));
  }
  keys.push_back({0, 0, 0});  // no partition: zeros
  ASSERT_GE(keys.size(), 8u);
  std::vector<uint64_t> expected;
  for (const auto& key : keys) {
    const std::vector<uint64_t> one = DirectGroupStats(*ds, hier, tips, key);
    expected.insert(expected.end(), one.begin(), one.end());
  }
  std::vector<uint64_t> batch = {42};  // appended after what is there
  tips.AppendGroupStats(keys, &batch);
  ASSERT_EQ(batch.size(), expected.size() + 1);
  EXPECT_EQ(batch[0], 42u);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), batch.begin() + 1));
  std::vector<uint64_t> single;
  for (const auto& key : keys) tips.AppendGroupStats(key, &single);
  EXPECT_EQ(single, expected);
  uint64_t records = 0;
  for (const auto& key : keys) {
    const int32_t p = tips.FindPartition(key);
    if (p >= 0) records += tips.records(p).size();
  }
  EXPECT_EQ(records, ds->num_records);
  // Each attribute's block alone (Tips::AppendAttributeBlocks): the same words as that block of
  // the direct count, key after key, appended after what is there.
  const size_t stride = 1 + ds->tracked.size();
  for (int a = 0; a < static_cast<int>(hier.size()); ++a) {
    std::vector<uint64_t> want = {7};
    for (const auto& key : keys) {
      const std::vector<uint64_t> one = DirectGroupStats(*ds, hier, tips, key);
      size_t at = stride;
      for (int b = 0; b < a; ++b)
        at += stride * static_cast<size_t>(hier[b].FineChildCount(key[b]));
      const size_t len = stride * static_cast<size_t>(hier[a].FineChildCount(key[a]));
      want.insert(want.end(), one.begin() + static_cast<ptrdiff_t>(at),
                  one.begin() + static_cast<ptrdiff_t>(at + len));
    }
    std::vector<uint64_t> blocks = {7};
    tips.AppendAttributeBlocks(a, keys, &blocks);
    EXPECT_EQ(blocks, want) << "attribute " << a;
    EXPECT_GT(blocks.size(), 1u) << "attribute " << a;
  }
  // Specializing (two threads route the halves of a large partition) put every record under its
  // key's nodes, each partition's records in input order.
  for (const auto& key : keys) {
    const int32_t p = tips.FindPartition(key);
    if (p < 0) continue;
    const std::vector<uint32_t>& recs = tips.records(p);
    EXPECT_TRUE(std::is_sorted(recs.begin(), recs.end()));
    EXPECT_TRUE(std::adjacent_find(recs.begin(), recs.end()) == recs.end());
    const HierarchyNode& t = hier[0].node(key[0]);
    const HierarchyNode& s = hier[1].node(key[1]);
    const HierarchyNode& c = hier[2].node(key[2]);
    size_t misplaced = 0;
    for (uint32_t r : recs) {
      const int32_t sc = ds->qids[1].codes[r], cc = ds->qids[2].codes[r];
      const bool in_s =
          s.suppressed ? std::count(s.hidden.begin(), s.hidden.end(), sc) == 1 : s.value == sc;
      if (!ds->qids[0].taxonomy->Generalizes(t.tax, ds->qids[0].codes[r]) || !in_s ||
          cc < c.rank_lo || cc >= c.rank_hi) {
        ++misplaced;
      }
    }
    EXPECT_EQ(misplaced, 0u);
  }

  // Class counts per fine child of every refinable node of the current cut.
  for (size_t a = 0; a < hier.size(); ++a) {
    for (size_t n = 0; n < hier[a].size(); ++n) {
      const auto node = static_cast<NodeIndex>(n);
      const int fine = hier[a].FineChildCount(node);
      if (fine == 0) continue;
      std::vector<uint64_t> direct(static_cast<size_t>(fine) * 2, 0);
      for (const auto& key : keys) {
        const int32_t p = tips.FindPartition(key);
        if (p < 0 || key[a] != node) continue;
        for (uint32_t r : tips.records(p)) {
          ++direct[static_cast<size_t>(hier[a].FineChildOf(node, ds->qids[a].codes[r])) * 2 +
                   ds->class_codes[r]];
        }
      }
      EXPECT_EQ(tips.NodeClassCounts(static_cast<int>(a), node), direct) << a << " " << n;
    }
  }

  // Range counts of the continuous column (an empty range among them).
  for (const std::vector<int32_t>& bounds :
       {std::vector<int32_t>{0, 5, 5, 17, 40, 50}, std::vector<int32_t>{3, 9}}) {
    for (bool labelled : {false, true}) {
      std::vector<uint64_t> direct((bounds.size() - 1) * (labelled ? 2 : 1), 0);
      for (size_t r = 0; r < ds->num_records; ++r) {
        const int32_t code = ds->qids[2].codes[r];
        if (code < bounds.front() || code >= bounds.back()) continue;
        const auto range = static_cast<size_t>(
            std::upper_bound(bounds.begin(), bounds.end(), code) - bounds.begin() - 1);
        ++direct[range * (labelled ? 2 : 1) + (labelled ? ds->class_codes[r] : 0)];
      }
      std::vector<uint64_t> got;
      tips.AppendRangeCounts({2, bounds, labelled}, &got);
      EXPECT_EQ(got, direct) << labelled;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TrackedValues, TipsStatsTest, ::testing::Values(0, 2, 6));

}  // namespace
}  // namespace fedanon::engine
