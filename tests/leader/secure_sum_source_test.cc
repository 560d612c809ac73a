// The leader's side of the horizontal secure sum (leader/secure_sum_source.h) against a scripted
// ring: parties with fixed counts that answer every hop and the mask as the protocol says, or
// with one deviation. The leader must decode exactly the sum of the counts, chunk by chunk, and
// refuse by name a last hop or a mask that is not what the ring owes it.
#include "leader/secure_sum_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/wire/federation_wire.h"
#include "crypto/sealed_box.h"
#include "crypto/secret_bytes.h"
#include "crypto/secure_sum_masks.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

using ::fedanon::testing::StatusIs;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using ::testing::ElementsAreArray;

constexpr char kJob[] = "job-000000000001";
constexpr char kRun[] = "run-1";
constexpr char kLeader[] = "leader";

// How the scripted ring deviates.
enum class Script {
  kHonest,
  kLastHopFromFirstParty,  // the last hop sealed by the ring's first party, not its last
  kLastHopOtherCollect,    // the last hop sealed for another collect's purpose
  kMaskOtherCollect,       // the first party's seed sealed for another collect
  kShortLastHop,           // the last hop one word short
};

// Three parties with fixed count vectors; every key is known to the script.
class ScriptedRing : public wire::PartyChannel {
 public:
  // `mask_with_last_hop`: the first party hands its mask over with its answer to the last chunk
  // (protocol 2.1), else only when asked (SumUnmask, protocol 2.0).
  ScriptedRing(std::vector<std::string> ring, std::vector<std::vector<uint64_t>> counts,
               Script script, bool mask_with_last_hop)
      : ring_(std::move(ring)),
        counts_(std::move(counts)),
        script_(script),
        mask_with_last_hop_(mask_with_last_hop) {
    for (const std::string& p : ring_) keys_[p] = *crypto::SealKeyPair::Generate();
    keys_[kLeader] = *crypto::SealKeyPair::Generate();
    seed_ = std::string(crypto::RandomBytes(crypto::kMaskSeedBytes)->AsStringView());
  }

  const crypto::SealKeyPair& key(const std::string& name) const { return *keys_.at(name); }
  int hops() const { return hops_; }
  int unmasks() const { return unmasks_; }

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration /*timeout*/) override {
    if (request.has_sum_unmask()) {
      ++unmasks_;
      return Mask(party, request.round(), request.sum_unmask().collect());
    }
    if (!request.has_sum_step()) return absl::InvalidArgumentError("not a secure-sum request");
    ++hops_;
    const fedanon::v1::SumStep& step = request.sum_step();
    if (step.chunk() == 0) digest_ = wire::SumRequestDigest(step.request(), "");
    const size_t pos =
        static_cast<size_t>(std::find(ring_.begin(), ring_.end(), party) - ring_.begin());
    const size_t offset = step.chunk_offset();
    const size_t len = std::min<size_t>(step.chunk_words(), step.total_words() - offset);
    if (pos == 0) running_ = *crypto::MaskWordsFromSeed(seed_, offset, len);
    for (size_t i = 0; i < len; ++i) running_[i] += counts_[pos][offset + i];
    const bool last = pos + 1 == ring_.size();
    std::string sender = party;
    std::string receiver = last ? kLeader : ring_[pos + 1];
    std::vector<uint64_t> words = running_;
    fedanon::v1::SumStep bound = step;
    if (last && script_ == Script::kLastHopFromFirstParty) sender = ring_.front();
    if (last && script_ == Script::kLastHopOtherCollect) bound.set_collect(step.collect() + 1);
    if (last && script_ == Script::kShortLastHop) words.pop_back();
    const crypto::SealContext context{
        kJob,   kRun,     request.round(),
        sender, receiver, wire::SumHopPurpose(bound, request.round(), digest_)};
    PartyMessage reply;
    auto* sealed = reply.mutable_sum_step()->mutable_sealed();
    sealed->set_sender(sender);
    sealed->set_receiver(receiver);
    sealed->set_ciphertext(*crypto::SealFrom(key(sender), key(receiver).public_key(), context,
                                             wire::EncodeWords(words)));
    if (pos == 0 && mask_with_last_hop_ && step.chunk() + 1 == step.chunks()) {
      *reply.mutable_sum_step()->mutable_mask_seed() =
          Mask(party, request.round(), step.collect())->sum_mask().seed();
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return {}; }

 private:
  absl::StatusOr<PartyMessage> Mask(const std::string& party, uint64_t round, uint64_t collect) {
    collect += script_ == Script::kMaskOtherCollect ? 1 : 0;
    const crypto::SealContext context{
        kJob, kRun, round, party, kLeader, wire::SumMaskPurpose(collect, round, digest_)};
    PartyMessage reply;
    auto* sealed = reply.mutable_sum_mask()->mutable_seed();
    sealed->set_sender(party);
    sealed->set_receiver(kLeader);
    sealed->set_ciphertext(
        *crypto::SealFrom(key(party), key(kLeader).public_key(), context, seed_));
    return reply;
  }

  std::vector<std::string> ring_;
  std::vector<std::vector<uint64_t>> counts_;
  Script script_;
  bool mask_with_last_hop_;
  std::map<std::string, std::unique_ptr<crypto::SealKeyPair>> keys_;
  std::string seed_;
  std::string digest_;
  std::vector<uint64_t> running_;
  int hops_ = 0;
  int unmasks_ = 0;
};

struct Outcome {
  absl::StatusOr<std::vector<uint64_t>> sum;
  int hops = 0;
  int unmasks = 0;  // SumUnmask calls
};

// One collect of `words` words over the scripted ring of three parties, `chunk_words` a chunk.
Outcome CollectOnce(Script script, size_t words, size_t chunk_words,
                    std::vector<uint64_t>* expected, bool mask_with_last_hop = false) {
  const std::vector<std::string> ring = {"p1", "p2", "p3"};
  std::vector<std::vector<uint64_t>> counts(ring.size(), std::vector<uint64_t>(words));
  expected->assign(words, 0);
  for (size_t p = 0; p < ring.size(); ++p) {
    for (size_t i = 0; i < words; ++i) {
      counts[p][i] = (p + 1) * 1000 + i * 7;
      (*expected)[i] += counts[p][i];
    }
  }
  ScriptedRing channel(ring, counts, script, mask_with_last_hop);
  SecureSumCountSource source(
      &channel, kJob, ring, absl::Seconds(5), /*hier=*/nullptr, /*num_classes=*/2,
      /*num_tracked=*/0, [] { return 3u; }, [] { return absl::OkStatus(); }, chunk_words);
  source.set_sealing(kLeader, kRun, &channel.key(kLeader), &channel.key("p1").public_key(),
                     &channel.key("p3").public_key());
  fedanon::v1::StatsRequest request;
  request.add_released_groups()->add_nodes(0);
  Outcome out{source.CollectProto(request, words), 0};
  out.hops = channel.hops();
  out.unmasks = channel.unmasks();
  return out;
}

TEST(SecureSumSource, DecodesTheSumOfEveryPartysCountsChunkByChunk) {
  std::vector<uint64_t> expected;
  const Outcome one = CollectOnce(Script::kHonest, 10, 1 << 20, &expected);
  ASSERT_OK(one.sum.status());
  EXPECT_THAT(*one.sum, ElementsAreArray(expected));
  EXPECT_EQ(one.hops, 3);
  EXPECT_EQ(one.unmasks, 1);  // a 2.0 first party is asked for its mask
  // 10 words in chunks of 4: three rings of three hops, the last chunk two words.
  const Outcome chunked = CollectOnce(Script::kHonest, 10, 4, &expected);
  ASSERT_OK(chunked.sum.status());
  EXPECT_THAT(*chunked.sum, ElementsAreArray(expected));
  EXPECT_EQ(chunked.hops, 9);
  EXPECT_EQ(chunked.unmasks, 1);
}

// Protocol 2.1: the first party's mask comes with its answer to the last chunk, so the leader
// asks for it no more (one round trip less per collect), and decodes the same sum.
TEST(SecureSumSource, TakesTheMaskThatCameWithTheFirstPartysLastHopWithoutAskingForIt) {
  std::vector<uint64_t> expected;
  for (const size_t chunk_words : {size_t{1} << 20, size_t{4}}) {
    const Outcome out = CollectOnce(Script::kHonest, 10, chunk_words, &expected,
                                    /*mask_with_last_hop=*/true);
    ASSERT_OK(out.sum.status());
    EXPECT_THAT(*out.sum, ElementsAreArray(expected));
    EXPECT_EQ(out.unmasks, 0);
  }
  EXPECT_THAT(CollectOnce(Script::kMaskOtherCollect, 10, 4, &expected, true).sum.status().message(),
              ::testing::HasSubstr("party 'p1' sent a secure-sum mask the leader cannot open"));
}

TEST(SecureSumSource, RefusesALastHopOrAMaskTheRingDoesNotOweItByName) {
  std::vector<uint64_t> expected;
  EXPECT_THAT(CollectOnce(Script::kLastHopFromFirstParty, 10, 4, &expected).sum,
              StatusIs(absl::StatusCode::kInternal, "not from the ring's last party"));
  EXPECT_THAT(CollectOnce(Script::kLastHopOtherCollect, 10, 4, &expected).sum.status().message(),
              ::testing::HasSubstr("party 'p3' sent a secure-sum reply the leader cannot open"));
  EXPECT_THAT(CollectOnce(Script::kShortLastHop, 10, 4, &expected).sum,
              StatusIs(absl::StatusCode::kInternal, "secure-sum chunk has the wrong length"));
  EXPECT_THAT(CollectOnce(Script::kMaskOtherCollect, 10, 4, &expected).sum.status().message(),
              ::testing::HasSubstr("party 'p1' sent a secure-sum mask the leader cannot open"));
}

}  // namespace
}  // namespace fedanon::leader
