// The leader's registry of connected parties and the request/reply matching on their streams:
// the gRPC implementation of wire::PartyChannel.
//
// 1. A party opens PartyLink.Connect; after its hello the service calls Connected(), which
//    registers the stream under the party's certificate name (a second connection of the same
//    party replaces the first: the old stream is cancelled and its pending calls fail).
// 2. Call() assigns a fresh request_id, writes the LeaderMessage on that party's stream (writes on
//    one stream are serialized by a per-stream mutex) and waits on a condition variable for the
//    PartyMessage with that id, the deadline, or the end of the stream.
// 3. The service's reader loop hands every PartyMessage to Deliver(); when the stream ends it
//    calls Disconnected(), failing the pending calls with Unavailable "party 'x' disconnected".
//
// Connections are identified by a ConnectionId rather than the party name so that the reader of
// a replaced stream cannot deliver into or unregister its successor.
//
// Thread-safe. PartyStream::Write may block on flow control; it is never called under the
// registry lock, so one slow party does not stall calls to the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"
#include "fedanon/v1/federation.pb.h"
#include "server/leader/deadline_watchdog.h"

namespace fedanon::leader_daemon {

// The write side of one party stream (implemented over gRPC by the PartyLink service, by fakes
// in tests).
class PartyStream {
 public:
  virtual ~PartyStream() = default;
  // Writes one message; false when the stream is broken. PartyConnections never calls Write on
  // the same stream from two threads at once.
  virtual bool Write(const fedanon::v1::LeaderMessage& message) = 0;
  // Ends the stream; its reader then sees the end and calls Disconnected(). Thread-safe,
  // idempotent, non-blocking.
  virtual void Cancel() = 0;
};

// Told the size of every message on a party's stream (server/leader/leader_metrics.h counts them
// per party). Called under the registry's lock: must be cheap and must not call back.
class PartyTraffic {
 public:
  virtual ~PartyTraffic() = default;
  virtual void Sent(const std::string& party, uint64_t bytes) = 0;
  virtual void Received(const std::string& party, uint64_t bytes) = 0;
};

// The status a party's ErrorReply stands for: its code (kUnknown if not a valid error code) and
// "party '<party>': <message>".
absl::Status ErrorReplyToStatus(const std::string& party, const fedanon::v1::ErrorReply& error);

class PartyConnections final : public wire::PartyChannel {
 public:
  using ConnectionId = uint64_t;

  PartyConnections() = default;
  ~PartyConnections() override = default;
  PartyConnections(const PartyConnections&) = delete;
  PartyConnections& operator=(const PartyConnections&) = delete;

  // Registers `party` (its name from the verified certificate) on `stream`; replaces and cancels
  // an earlier connection of the same party.
  ConnectionId Connected(const std::string& party, const std::string& peer,
                         const std::string& seal_cert_pem, const std::string& sign_cert_pem,
                         std::shared_ptr<PartyStream> stream,
                         wire::ProtocolVersion protocol = wire::kProtocolVersion);
  // A message read from `connection`: completes the pending call with its request_id (replies
  // to unknown or timed-out requests are logged and dropped).
  void Deliver(ConnectionId connection, fedanon::v1::PartyMessage message);
  // The party on `connection` announced a new sealing certificate and statement-signing
  // certificate (already verified): jobs prepared from now on record them. False when the
  // connection is gone (replaced or ended).
  bool UpdateSealCertificate(ConnectionId connection, const std::string& seal_cert_pem,
                             const std::string& sign_cert_pem);
  // The stream of `connection` ended: unregisters it (unless already replaced) and fails its
  // pending calls with Unavailable "party 'x' disconnected".
  void Disconnected(ConnectionId connection);
  // Cancels every stream (graceful shutdown); their readers then call Disconnected().
  void CancelAll();

  bool IsConnected(const std::string& party) const;
  size_t size() const;  // connected parties

  // Counts the bytes of every request written and reply delivered (not owned; null: nobody).
  // Set before the first connection.
  void set_traffic(PartyTraffic* traffic) { traffic_ = traffic; }

  // wire::PartyChannel. Errors: Unavailable ("party 'x' is not connected" / "party 'x'
  // disconnected"), DeadlineExceeded ("party 'x' did not answer within 30 s", or "did not take
  // the request within 30 s": a Write still blocked at the deadline, because the party stopped
  // reading, cancels its stream),
  // ResourceExhausted (request over the 64 MiB message limit; nothing is sent), or the party's
  // ErrorReply as a status naming the party.
  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override;
  // Sorted by name.
  std::vector<wire::ConnectedParty> Parties() const override;

 private:
  struct Connection {
    ConnectionId id = 0;
    wire::ConnectedParty info;
    std::shared_ptr<PartyStream> stream;
    std::shared_ptr<absl::Mutex> write_mu;  // serializes writes on `stream`
  };
  // A call waiting for its reply. Its fields are guarded by mu_ (the registry's lock; the
  // analysis cannot name it from a nested struct).
  struct Pending {
    std::string party;
    ConnectionId connection = 0;
    bool done = false;
    absl::StatusOr<fedanon::v1::PartyMessage> result;
    absl::CondVar cv;
  };

  // Completes every pending call on `connection` with `status`.
  void FailPendingLocked(ConnectionId connection, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  PartyTraffic* traffic_ = nullptr;
  DeadlineWatchdog write_deadlines_;  // a request's Write must end by the call's deadline
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Connection> by_name_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
  ConnectionId next_connection_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace fedanon::leader_daemon
