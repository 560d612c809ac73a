// Private ID matching (party/id_matching.h, common/wire/id_digests.h) between matchers with their
// own keys: ids in any order, partially overlapping; each list walks the ring (with three or more
// parties blinded by its owner and brought back to it), the leader intersects the digests, and
// every party finds the same common records in the same canonical order — learning of its own
// records only which are common to all; the digests' framing and the intersection a party is
// handed are checked.
#include "party/id_matching.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/wire/id_digests.h"
#include "crypto/shuffle.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

// One list's walk round the ring as the parties run it (wire::IdLastHop): owner `o` encrypts
// (blinded with three or more parties), the others re-encrypt, the owner removes its blinding
// last; returns the last hop's digests, and in `held_by_others` the digests of what each hop was
// handed (what the parties saw of the list before its last layer).
std::string Walk(const std::vector<std::unique_ptr<IdMatcher>>& m, size_t o,
                 std::vector<std::string>* held_by_others = nullptr) {
  const size_t n = m.size();
  const bool blinded = wire::IdListsBlinded(n);
  auto points = m[o]->EncryptOwnRange(0, m[o]->size(), blinded);
  EXPECT_TRUE(points.ok()) << points.status();
  const size_t last = wire::IdLastHop(n);
  for (size_t h = 1; h <= last; ++h) {
    const size_t worker = (o + h) % n;
    if (held_by_others != nullptr) held_by_others->push_back(IdMatcher::FinalDigests(*points));
    points = worker == o ? m[o]->Unblind(*points) : m[worker]->ReEncrypt(*points, h == last);
    EXPECT_TRUE(points.ok()) << points.status();
  }
  return IdMatcher::FinalDigests(*points);
}

// The whole protocol for `lists` (one id list per party): every list's walk, the leader's
// intersection, every party's alignment on it.
std::vector<IdAlignment> Match(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::unique_ptr<IdMatcher>> m;
  for (const auto& ids : lists) {
    auto matcher = IdMatcher::Create(ids);
    EXPECT_TRUE(matcher.ok()) << matcher.status();
    m.push_back(std::move(*matcher));
  }
  std::vector<std::string> digests;
  for (size_t o = 0; o < m.size(); ++o) digests.push_back(Walk(m, o));
  auto common = wire::CommonDigests(digests);
  EXPECT_TRUE(common.ok()) << common.status();
  std::vector<IdAlignment> out;
  for (size_t i = 0; i < m.size(); ++i) {
    auto a = m[i]->AlignToCommon(digests[i], *common);
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

// With three parties, p2 is in A's and B's lists but not C's. No party but a list's owner ever
// holds that list under every key: what the others hold of A's list (blinded by A) matches none
// of the fully encrypted digests, so B cannot learn that its record p2 is also A's customer.
TEST(IdMatchingTest, WithThreePartiesOnlyTheOwnerHoldsItsListFullyEncrypted) {
  const std::vector<std::vector<std::string>> lists = {
      {"p1", "p2", "p3"}, {"p2", "p1", "p3", "b-only"}, {"p3", "p1", "c-only"}};
  std::vector<std::unique_ptr<IdMatcher>> m;
  for (const auto& ids : lists) m.push_back(*IdMatcher::Create(ids));
  std::vector<std::string> full;
  std::vector<std::vector<std::string>> held(3);
  for (size_t o = 0; o < 3; ++o) full.push_back(Walk(m, o, &held[o]));
  std::set<std::string> every_full_digest;
  for (const std::string& packed : full) {
    for (size_t i = 0; i < packed.size(); i += wire::kIdDigestBytes) {
      every_full_digest.insert(packed.substr(i, wire::kIdDigestBytes));
    }
  }
  for (size_t o = 0; o < 3; ++o) {
    ASSERT_EQ(held[o].size(), 3u);  // A's blinded list, then B's and C's layers on it
    for (const std::string& packed : held[o]) {
      for (size_t i = 0; i < packed.size(); i += wire::kIdDigestBytes) {
        EXPECT_FALSE(every_full_digest.count(packed.substr(i, wire::kIdDigestBytes)))
            << "a party other than the owner held list " << o << " fully encrypted";
      }
    }
  }
  // And the intersection the leader hands out holds p1 and p3 only (p2 is not C's).
  ASSERT_OK_AND_ASSIGN(const std::string common, wire::CommonDigests(full));
  EXPECT_EQ(common.size(), 2 * wire::kIdDigestBytes);
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
  ASSERT_OK_AND_ASSIGN(auto a_sent, a->EncryptOwnRange(0, 200, false));  // A's first hop
  ASSERT_OK_AND_ASSIGN(auto b_sent, b->EncryptOwnRange(0, 200, false));
  ASSERT_OK_AND_ASSIGN(auto a_full, b->ReEncrypt(a_sent));
  ASSERT_OK_AND_ASSIGN(auto b_full, a->ReEncrypt(b_sent));
  ASSERT_EQ(std::set<std::string>(a_full.begin(), a_full.end()),
            std::set<std::string>(b_full.begin(), b_full.end()));
  size_t same_position = 0;
  for (size_t j = 0; j < ids.size(); ++j) same_position += a_full[j] == b_full[j];
  EXPECT_LT(same_position, 20u) << "the lists are sent in table order";
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

// A batch is a range of the same secret-ordered list.
TEST(IdMatchingTest, RangesAreSlicesOfTheWholeList) {
  std::vector<std::string> ids;
  for (int i = 0; i < 37; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 1));
  for (const bool blinded : {false, true}) {
    ASSERT_OK_AND_ASSIGN(const auto whole, a->EncryptOwnRange(0, 37, blinded));
    ASSERT_OK_AND_ASSIGN(const auto part, a->EncryptOwnRange(10, 20, blinded));
    EXPECT_EQ(part, std::vector<std::string>(whole.begin() + 10, whole.begin() + 30));
  }
  EXPECT_NE(*a->EncryptOwnRange(0, 1, true), *a->EncryptOwnRange(0, 1, false));
  EXPECT_FALSE(a->EncryptOwnRange(30, 8, false).ok());
}

TEST(IdMatchingTest, DigestsAreSixteenBytesEach) {
  const std::string packed = IdMatcher::FinalDigests({"point-a", "point-b", "point-a"});
  ASSERT_EQ(packed.size(), 48u);
  EXPECT_EQ(packed.substr(0, 16), packed.substr(32, 16));
  EXPECT_NE(packed.substr(0, 16), packed.substr(16, 16));
  EXPECT_FALSE(wire::CommonDigests({packed.substr(1)}).ok());
}

// The lists are split over threads; the result is the same for every thread count, in order.
TEST(IdMatchingTest, ThreadedAndSingleThreadedListsAreEqual) {
  std::vector<std::string> ids;
  for (int i = 0; i < 301; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(auto b, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(const auto a_single, a->EncryptOwnRange(0, 301, false));
  ASSERT_OK_AND_ASSIGN(const auto b_single, b->ReEncrypt(a_single));
  for (int threads : {0, 2, 3, 8}) {
    a->set_threads(threads);
    b->set_threads(threads);
    ASSERT_OK_AND_ASSIGN(const auto a_threaded, a->EncryptOwnRange(0, 301, false));
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
  ASSERT_OK_AND_ASSIGN(const auto sent_unc, a->EncryptOwnRange(0, 50, false));
  a->set_hop_encoding(crypto::PointEncoding::kCompressed);
  ASSERT_OK_AND_ASSIGN(const auto sent_comp, a->EncryptOwnRange(0, 50, false));
  EXPECT_EQ(sent_unc[0].size(), crypto::kUncompressedPointSize);
  EXPECT_EQ(sent_comp[0].size(), crypto::kCompressedPointSize);
  ASSERT_OK_AND_ASSIGN(const auto middle, b->ReEncrypt(sent_comp));
  EXPECT_EQ(middle[0].size(), crypto::kUncompressedPointSize);
  ASSERT_OK_AND_ASSIGN(const auto full_unc, b->ReEncrypt(sent_unc, /*last_hop=*/true));
  ASSERT_OK_AND_ASSIGN(const auto full_comp, b->ReEncrypt(sent_comp, /*last_hop=*/true));
  EXPECT_EQ(full_unc, full_comp);
  EXPECT_EQ(full_unc[0].size(), crypto::kCompressedPointSize);
  // The owner's unblinding layer is compressed too (it is a last hop).
  ASSERT_OK_AND_ASSIGN(const auto blinded, a->EncryptOwnRange(0, 50, true));
  ASSERT_OK_AND_ASSIGN(const auto unblinded, a->Unblind(*b->ReEncrypt(blinded)));
  EXPECT_EQ(unblinded[0].size(), crypto::kCompressedPointSize);
}

// What a party logs at the end of ID matching (bench/vertical_daemons.sh reads it): this
// process's CPU time grows with work, and its peak RSS covers memory it has touched.
TEST(IdMatchingTest, ProcessUsageCountsCpuAndPeakMemory) {
  const ProcessUsage before = CurrentProcessUsage();
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto a, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(const auto sent, a->EncryptOwnRange(0, 200, false));
  std::vector<char> touched(64 << 20, 1);  // 64 MiB, written
  const ProcessUsage after = CurrentProcessUsage();
  EXPECT_GT(after.cpu_seconds, before.cpu_seconds);
  EXPECT_GE(after.peak_rss_mb, 64.0);
  EXPECT_EQ(touched[touched.size() - 1], 1);
}

// A party reloading a vertical job after a restart (party/job_journal.h): the matcher restored
// from its durable secret encrypts and blinds its ids to the same lists in the same secret order,
// re-encrypts and unblinds alike, and aligns alike; a fresh matcher draws other keys and order.
TEST(IdMatchingTest, ARestoredMatcherSendsTheSameListAndReEncryptsAlike) {
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.push_back("person-" + std::to_string(i));
  ASSERT_OK_AND_ASSIGN(auto original, IdMatcher::Create(ids, 1));
  ASSERT_OK_AND_ASSIGN(auto other, IdMatcher::Create(ids, 1));
  const crypto::SecretBytes secret = original->DurableSecret();
  ASSERT_EQ(secret.size(), IdMatcher::kDurableSecretBytes);
  ASSERT_OK_AND_ASSIGN(auto restored, IdMatcher::Restore(ids, secret.AsStringView(), 1));
  EXPECT_TRUE(restored->DurableSecret() == secret);
  for (const bool blinded : {false, true}) {
    ASSERT_OK_AND_ASSIGN(const auto sent, original->EncryptOwnRange(0, 50, blinded));
    ASSERT_OK_AND_ASSIGN(const auto again, restored->EncryptOwnRange(0, 50, blinded));
    EXPECT_EQ(sent, again);
  }
  ASSERT_OK_AND_ASSIGN(const auto theirs, other->EncryptOwnRange(0, 50, false));
  ASSERT_OK_AND_ASSIGN(const auto by_original, original->ReEncrypt(theirs));
  ASSERT_OK_AND_ASSIGN(const auto by_restored, restored->ReEncrypt(theirs));
  EXPECT_EQ(by_original, by_restored);
  ASSERT_OK_AND_ASSIGN(const auto blinded, original->EncryptOwnRange(0, 50, true));
  ASSERT_OK_AND_ASSIGN(const auto hop, other->ReEncrypt(blinded));
  EXPECT_EQ(*original->Unblind(hop), *restored->Unblind(hop));
  // Alignment on the same intersection: the same canonical positions.
  const std::string own = IdMatcher::FinalDigests(*original->Unblind(hop));
  const std::string their =
      IdMatcher::FinalDigests(*original->ReEncrypt(theirs, /*last_hop=*/true));
  ASSERT_OK_AND_ASSIGN(const std::string common, wire::CommonDigests({own, their}));
  ASSERT_OK_AND_ASSIGN(const IdAlignment a, original->AlignToCommon(own, common));
  ASSERT_OK_AND_ASSIGN(const IdAlignment b, restored->AlignToCommon(own, common));
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_EQ(a.common, 50u);
  // Another matcher: another key (and, with overwhelming probability, another order).
  ASSERT_OK_AND_ASSIGN(const auto fresh, IdMatcher::Create(ids, 1));
  EXPECT_NE(*fresh->EncryptOwnRange(0, 50, false), *original->EncryptOwnRange(0, 50, false));
  // A secret of another form is refused.
  EXPECT_FALSE(IdMatcher::Restore(ids, std::string(95, 'x')).ok());
  EXPECT_FALSE(IdMatcher::Restore(ids, std::string(96, '\0')).ok());  // key 0 is no scalar
}

// The leader's intersection and a party's alignment on it, against a reference that sorts the
// digests as strings and looks each item up: random 16-byte digests (every byte value, so the
// order of bytes >= 0x80 matters) over three lists drawn with replacement from one pool.
TEST(IdMatchingTest, IntersectionAndAlignmentEqualASortedStringReference) {
  std::mt19937_64 rng(20261126);
  std::vector<std::string> pool(8000);
  for (auto& d : pool) {
    d.resize(16);
    for (auto& c : d) c = static_cast<char>(rng() & 0xff);
  }
  const size_t n = 5000;
  std::vector<std::vector<std::string>> lists(3);
  std::vector<std::string> packed(3);
  for (size_t l = 0; l < 3; ++l) {
    std::set<std::string> seen;  // one party's list holds each digest once (its ids are unique)
    while (lists[l].size() < n) {
      const std::string& d = pool[rng() % pool.size()];
      if (!seen.insert(d).second) continue;
      lists[l].push_back(d);
      packed[l] += d;
    }
  }
  std::set<std::string> common(lists[0].begin(), lists[0].end());
  for (size_t i = 1; i < lists.size(); ++i) {
    const std::set<std::string> other(lists[i].begin(), lists[i].end());
    std::set<std::string> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(),
                          std::inserter(both, both.end()));
    common = std::move(both);
  }
  const std::vector<std::string> sorted(common.begin(), common.end());
  std::string expected_common;
  for (const auto& d : sorted) expected_common += d;
  ASSERT_OK_AND_ASSIGN(const std::string got_common, wire::CommonDigests(packed));
  EXPECT_GT(sorted.size(), 300u);
  EXPECT_EQ(got_common, expected_common);
  ASSERT_OK_AND_ASSIGN(const std::vector<int64_t> positions,
                       wire::PositionsInCommon(packed[1], got_common));
  for (size_t j = 0; j < n; ++j) {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), lists[1][j]);
    const int64_t expected = it != sorted.end() && *it == lists[1][j] ? it - sorted.begin() : -1;
    ASSERT_EQ(positions[j], expected) << j;
  }
}

// A party refuses an intersection it cannot have been part of: a digest not in its own list, an
// order that is not strictly ascending (a repeated digest), a length that is not 16-byte framed.
TEST(IdMatchingTest, AForeignOrUnorderedIntersectionIsRefused) {
  const std::string a(16, 'a'), b(16, 'b'), c(16, 'c'), z(16, 'z');
  const std::string own = c + a + b;
  ASSERT_OK_AND_ASSIGN(const std::vector<int64_t> ok, wire::PositionsInCommon(own, a + c));
  EXPECT_EQ(ok, (std::vector<int64_t>{1, 0, -1}));
  EXPECT_THAT(
      wire::PositionsInCommon(own, a + z),
      testing::StatusIs(absl::StatusCode::kInvalidArgument, "not in this party's own list"));
  EXPECT_THAT(wire::PositionsInCommon(own, c + a),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, "not strictly ascending"));
  EXPECT_THAT(wire::PositionsInCommon(own, a + a),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, "not strictly ascending"));
  EXPECT_FALSE(wire::PositionsInCommon(own, a.substr(1)).ok());
}

TEST(IdMatchingTest, RepeatedOrEmptyIdsAreRefused) {
  EXPECT_FALSE(IdMatcher::Create({"a", "b", "a"}).ok());
  EXPECT_FALSE(IdMatcher::Create({"a", ""}).ok());
}

}  // namespace
}  // namespace fedanon::party
