// InProcessPartyChannel (party/testing/in_process_channel.h): the parties it lists, calls to a
// party that is unknown or went away, ErrorReplies as statuses naming the party, the request id
// echoed, and the observer of every serialized reply.
#include "party/testing/in_process_channel.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/party/party_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

LeaderMessage Ping(int64_t sent, uint64_t request_id = 0) {
  LeaderMessage msg;
  msg.set_request_id(request_id);
  msg.mutable_ping()->set_sent_unix_nanos(sent);
  return msg;
}

TEST(InProcessPartyChannel, ListsConnectedPartiesByName) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("channel_list", {{}, {}, {}}));
  const std::vector<wire::ConnectedParty> parties = f->channel.Parties();
  ASSERT_EQ(parties.size(), 3u);
  for (size_t i = 0; i < parties.size(); ++i) {
    EXPECT_EQ(parties[i].name, f->names[i]);
    EXPECT_EQ(parties[i].peer, "in-process");
    EXPECT_EQ(parties[i].seal_cert_pem, f->agents[i]->seal_cert_pem());
  }
}

TEST(InProcessPartyChannel, DisconnectedAndUnknownPartiesAreUnavailable) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("channel_disconnect", {{}, {}}));
  EXPECT_THAT(f->Call("hospital-z", Ping(1)),
              StatusIs(absl::StatusCode::kUnavailable, "party 'hospital-z' is not connected"));
  f->channel.Disconnect("hospital-a");
  EXPECT_THAT(f->Call("hospital-a", Ping(1)),
              StatusIs(absl::StatusCode::kUnavailable, "party 'hospital-a' is not connected"));
  ASSERT_EQ(f->channel.Parties().size(), 1u);
  EXPECT_EQ(f->channel.Parties()[0].name, "hospital-b");
  EXPECT_OK(f->Call("hospital-b", Ping(1)));
  // Adding the agent again reconnects it.
  f->channel.Add(f->agents[0].get());
  EXPECT_OK(f->Call("hospital-a", Ping(1)));
  EXPECT_EQ(f->channel.Parties().size(), 2u);
}

TEST(InProcessPartyChannel, RepliesCarryTheRequestIdAndErrorsNameTheParty) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("channel_errors", {{}}));
  ASSERT_OK_AND_ASSIGN(PartyMessage pong, f->Call("hospital-a", Ping(77, 42)));
  EXPECT_EQ(pong.request_id(), 42u);
  EXPECT_EQ(pong.pong().echoed_unix_nanos(), 77);
  LeaderMessage sum;
  sum.set_job_id("job-000000000001");
  sum.mutable_sum_step();
  EXPECT_THAT(f->Call("hospital-a", sum),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "party 'hospital-a': no prepared job with this id"));
}

TEST(InProcessPartyChannel, ObserverSeesEverySerializedReply) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("channel_observer", {{}, {}}));
  absl::Mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;
  f->channel.set_observer([&](const std::string& party, const std::string& bytes) {
    absl::MutexLock lock(&mu);
    seen.emplace_back(party, bytes);
  });
  ASSERT_OK(f->Call("hospital-b", Ping(5, 1)));
  LeaderMessage bad;
  bad.set_request_id(2);
  EXPECT_FALSE(f->Call("hospital-a", bad).ok());

  absl::MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, "hospital-b");
  PartyMessage first;
  ASSERT_TRUE(first.ParseFromString(seen[0].second));
  EXPECT_EQ(first.pong().echoed_unix_nanos(), 5);
  EXPECT_EQ(seen[1].first, "hospital-a");
  PartyMessage second;
  ASSERT_TRUE(second.ParseFromString(seen[1].second));
  EXPECT_TRUE(second.has_error());  // error replies are observed too
  EXPECT_EQ(second.request_id(), 2u);
}

}  // namespace
}  // namespace fedanon::testing
