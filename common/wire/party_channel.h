// How the leader's protocol logic reaches the parties: one request, one reply, with a deadline.
//
// The gRPC implementation (server/leader/party_connections.h) writes the request on the party's
// long-lived stream and waits for the reply with the same request_id; the in-process
// implementation (party/testing/in_process_channel.h) calls a PartyAgent directly, so N-party
// protocol tests run in one process. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/wire/protocol_version.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {

struct ConnectedParty {
  std::string name;
  int64_t connected_since_unix = 0;
  std::string peer;           // transport address, for operators
  std::string seal_cert_pem;  // as presented in the party's hello (verified by the receivers)
  std::string sign_cert_pem;  // its statement-signing certificate, likewise ("" when it has none)
  ProtocolVersion protocol = kProtocolVersion;  // as announced in its hello
};

class PartyChannel {
 public:
  virtual ~PartyChannel() = default;

  // Sends `request` to `party` and waits for its reply. Errors: Unavailable ("party 'x' is not
  // connected" / "party 'x' disconnected"), DeadlineExceeded ("party 'x' did not answer within
  // 30 s"), or the party's ErrorReply converted to a status with the party named.
  virtual absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                         const fedanon::v1::LeaderMessage& request,
                                                         absl::Duration timeout) = 0;

  virtual std::vector<ConnectedParty> Parties() const = 0;
};

}  // namespace fedanon::wire
