// The leader's side of the horizontal final check (leader/final_check_ring.h) against scripted
// parties: the leader opens nothing, so what it must get right is the routing (each sealed box to
// the party it is for, in the ring agreed at Prepare, chunk by chunk) and the verdicts (every
// refusal named, none lost).
#include "leader/final_check_ring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

using ::fedanon::testing::StatusIs;
using fedanon::v1::FinalCheckStep;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Parties whose boxes are opaque tags "<sender>><receiver>/<chunk>": the test reads where the
// leader routed each one.
class ScriptedParties : public wire::PartyChannel {
 public:
  explicit ScriptedParties(std::vector<std::string> ring) : ring_(std::move(ring)) {}

  std::vector<std::string> calls;     // "<party> <phase> <chunk> <input's tag>"
  std::vector<int> updates;           // the state updates each call carried
  std::set<std::string> refuse;       // parties that refuse at the last verify (an error reply)
  std::set<std::string> unconfirmed;  // parties that answer the last verify with passed=false
  std::string no_total_for;           // the first party seals no total for this one

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration /*timeout*/) override {
    const FinalCheckStep& step = request.final_check();
    calls.push_back(absl::StrCat(party, " ", FinalCheckStep::Phase_Name(step.phase()), " ",
                                 step.chunk(), " ", step.input().ciphertext()));
    updates.push_back(step.updates_size());
    const std::string chunk = absl::StrCat("/", step.chunk());
    PartyMessage reply;
    auto* result = reply.mutable_final_check();
    const size_t pos = Position(party);
    switch (step.phase()) {
      case FinalCheckStep::PHASE_SUM: {
        const std::string& next = ring_[(pos + 1) % ring_.size()];
        Box(party, next, chunk, result->mutable_sealed());
        break;
      }
      case FinalCheckStep::PHASE_UNMASK:
        for (size_t i = 1; i < ring_.size(); ++i) {
          if (ring_[i] != no_total_for) Box(party, ring_[i], chunk, result->add_totals());
        }
        break;
      default:
        if (step.chunk() + 1 == step.chunks()) {
          if (refuse.count(party) > 0) {
            return absl::FailedPreconditionError(
                absl::StrCat("party '", party, "': refuses to release: k=3 fails"));
          }
          result->set_passed(unconfirmed.count(party) == 0);
        }
        break;
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return {}; }

 private:
  size_t Position(const std::string& party) const {
    for (size_t i = 0; i < ring_.size(); ++i) {
      if (ring_[i] == party) return i;
    }
    return ring_.size();
  }
  static void Box(const std::string& from, const std::string& to, const std::string& chunk,
                  fedanon::v1::SealedPayload* box) {
    box->set_sender(from);
    box->set_receiver(to);
    box->set_ciphertext(absl::StrCat(from, ">", to, chunk));
  }
  std::vector<std::string> ring_;
};

FinalCheckRing Ring(ScriptedParties* parties, uint64_t chunk_words) {
  FinalCheckRing ring;
  ring.channel = parties;
  ring.job_id = "job-000000000001";
  ring.ring = {"p1", "p2", "p3"};
  ring.round = 5;
  ring.chunk_words = chunk_words;
  return ring;
}

TEST(FinalCheckRingTest, RelaysEveryBoxToThePartyItIsForChunkByChunk) {
  ScriptedParties parties({"p1", "p2", "p3"});
  // 10 words in chunks of 6: two chunks; two state updates the parties have not had yet.
  std::vector<fedanon::v1::StateUpdate> pending(2);
  pending[0].set_sequence(7);
  pending[1].set_sequence(8);
  ASSERT_OK(RunFinalCheck(Ring(&parties, 6), pending, 10));
  EXPECT_THAT(
      parties.calls,
      ElementsAre(
          // chunk 0: the ring sum, the first party's unmask of the last hop, the others
          // verify the total sealed for them
          "p1 PHASE_SUM 0 ", "p2 PHASE_SUM 0 p1>p2/0", "p3 PHASE_SUM 0 p2>p3/0",
          "p1 PHASE_UNMASK 0 p3>p1/0", "p2 PHASE_VERIFY 0 p1>p2/0", "p3 PHASE_VERIFY 0 p1>p3/0",
          // chunk 1: the same, and every party (the first too) checks the model
          "p1 PHASE_SUM 1 ", "p2 PHASE_SUM 1 p1>p2/1", "p3 PHASE_SUM 1 p2>p3/1",
          "p1 PHASE_UNMASK 1 p3>p1/1", "p1 PHASE_VERIFY 1 ", "p2 PHASE_VERIFY 1 p1>p2/1",
          "p3 PHASE_VERIFY 1 p1>p3/1"));
  // The updates ride with chunk 0's ring sum only, to every party.
  EXPECT_THAT(parties.updates, ElementsAre(2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
}

TEST(FinalCheckRingTest, EveryRefusalIsNamedAndNoneIsLost) {
  ScriptedParties parties({"p1", "p2", "p3"});
  parties.refuse = {"p2"};
  parties.unconfirmed = {"p3"};
  const absl::Status status = RunFinalCheck(Ring(&parties, 6), {}, 10);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               "final check: the parties refuse to release"));
  EXPECT_THAT(status.message(), HasSubstr("party 'p2': refuses to release: k=3 fails"));
  EXPECT_THAT(status.message(), HasSubstr("party 'p3': did not confirm the check"));
}

TEST(FinalCheckRingTest, AMissingTotalOrASmallRingIsRefusedByName) {
  ScriptedParties parties({"p1", "p2", "p3"});
  parties.no_total_for = "p3";
  EXPECT_THAT(
      RunFinalCheck(Ring(&parties, 6), {}, 10),
      StatusIs(absl::StatusCode::kInternal, "the ring's first party sealed no total for 'p3'"));
  ScriptedParties two({"p1", "p2"});
  FinalCheckRing small = Ring(&two, 6);
  small.ring = {"p1", "p2"};
  EXPECT_THAT(RunFinalCheck(small, {}, 10),
              StatusIs(absl::StatusCode::kFailedPrecondition, "three or more data parties"));
  EXPECT_TRUE(two.calls.empty());
}

}  // namespace
}  // namespace fedanon::leader
