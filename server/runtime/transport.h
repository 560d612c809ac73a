// Transport settings shared by the leader's server and the parties' / admins' channels.
//
// * Messages up to 64 MiB each way (large secure-sum vectors are chunked below that by the leader);
//   the leader's server reads every parsable message so that an oversized reply can be named.
// * Keepalive for long-lived, often idle streams: clients ping every 20 s, the server every 30 s,
//   both wait 10 s for the answer, pings are allowed without active calls and without data, and
//   the server accepts client pings every 10 s or slower. A silently dropped connection (NAT
//   timeout, unplugged cable) is thus detected within ~30-40 s, failing the party's pending calls.
// * A connection must complete its TLS handshake within 10 s (kHandshakeTimeoutMs), so idle
//   unauthenticated connections do not hold the leader's descriptors.
// * Client reconnect backoff of gRPC itself is aligned with PartyClient's (0.5 s .. 30 s).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "server/runtime/tls.h"

namespace fedanon::server {

inline constexpr int kMaxMessageBytes = 64 * 1024 * 1024;
// What the leader's gRPC server reads at most: every message protobuf can parse (2 GiB - 1), so
// that a party's reply over the message limit arrives and is refused by name and size
// (PartyConnections) instead of gRPC cancelling the party's stream without saying why. A lower
// read limit would not bound memory: gRPC (1.51) holds a message whole before it checks its size
// (a 300 MiB reply against a 128 MiB limit took the leader to 403 MB, then ended the stream).
// Larger messages, which no protobuf encoder produces, still end the stream ("disconnected").
inline constexpr int kMaxServerReceiveBytes = std::numeric_limits<int32_t>::max();
// The server closes a connection whose TLS handshake has not completed within this time.
inline constexpr int kHandshakeTimeoutMs = 10'000;

// Applies the message-size and keepalive settings to a server under construction.
void ApplyServerTransportSettings(grpc::ServerBuilder& builder);

// Channel arguments for parties and admins dialling the leader. `max_send_message_bytes` -1:
// no send limit (tests only: a party that sends oversized replies; gRPC keeps the first value
// of a repeated argument, so it cannot be overridden afterwards).
grpc::ChannelArguments ClientChannelArguments(int max_send_message_bytes = kMaxMessageBytes);

// A new mTLS channel to the leader at `address` (host:port). Each channel uses its own
// subchannel pool, so a new channel makes a fresh connection attempt immediately.
std::shared_ptr<grpc::Channel> DialLeader(const std::string& address, const TlsMaterial& tls);

}  // namespace fedanon::server
