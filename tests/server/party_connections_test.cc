// PartyConnections without sockets: fake streams record what the leader writes, and the test
// plays the reader loop (Deliver / Disconnected).
#include "server/leader/party_connections.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

using ::fedanon::testing::StatusIs;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

class FakeStream : public leader_daemon::PartyStream {
 public:
  bool Write(const LeaderMessage& message) override {
    absl::MutexLock lock(&mu_);
    written_.push_back(message);
    written_cv_.SignalAll();
    return !broken_;
  }
  void Cancel() override { cancelled_ = true; }

  // Waits for the n-th written message.
  LeaderMessage WaitForWrite(size_t n) {
    absl::MutexLock lock(&mu_);
    while (written_.size() <= n) written_cv_.Wait(&mu_);
    return written_[n];
  }
  void Break() {
    absl::MutexLock lock(&mu_);
    broken_ = true;
  }

  std::atomic<bool> cancelled_{false};

 private:
  absl::Mutex mu_;
  std::vector<LeaderMessage> written_ ABSL_GUARDED_BY(mu_);
  absl::CondVar written_cv_;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

// A party that stopped reading: Write blocks until the stream is cancelled.
class StuckStream : public leader_daemon::PartyStream {
 public:
  bool Write(const LeaderMessage&) override {
    absl::MutexLock lock(&mu_);
    while (!cancelled_) cv_.Wait(&mu_);
    return false;
  }
  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    cv_.SignalAll();
  }
  bool cancelled() {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

LeaderMessage Ping(int64_t t) {
  LeaderMessage m;
  m.mutable_ping()->set_sent_unix_nanos(t);
  return m;
}

PartyMessage Pong(uint64_t request_id, int64_t t) {
  PartyMessage m;
  m.set_request_id(request_id);
  m.mutable_pong()->set_echoed_unix_nanos(t);
  return m;
}

TEST(PartyConnectionsTest, CallMatchesTheReplyByRequestId) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  const auto id = connections.Connected("a", "ipv4:1.2.3.4:5", "SEAL", "SIGN", stream);
  auto first = std::async(std::launch::async,
                          [&] { return connections.Call("a", Ping(1), absl::Seconds(10)); });
  auto second = std::async(std::launch::async,
                           [&] { return connections.Call("a", Ping(2), absl::Seconds(10)); });
  const LeaderMessage m0 = stream->WaitForWrite(0);
  const LeaderMessage m1 = stream->WaitForWrite(1);
  EXPECT_NE(m0.request_id(), m1.request_id());
  EXPECT_NE(m0.request_id(), 0u);
  // Answer out of order.
  connections.Deliver(id, Pong(m1.request_id(), m1.ping().sent_unix_nanos()));
  connections.Deliver(id, Pong(m0.request_id(), m0.ping().sent_unix_nanos()));
  ASSERT_OK_AND_ASSIGN(PartyMessage r1, first.get());
  ASSERT_OK_AND_ASSIGN(PartyMessage r2, second.get());
  EXPECT_EQ(r1.pong().echoed_unix_nanos(), 1);
  EXPECT_EQ(r2.pong().echoed_unix_nanos(), 2);

  const auto parties = connections.Parties();
  ASSERT_EQ(parties.size(), 1u);
  EXPECT_EQ(parties[0].name, "a");
  EXPECT_EQ(parties[0].peer, "ipv4:1.2.3.4:5");
  EXPECT_EQ(parties[0].seal_cert_pem, "SEAL");
  EXPECT_EQ(parties[0].sign_cert_pem, "SIGN");
  EXPECT_GT(parties[0].connected_since_unix, 0);
}

TEST(PartyConnectionsTest, UnknownPartyIsUnavailable) {
  leader_daemon::PartyConnections connections;
  EXPECT_THAT(connections.Call("ghost", Ping(1), absl::Seconds(1)),
              StatusIs(absl::StatusCode::kUnavailable, "party 'ghost' is not connected"));
}

TEST(PartyConnectionsTest, TimeoutIsDeadlineExceededAndLateRepliesAreDropped) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  const auto id = connections.Connected("slow", "p", "", "", stream);
  EXPECT_THAT(
      connections.Call("slow", Ping(1), absl::Milliseconds(50)),
      StatusIs(absl::StatusCode::kDeadlineExceeded, "party 'slow' did not answer within 50ms"));
  connections.Deliver(id, Pong(stream->WaitForWrite(0).request_id(), 1));  // dropped, no crash
  EXPECT_THAT(connections.Call("slow", Ping(1), absl::Seconds(2)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, "within 2 s"));
}

TEST(PartyConnectionsTest, ErrorReplyBecomesStatusNamingTheParty) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  const auto id = connections.Connected("a", "p", "", "", stream);
  auto call = std::async(std::launch::async,
                         [&] { return connections.Call("a", Ping(1), absl::Seconds(10)); });
  PartyMessage error;
  error.set_request_id(stream->WaitForWrite(0).request_id());
  error.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kFailedPrecondition));
  error.mutable_error()->set_message("wrong round");
  connections.Deliver(id, error);
  EXPECT_THAT(call.get(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "party 'a': wrong round"));

  fedanon::v1::ErrorReply bogus;
  bogus.set_code(0);
  bogus.set_message("x");
  EXPECT_EQ(leader_daemon::ErrorReplyToStatus("a", bogus).code(), absl::StatusCode::kUnknown);
  bogus.set_code(99);
  EXPECT_EQ(leader_daemon::ErrorReplyToStatus("a", bogus).code(), absl::StatusCode::kUnknown);
  // A party cannot forge log lines in the leader's log or the admin's view with its message.
  bogus.set_code(static_cast<int>(absl::StatusCode::kInternal));
  bogus.set_message("oops\n2026-01-01T00:00:00Z info fedanon-leader: job=job-1 done\x1b[2J");
  EXPECT_EQ(leader_daemon::ErrorReplyToStatus("a", bogus).message(),
            "party 'a': oops\\x0a2026-01-01T00:00:00Z info fedanon-leader: job=job-1 "
            "done\\x1b[2J");
}

TEST(PartyConnectionsTest, AWriteThePartyDoesNotTakeEndsAtTheDeadline) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<StuckStream>();
  connections.Connected("slow", "p", "", "", stream);
  const absl::Time start = absl::Now();
  EXPECT_THAT(connections.Call("slow", Ping(1), absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "party 'slow' did not take the request within"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_TRUE(stream->cancelled());
}

TEST(PartyConnectionsTest, DisconnectFailsPendingCalls) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  const auto id = connections.Connected("a", "p", "", "", stream);
  auto call = std::async(std::launch::async,
                         [&] { return connections.Call("a", Ping(1), absl::Seconds(30)); });
  stream->WaitForWrite(0);
  connections.Disconnected(id);
  EXPECT_THAT(call.get(), StatusIs(absl::StatusCode::kUnavailable, "party 'a' disconnected"));
  EXPECT_FALSE(connections.IsConnected("a"));
  EXPECT_THAT(connections.Call("a", Ping(1), absl::Seconds(1)),
              StatusIs(absl::StatusCode::kUnavailable, "not connected"));
}

// A party's announced sealing certificate (a rotated key) replaces the one its hello carried in
// what jobs prepared from then on see; an announcement on a replaced connection changes nothing.
TEST(PartyConnectionsTest, AnnouncedSealCertificateReplacesTheHellosForLaterJobs) {
  leader_daemon::PartyConnections connections;
  const auto old_id = connections.Connected("a", "p", "SEAL-1", "", std::make_shared<FakeStream>());
  ASSERT_EQ(connections.Parties().size(), 1u);
  EXPECT_EQ(connections.Parties()[0].seal_cert_pem, "SEAL-1");
  EXPECT_TRUE(connections.UpdateSealCertificate(old_id, "SEAL-2", "SIGN-2"));
  EXPECT_EQ(connections.Parties()[0].seal_cert_pem, "SEAL-2");
  EXPECT_EQ(connections.Parties()[0].sign_cert_pem, "SIGN-2");
  const auto new_id = connections.Connected("a", "p", "SEAL-3", "", std::make_shared<FakeStream>());
  EXPECT_FALSE(connections.UpdateSealCertificate(old_id, "SEAL-4", ""));
  EXPECT_EQ(connections.Parties()[0].seal_cert_pem, "SEAL-3");
  connections.Disconnected(new_id);
  EXPECT_FALSE(connections.UpdateSealCertificate(new_id, "SEAL-5", ""));
}

TEST(PartyConnectionsTest, BrokenStreamFailsTheCallAtOnce) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  stream->Break();
  connections.Connected("a", "p", "", "", stream);
  EXPECT_THAT(connections.Call("a", Ping(1), absl::Seconds(30)),
              StatusIs(absl::StatusCode::kUnavailable, "party 'a' disconnected"));
}

TEST(PartyConnectionsTest, SecondConnectionReplacesTheFirst) {
  leader_daemon::PartyConnections connections;
  auto old_stream = std::make_shared<FakeStream>();
  const auto old_id = connections.Connected("a", "old", "", "", old_stream);
  auto call = std::async(std::launch::async,
                         [&] { return connections.Call("a", Ping(1), absl::Seconds(30)); });
  old_stream->WaitForWrite(0);
  auto new_stream = std::make_shared<FakeStream>();
  const auto new_id = connections.Connected("a", "new", "", "", new_stream);
  EXPECT_TRUE(old_stream->cancelled_);
  EXPECT_THAT(call.get(), StatusIs(absl::StatusCode::kUnavailable, "party 'a' disconnected"));
  // The old reader's end does not unregister the new connection.
  connections.Disconnected(old_id);
  ASSERT_TRUE(connections.IsConnected("a"));
  EXPECT_EQ(connections.Parties()[0].peer, "new");
  auto next = std::async(std::launch::async,
                         [&] { return connections.Call("a", Ping(5), absl::Seconds(30)); });
  connections.Deliver(new_id, Pong(new_stream->WaitForWrite(0).request_id(), 5));
  ASSERT_OK_AND_ASSIGN(PartyMessage r, next.get());
  EXPECT_EQ(r.pong().echoed_unix_nanos(), 5);
}

TEST(PartyConnectionsTest, OversizeRequestIsRefusedBeforeWriting) {
  leader_daemon::PartyConnections connections;
  auto stream = std::make_shared<FakeStream>();
  connections.Connected("a", "p", "", "", stream);
  LeaderMessage big;
  big.mutable_sum_step()->mutable_sealed()->set_ciphertext(std::string(64 * 1024 * 1024, 'x'));
  EXPECT_THAT(connections.Call("a", big, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kResourceExhausted, "64 MiB message limit"));
}

TEST(PartyConnectionsTest, CancelAllCancelsEveryStream) {
  leader_daemon::PartyConnections connections;
  auto a = std::make_shared<FakeStream>();
  auto b = std::make_shared<FakeStream>();
  connections.Connected("a", "p", "", "", a);
  connections.Connected("b", "p", "", "", b);
  connections.CancelAll();
  EXPECT_TRUE(a->cancelled_);
  EXPECT_TRUE(b->cancelled_);
  const auto parties = connections.Parties();
  ASSERT_EQ(parties.size(), 2u);
  EXPECT_EQ(parties[0].name, "a");
  EXPECT_EQ(parties[1].name, "b");
}

}  // namespace
}  // namespace fedanon::server
