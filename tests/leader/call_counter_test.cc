// The leader's per-job call counter (leader/call_counter.h): calls pass through unchanged, and
// the waves (the job's sequential round trips), the bytes each way and the critical path's bytes
// are counted as the header says, with calls one after the other and calls to several parties at
// once.
#include "leader/call_counter.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

using ::fedanon::testing::StatusIs;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

// Answers a call to a party once that party is opened (until then the call is held), with a
// reply of `reply_bytes` payload bytes; a call to "away" fails at once (Unavailable).
class HeldParties : public wire::PartyChannel {
 public:
  explicit HeldParties(size_t reply_bytes) : reply_bytes_(reply_bytes) {}

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration) override {
    if (party == "away") return absl::UnavailableError("party 'away' is not connected");
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_.contains(party); });
    --held_;
    PartyMessage reply;
    reply.set_request_id(request.request_id());
    reply.mutable_error()->set_message(std::string(reply_bytes_, 'x'));
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override {
    wire::ConnectedParty a;
    a.name = "a";
    return {a};
  }

  void Open(const std::string& party) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.insert(party);
    changed_.notify_all();
  }
  void AwaitHeld(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return held_ >= n; });
  }

 private:
  const size_t reply_bytes_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::set<std::string> open_;
  int held_ = 0;
};

LeaderMessage Request(uint64_t id, size_t payload_bytes) {
  LeaderMessage m;
  m.set_request_id(id);
  m.set_job_id(std::string(payload_bytes, 'j'));
  return m;
}

TEST(CallCounterTest, CallsOneAfterTheOtherAreOneWaveEach) {
  HeldParties parties(100);
  parties.Open("a");
  parties.Open("b");
  CallCounter counter(&parties);
  const LeaderMessage small = Request(7, 10);
  const LeaderMessage big = Request(8, 1000);
  absl::StatusOr<PartyMessage> reply = counter.Call("a", small, absl::Seconds(1));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->request_id(), 7u);  // passed through unchanged
  ASSERT_TRUE(counter.Call("b", big, absl::Seconds(1)).ok());
  const uint64_t reply_size = reply->ByteSizeLong();
  const CallCounts c = counter.counts();
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(c.waves, 2u);
  EXPECT_EQ(c.bytes_sent, small.ByteSizeLong() + big.ByteSizeLong());
  EXPECT_EQ(c.bytes_received, 2 * reply_size);
  // Each wave had one party: all of it is on the critical path.
  EXPECT_EQ(c.critical_bytes, c.bytes_sent + c.bytes_received);
  EXPECT_EQ(counter.Parties().size(), 1u);
}

TEST(CallCounterTest, CallsInFlightTogetherShareAWaveAndItsBusiestPartyCounts) {
  HeldParties parties(50);
  CallCounter counter(&parties);
  const LeaderMessage to_a = Request(1, 10);
  const LeaderMessage to_b = Request(2, 2000);
  std::thread a([&] { EXPECT_TRUE(counter.Call("a", to_a, absl::Seconds(5)).ok()); });
  std::thread b([&] { EXPECT_TRUE(counter.Call("b", to_b, absl::Seconds(5)).ok()); });
  parties.AwaitHeld(2);  // both in flight at once
  parties.Open("a");
  a.join();
  parties.Open("b");
  b.join();
  PartyMessage reply;
  reply.mutable_error()->set_message(std::string(50, 'x'));
  reply.set_request_id(2);
  const CallCounts c = counter.counts();
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(c.waves, 1u);
  EXPECT_EQ(c.critical_bytes, to_b.ByteSizeLong() + reply.ByteSizeLong());  // b's, the busiest
  EXPECT_LT(c.critical_bytes, c.bytes_sent + c.bytes_received);

  // A failed call counts as a call and a wave, with no reply bytes, and its error passes through.
  EXPECT_THAT(counter.Call("away", to_a, absl::Seconds(1)).status(),
              StatusIs(absl::StatusCode::kUnavailable, "party 'away' is not connected"));
  const CallCounts after = counter.counts();
  EXPECT_EQ(after.calls, 3u);
  EXPECT_EQ(after.waves, 2u);
  EXPECT_EQ(after.bytes_received, c.bytes_received);
  EXPECT_EQ(after.critical_bytes, c.critical_bytes + to_a.ByteSizeLong());
}

}  // namespace
}  // namespace fedanon::leader
