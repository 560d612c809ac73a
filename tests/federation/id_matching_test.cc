// Private ID matching (party/id_matching.h) between matchers with their own keys: ids in any
// order, partially overlapping; every party finds the same common records and the same canonical
// order; the digests of the last hop are checked for framing.
#include "party/id_matching.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

// Runs the ring for `lists` (one id list per party): each list is encrypted by its owner,
// re-encrypted by every other party, and digested at the last hop.
std::vector<IdAlignment> Match(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::unique_ptr<IdMatcher>> m;
  for (const auto& ids : lists) {
    auto matcher = IdMatcher::Create(ids);
    EXPECT_TRUE(matcher.ok()) << matcher.status();
    m.push_back(std::move(*matcher));
  }
  const size_t n = lists.size();
  std::vector<std::vector<std::string>> full(n);
  for (size_t i = 0; i < n; ++i) {
    auto points = m[i]->EncryptOwn();
    EXPECT_TRUE(points.ok());
    for (size_t hop = 1; hop < n; ++hop) points = m[(i + hop) % n]->ReEncrypt(*points);
    auto digests = IdMatcher::SplitDigests(IdMatcher::FinalDigests(*points));
    EXPECT_TRUE(digests.ok());
    full[i] = *digests;
  }
  std::vector<IdAlignment> out;
  for (size_t i = 0; i < n; ++i) {
    auto a = m[i]->Align(i, full);
    EXPECT_TRUE(a.ok()) << a.status();
    out.push_back(*a);
  }
  return out;
}

TEST(IdMatchingTest, ThreePartiesAgreeOnTheCommonRecordsAndTheirOrder) {
  const std::vector<std::vector<std::string>> lists = {
      {"p1", "p2", "p3", "p4", "a-only"},
      {"p4", "b-only", "p2", "p1", "p3"},
      {"p3", "p1", "c-only", "p4"}};  // p2 is missing here: not common
  const auto aligned = Match(lists);
  ASSERT_EQ(aligned.size(), 3u);
  std::vector<std::map<std::string, int64_t>> position(3);
  for (size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(aligned[p].common, 3u);
    ASSERT_EQ(aligned[p].canonical.size(), lists[p].size());
    for (size_t r = 0; r < lists[p].size(); ++r) {
      if (aligned[p].canonical[r] >= 0) position[p][lists[p][r]] = aligned[p].canonical[r];
    }
  }
  const std::map<std::string, int64_t>& first = position[0];
  EXPECT_EQ(first.size(), 3u);
  for (const char* id : {"p1", "p3", "p4"}) EXPECT_TRUE(first.count(id)) << id;
  EXPECT_EQ(position[1], first);
  EXPECT_EQ(position[2], first);
  std::set<int64_t> slots;
  for (const auto& [id, pos] : first) slots.insert(pos);
  EXPECT_EQ(slots, (std::set<int64_t>{0, 1, 2}));
}

TEST(IdMatchingTest, DigestsAreSixteenBytesEachAndFramingIsChecked) {
  const std::string packed = IdMatcher::FinalDigests({"point-a", "point-b", "point-a"});
  ASSERT_EQ(packed.size(), 48u);
  ASSERT_OK_AND_ASSIGN(auto digests, IdMatcher::SplitDigests(packed));
  ASSERT_EQ(digests.size(), 3u);
  EXPECT_EQ(digests[0], digests[2]);
  EXPECT_NE(digests[0], digests[1]);
  EXPECT_FALSE(IdMatcher::SplitDigests(packed.substr(1)).ok());
}

TEST(IdMatchingTest, RepeatedOrEmptyIdsAreRefused) {
  EXPECT_FALSE(IdMatcher::Create({"a", "b", "a"}).ok());
  EXPECT_FALSE(IdMatcher::Create({"a", ""}).ok());
}

}  // namespace
}  // namespace fedanon::party
