// Private ID matching (party/id_matching.h) between matchers with their own keys: ids in any
// order, partially overlapping; every party finds the same common records and the same canonical
// order; the digests of the last hop are checked for framing.
#include "party/id_matching.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "crypto/shuffle.h"
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
    for (size_t hop = 1; hop < n; ++hop) {
      points = m[(i + hop) % n]->ReEncrypt(*points, /*last_hop=*/hop + 1 == n);
    }
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

// The owner sends its list in a secret order. Two parties with the same 200 ids in the same
// table order: after both layers the points are equal as sets, so position j of A's list and of
// B's list hold the same id only where their secret orders agree — about once, never 200 times
// (which is what table order would give).
TEST(IdMatchingTest, EachOwnerSendsItsListInASecretOrder) {
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids));
  ASSERT_OK_AND_ASSIGN(auto b, IdMatcher::Create(ids));
  ASSERT_OK_AND_ASSIGN(auto a_sent, a->EncryptOwn());  // what A's first hop sends
  ASSERT_OK_AND_ASSIGN(auto b_sent, b->EncryptOwn());
  ASSERT_OK_AND_ASSIGN(auto a_full, b->ReEncrypt(a_sent));
  ASSERT_OK_AND_ASSIGN(auto b_full, a->ReEncrypt(b_sent));
  ASSERT_EQ(std::set<std::string>(a_full.begin(), a_full.end()),
            std::set<std::string>(b_full.begin(), b_full.end()));
  size_t same_position = 0;
  for (size_t j = 0; j < ids.size(); ++j) same_position += a_full[j] == b_full[j];
  EXPECT_LT(same_position, 20u) << "the lists are sent in table order";
  // And a second list of the same owner is in another order (drawn per matcher).
  ASSERT_OK_AND_ASSIGN(auto a2, IdMatcher::Create(ids));
  ASSERT_OK_AND_ASSIGN(auto a2_sent, a2->EncryptOwn());
  ASSERT_OK_AND_ASSIGN(auto a2_full, b->ReEncrypt(a2_sent));
  ASSERT_OK_AND_ASSIGN(auto a_again, b->ReEncrypt(a_sent));
  EXPECT_EQ(a_again, a_full);  // re-encryption keeps the order and is deterministic
  size_t a2_same = 0;
  for (size_t j = 0; j < ids.size(); ++j) a2_same += a2_full[j] == b_full[j];
  EXPECT_LT(a2_same, 20u);
  // Matching is unchanged: every id common, the same canonical position at both parties.
  const auto aligned = Match({ids, ids});
  ASSERT_EQ(aligned.size(), 2u);
  EXPECT_EQ(aligned[0].common, 200u);
  EXPECT_EQ(aligned[0].canonical, aligned[1].canonical);
  std::set<int64_t> slots(aligned[0].canonical.begin(), aligned[0].canonical.end());
  EXPECT_EQ(slots.size(), 200u);
  EXPECT_EQ(*slots.begin(), 0);
  EXPECT_EQ(*slots.rbegin(), 199);
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

// The lists are split over threads; the result is the same for every thread count, in order.
TEST(IdMatchingTest, ThreadedAndSingleThreadedListsAreEqual) {
  std::vector<std::string> ids;
  for (int i = 0; i < 301; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(auto b, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(const auto a_single, a->EncryptOwn());
  ASSERT_OK_AND_ASSIGN(const auto b_single, b->ReEncrypt(a_single));
  for (int threads : {0, 2, 3, 8}) {
    a->set_threads(threads);
    b->set_threads(threads);
    ASSERT_OK_AND_ASSIGN(const auto a_threaded, a->EncryptOwn());
    EXPECT_EQ(a_threaded, a_single) << threads << " threads";
    ASSERT_OK_AND_ASSIGN(const auto b_threaded, b->ReEncrypt(a_single));
    EXPECT_EQ(b_threaded, b_single) << threads << " threads";
  }
}

// The hop encoding is each party's choice (uncompressed by default: cheaper to receive) and
// either is accepted; the last hop is compressed whatever it is, so the fully encrypted lists,
// and their digests, do not depend on it.
TEST(IdMatchingTest, HopEncodingDoesNotChangeTheFullLists) {
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 2));
  ASSERT_OK_AND_ASSIGN(auto b, IdMatcher::Create(ids, 2));
  ASSERT_OK_AND_ASSIGN(const auto sent_unc, a->EncryptOwn());
  a->set_hop_encoding(crypto::PointEncoding::kCompressed);
  ASSERT_OK_AND_ASSIGN(const auto sent_comp, a->EncryptOwn());
  ASSERT_EQ(sent_unc.size(), ids.size());
  EXPECT_EQ(sent_unc[0].size(), crypto::kUncompressedPointSize);
  EXPECT_EQ(sent_comp[0].size(), crypto::kCompressedPointSize);
  ASSERT_OK_AND_ASSIGN(const auto middle, b->ReEncrypt(sent_comp));
  EXPECT_EQ(middle[0].size(), crypto::kUncompressedPointSize);
  ASSERT_OK_AND_ASSIGN(const auto full_unc, b->ReEncrypt(sent_unc, /*last_hop=*/true));
  ASSERT_OK_AND_ASSIGN(const auto full_comp, b->ReEncrypt(sent_comp, /*last_hop=*/true));
  EXPECT_EQ(full_unc, full_comp);
  EXPECT_EQ(full_unc[0].size(), crypto::kCompressedPointSize);
  EXPECT_EQ(IdMatcher::FinalDigests(full_unc), IdMatcher::FinalDigests(full_comp));
}

// What a party logs at the end of ID matching (bench/vertical_daemons.sh reads it): this
// process's CPU time grows with work, and its peak RSS covers memory it has touched.
TEST(IdMatchingTest, ProcessUsageCountsCpuAndPeakMemory) {
  const ProcessUsage before = CurrentProcessUsage();
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(const auto sent, a->EncryptOwn());
  std::vector<char> touched(64 << 20, 1);  // 64 MiB, written
  const ProcessUsage after = CurrentProcessUsage();
  EXPECT_GT(after.cpu_seconds, before.cpu_seconds);
  EXPECT_GE(after.peak_rss_mb, 64.0);
  EXPECT_EQ(touched[touched.size() - 1], 1);
}

// A party reloading a vertical job after a restart (party/job_journal.h): the matcher restored
// from its durable secret encrypts its ids to the same list in the same secret order, re-encrypts
// another's list alike and aligns alike; a fresh matcher draws another key and order.
TEST(IdMatchingTest, ARestoredMatcherSendsTheSameListAndReEncryptsAlike) {
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto original, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(auto other, IdMatcher::Create(ids, 1));
  const crypto::SecretBytes secret = original->DurableSecret();
  ASSERT_EQ(secret.size(), IdMatcher::kDurableSecretBytes);
  ASSERT_OK_AND_ASSIGN(auto restored, IdMatcher::Restore(ids, secret.AsStringView(), 1));
  EXPECT_TRUE(restored->DurableSecret() == secret);
  ASSERT_OK_AND_ASSIGN(const auto sent, original->EncryptOwn());
  ASSERT_OK_AND_ASSIGN(const auto again, restored->EncryptOwn());
  EXPECT_EQ(sent, again);
  ASSERT_OK_AND_ASSIGN(const auto theirs, other->EncryptOwn());
  ASSERT_OK_AND_ASSIGN(const auto by_original, original->ReEncrypt(theirs));
  ASSERT_OK_AND_ASSIGN(const auto by_restored, restored->ReEncrypt(theirs));
  EXPECT_EQ(by_original, by_restored);
  // Alignment after the full ring: the same canonical positions.
  ASSERT_OK_AND_ASSIGN(const auto own_full, other->ReEncrypt(sent));
  ASSERT_OK_AND_ASSIGN(auto own_digests,
                       IdMatcher::SplitDigests(IdMatcher::FinalDigests(own_full)));
  ASSERT_OK_AND_ASSIGN(auto their_digests,
                       IdMatcher::SplitDigests(IdMatcher::FinalDigests(by_original)));
  const std::vector<std::vector<std::string>> full = {own_digests, their_digests};
  ASSERT_OK_AND_ASSIGN(const IdAlignment a, original->Align(0, full));
  ASSERT_OK_AND_ASSIGN(const IdAlignment b, restored->Align(0, full));
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_EQ(a.common, 50u);
  // Another matcher: another key (and, with overwhelming probability, another order).
  ASSERT_OK_AND_ASSIGN(const auto fresh, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(const auto fresh_list, fresh->EncryptOwn());
  EXPECT_NE(fresh_list, sent);
  // A secret of another form is refused.
  EXPECT_FALSE(IdMatcher::Restore(ids, std::string(63, 'x')).ok());
  EXPECT_FALSE(IdMatcher::Restore(ids, std::string(64, '\0')).ok());  // key 0 is no scalar
}

TEST(IdMatchingTest, AlignEqualsASortedStringReferenceOnRandomDigests) {
  // Align compares digests as pairs of big-endian words and merges our sorted list with the
  // common digests; the reference sorts the digests as strings and looks each item up. Random
  // 16-byte digests (every byte value, so the order of bytes >= 0x80 matters) over three lists
  // drawn with replacement from one pool: partial overlap and repeats within a list.
  std::mt19937_64 rng(20261126);
  std::vector<std::string> pool(8000);
  for (auto& d : pool) {
    d.resize(16);
    for (auto& c : d) c = static_cast<char>(rng() & 0xff);
  }
  const size_t n = 5000;
  std::vector<std::vector<std::string>> full(3);
  for (auto& list : full) {
    for (size_t j = 0; j < n; ++j) list.push_back(pool[rng() % pool.size()]);
  }
  std::vector<std::string> ids;
  for (size_t j = 0; j < n; ++j) ids.push_back("id-" + std::to_string(j));
  ASSERT_OK_AND_ASSIGN(auto matcher, IdMatcher::Create(ids));
  // Item j of our list is record order[j] (the seed is the second half of the durable secret).
  const std::string secret(matcher->DurableSecret().AsStringView());
  ASSERT_OK_AND_ASSIGN(const std::vector<size_t> order,
                       crypto::SeededPermutation(secret.substr(32), n));
  ASSERT_OK_AND_ASSIGN(const IdAlignment got, matcher->Align(1, full));

  std::set<std::string> common(full[0].begin(), full[0].end());
  for (size_t i = 1; i < full.size(); ++i) {
    const std::set<std::string> other(full[i].begin(), full[i].end());
    std::set<std::string> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(),
                          std::inserter(both, both.end()));
    common = std::move(both);
  }
  const std::vector<std::string> sorted(common.begin(), common.end());
  std::vector<int64_t> expected(n, -1);
  for (size_t j = 0; j < n; ++j) {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), full[1][j]);
    if (it != sorted.end() && *it == full[1][j]) expected[order[j]] = it - sorted.begin();
  }
  EXPECT_GT(sorted.size(), 300u);  // the pool gives about 800 common digests
  EXPECT_EQ(got.common, sorted.size());
  EXPECT_EQ(got.canonical, expected);

  // A digest that is not 16 bytes is refused.
  full[2][7] = full[2][7].substr(0, 15);
  EXPECT_FALSE(matcher->Align(1, full).ok());
}

TEST(IdMatchingTest, RepeatedOrEmptyIdsAreRefused) {
  EXPECT_FALSE(IdMatcher::Create({"a", "b", "a"}).ok());
  EXPECT_FALSE(IdMatcher::Create({"a", ""}).ok());
}

}  // namespace
}  // namespace fedanon::party
