#include "server/runtime/transport.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>

namespace fedanon::server {

void ApplyServerTransportSettings(grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(kMaxServerReceiveBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // An unauthenticated connection holds a descriptor for at most this long (guarded_listener.h).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
}

grpc::ChannelArguments ClientChannelArguments(int max_send_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(max_send_message_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 30'000);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

std::shared_ptr<grpc::Channel> DialLeader(const std::string& address, const TlsMaterial& tls) {
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(tls), ClientChannelArguments());
}

}  // namespace fedanon::server
