#include "tests/fault/fake_party.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/support/sync_stream.h>

#include <random>
#include <utility>

#include "absl/time/clock.h"
#include "common/base/version.h"
#include "common/wire/protocol_version.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/runtime/transport.h"

namespace fedanon::testing {

absl::StatusOr<std::unique_ptr<FakeParty>> FakeParty::Create(const std::string& name,
                                                             const std::string& bundle,
                                                             const std::string& data_dir,
                                                             const std::string& output_dir,
                                                             const std::string& leader_address) {
  std::unique_ptr<FakeParty> p(new FakeParty());
  p->name_ = name;
  p->leader_address_ = leader_address;
  server::TlsPaths paths;
  paths.ca = bundle + "/ca.crt";
  paths.cert = bundle + "/tls.crt";
  paths.key = bundle + "/tls.key";
  absl::StatusOr<server::TlsMaterial> tls = server::LoadTlsMaterial(paths);
  if (!tls.ok()) return tls.status();
  p->tls_ = *std::move(tls);
  party::PartyAgentOptions options;
  options.name = name;
  options.data_dir = data_dir;
  options.default_data_path = "table.csv";
  options.output_dir = output_dir;
  options.ca_pem = p->tls_.ca_pem;
  absl::StatusOr<std::string> cert =
      server::ReadCertificateFile(bundle + "/seal.crt", "seal certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = server::ReadPrivateKeyFile(bundle + "/seal.key", "seal key");
  if (!key.ok()) return key.status();
  options.seal_cert_pem = *cert;
  options.seal_key_pem = *std::move(key);
  p->seal_cert_pem_ = *cert;
  // The statement-signing pair of a party's kit (fedanonctl provision writes one).
  absl::StatusOr<std::string> sign_cert =
      server::ReadCertificateFile(bundle + "/sign.crt", "sign certificate");
  if (!sign_cert.ok()) return sign_cert.status();
  absl::StatusOr<std::string> sign_key =
      server::ReadPrivateKeyFile(bundle + "/sign.key", "sign key");
  if (!sign_key.ok()) return sign_key.status();
  options.sign_cert_pem = *sign_cert;
  options.sign_key_pem = *std::move(sign_key);
  p->sign_cert_pem_ = *sign_cert;
  absl::StatusOr<std::unique_ptr<party::PartyAgent>> agent =
      party::PartyAgent::Create(std::move(options));
  if (!agent.ok()) return agent.status();
  p->agent_ = *std::move(agent);
  return p;
}

FakeParty::~FakeParty() { Stop(); }

void FakeParty::Start() {
  thread_ = std::thread([this] { Run(); });
}

void FakeParty::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

void FakeParty::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    Session();
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200))) return;
  }
}

fedanon::v1::PartyMessage FakeParty::Corrupt(fedanon::v1::PartyMessage reply) {
  const Corruption c = corruption_.exchange(Corruption::kNone);
  corrupted_ = c != Corruption::kNone;
  switch (c) {
    case Corruption::kNone:
      break;
    case Corruption::kGarbageCiphertext: {
      std::string* ct = reply.mutable_sum_step()->mutable_sealed()->mutable_ciphertext();
      std::mt19937 rng(1);
      for (char& ch : *ct) ch = static_cast<char>(rng());
      break;
    }
    case Corruption::kWrongReplyKind: {
      const uint64_t id = reply.request_id();
      reply.Clear();
      reply.set_request_id(id);
      reply.mutable_pong()->set_echoed_unix_nanos(42);
      break;
    }
    case Corruption::kOversized:
      reply.mutable_sum_step()->mutable_sealed()->mutable_ciphertext()->append(size_t{65} << 20,
                                                                               'x');
      break;
    case Corruption::kOversized200MiB:
      reply.mutable_sum_step()->mutable_sealed()->mutable_ciphertext()->append(size_t{200} << 20,
                                                                               'x');
      break;
  }
  return reply;
}

void FakeParty::Session() {
  // The transport's settings, without the send limit (the leader's receive limit is the point).
  // (A second SetMaxSendMessageSize would be ignored: gRPC keeps the first value.)
  grpc::ChannelArguments args = server::ClientChannelArguments(/*max_send_message_bytes=*/-1);
  const auto channel =
      grpc::CreateCustomChannel(leader_address_, server::MakeChannelCredentials(tls_), args);
  const auto stub = fedanon::v1::PartyLink::NewStub(channel);
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    context_ = &context;
  }
  auto stream = stub->Connect(&context);
  fedanon::v1::PartyMessage hello;
  hello.mutable_hello()->set_version(std::string(base::Version()));
  hello.mutable_hello()->set_seal_certificate(seal_cert_pem_);
  hello.mutable_hello()->set_sign_certificate(sign_cert_pem_);
  // This build's protocol (a hello without one is taken for 1.0, which the leader refuses).
  *hello.mutable_hello()->mutable_protocol_version() = wire::ToProto(wire::kProtocolVersion);
  fedanon::v1::LeaderMessage message;
  if (stream->Write(hello) && stream->Read(&message) && message.has_hello_ack()) {
    ++sessions_;
    while (stream->Read(&message)) {
      fedanon::v1::PartyMessage reply = agent_->Handle(message);
      if (message.has_sum_step() && reply.has_sum_step() &&
          corruption_.load() != Corruption::kNone) {
        reply = Corrupt(std::move(reply));
      }
      if (!stream->Write(reply)) break;
    }
  }
  context.TryCancel();
  stream->Finish();
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
}

}  // namespace fedanon::testing
