#include "server/leader/party_link_service.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/printable.h"
#include "common/base/version.h"
#include "common/wire/protocol_version.h"
#include "crypto/certificates.h"
#include "server/runtime/status_convert.h"
#include "server/runtime/tls.h"

namespace fedanon::leader_daemon {
namespace {

using ReaderWriter =
    grpc::ServerReaderWriter<fedanon::v1::LeaderMessage, fedanon::v1::PartyMessage>;

// The write side of one Connect call, shared with PartyConnections. The handler calls Close()
// before it returns, after which the gRPC objects are never touched again.
class GrpcPartyStream final : public PartyStream {
 public:
  GrpcPartyStream(grpc::ServerContext* context, ReaderWriter* stream)
      : context_(context), stream_(stream) {}

  bool Write(const fedanon::v1::LeaderMessage& message) override {
    absl::MutexLock write_lock(&write_mu_);
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return false;
    }
    return stream_->Write(message);
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    if (!closed_) context_->TryCancel();
  }

  // Cancels the call (unblocking a Write stuck on flow control) and waits for any Write in
  // progress to return.
  void Close() {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    context_->TryCancel();
    absl::MutexLock write_lock(&write_mu_);
  }

 private:
  grpc::ServerContext* context_;
  absl::Mutex write_mu_;
  ReaderWriter* stream_ ABSL_PT_GUARDED_BY(write_mu_);  // written to under write_mu_ only
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

PartyLinkService::PartyLinkService(std::string leader_name, std::string ca_pem,
                                   PartyConnections* connections)
    : leader_name_(std::move(leader_name)), ca_pem_(std::move(ca_pem)), connections_(connections) {}

absl::Status PartyLinkService::CheckSignCertificate(const std::string& party,
                                                    const fedanon::v1::PartyHello& hello) {
  // A party without one (a kit made before statement-signing certificates) takes part in
  // horizontal jobs only: the parties of a vertical job refuse a Prepare that lacks it.
  if (hello.sign_certificate().empty()) return absl::OkStatus();
  absl::Status st = crypto::VerifiedStatementKey(hello.sign_certificate(), ca_pem(),
                                                 crypto::Identity{crypto::Role::kParty, party})
                        .status();
  if (st.ok() && revocation_ != nullptr && revocation_->enabled()) {
    st = revocation_->Check(hello.sign_certificate());
  }
  if (!st.ok()) {
    return absl::Status(st.code(),
                        absl::StrCat("the statement-signing certificate in the hello is not valid "
                                     "for party '",
                                     party, "': ", st.message()));
  }
  return absl::OkStatus();
}

void PartyLinkService::Reannounced(const std::string& party, const std::string& peer,
                                   PartyConnections::ConnectionId id,
                                   const fedanon::v1::PartyHello& hello) {
  absl::Status st = crypto::VerifiedSealKey(hello.seal_certificate(), ca_pem(),
                                            crypto::Identity{crypto::Role::kParty, party})
                        .status();
  if (st.ok() && revocation_ != nullptr && revocation_->enabled()) {
    st = revocation_->Check(hello.seal_certificate());
  }
  if (st.ok()) st = CheckSignCertificate(party, hello);
  if (!st.ok()) {
    spdlog::error(
        "party '{}' from {} announced a sealing or statement-signing certificate the leader "
        "refuses ({}); jobs go on recording the ones it had",
        party, peer, std::string(st.message()));
    return;
  }
  if (connections_->UpdateSealCertificate(id, hello.seal_certificate(), hello.sign_certificate())) {
    spdlog::info(
        "party '{}' from {} announced a new sealing certificate (a rotated key): jobs prepared "
        "from now on record it",
        party, peer);
  }
}

grpc::Status PartyLinkService::Connect(grpc::ServerContext* context, ReaderWriter* stream) {
  const std::string peer = context->peer();
  absl::StatusOr<std::string> authenticated = AuthenticatedParty(*context);
  if (!authenticated.ok()) return server::ToGrpcStatus(authenticated.status());
  const std::string& party = *authenticated;

  fedanon::v1::PartyMessage first;
  if (!stream->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the stream ended before the party's hello");
  }
  if (!first.has_hello()) {
    spdlog::warn("PartyLink: party '{}' from {} did not open with a hello", party, peer);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on PartyLink.Connect must be a hello");
  }
  const fedanon::v1::PartyHello& hello = first.hello();
  if (absl::Status st = CheckHello(party, peer, hello); !st.ok()) return server::ToGrpcStatus(st);
  const wire::ProtocolVersion protocol = wire::ProtocolVersionOf(hello);

  fedanon::v1::LeaderMessage ack;
  ack.mutable_hello_ack()->set_leader(leader_name_);
  ack.mutable_hello_ack()->set_version(std::string(base::Version()));
  *ack.mutable_hello_ack()->mutable_protocol_version() = wire::ToProto(wire::kProtocolVersion);
  if (!stream->Write(ack)) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream ended during the hello");
  }

  auto writer = std::make_shared<GrpcPartyStream>(context, stream);
  const PartyConnections::ConnectionId id = connections_->Connected(
      party, peer, hello.seal_certificate(), hello.sign_certificate(), writer, protocol);
  spdlog::info("party '{}' connected from {} (version {}, protocol {})", party, peer,
               base::Printable(hello.version(), 128), wire::ProtocolVersionText(protocol));
  // The handshake checked the certificates' validity once; the stream may last for weeks. It
  // ends when the TLS or the sealing certificate expires (the party then reconnects with a
  // renewed one, or is refused).
  const absl::Time expiry = EarliestExpiry(*context, hello);
  const uint64_t expiry_token = certificate_expiry_.Arm(expiry, [writer, party, expiry] {
    spdlog::warn("party '{}': its certificate expired at {}; stream closed", party,
                 absl::FormatTime(expiry, absl::UTCTimeZone()));
    writer->Cancel();
  });

  while (true) {
    fedanon::v1::PartyMessage message;
    if (!stream->Read(&message)) break;
    if (message.request_id() == 0 && message.has_hello()) {
      Reannounced(party, peer, id, message.hello());
      continue;
    }
    connections_->Deliver(id, std::move(message));
  }
  const bool cancelled = context->IsCancelled();
  const bool expired = !certificate_expiry_.Disarm(expiry_token);
  connections_->Disconnected(id);
  writer->Close();
  spdlog::info("party '{}' disconnected from {} ({})", party, peer,
               expired     ? "certificate expired"
               : cancelled ? "stream cancelled"
                           : "stream closed by the party");
  return grpc::Status::OK;
}

absl::StatusOr<std::string> PartyLinkService::AuthenticatedParty(
    const grpc::ServerContext& context) const {
  const std::string peer = context.peer();
  absl::StatusOr<crypto::Identity> identity = server::PeerIdentity(context);
  if (!identity.ok()) {
    spdlog::warn("PartyLink: rejected {}: {}", peer, identity.status().ToString());
    return identity.status();
  }
  if (identity->role != crypto::Role::kParty) {
    spdlog::warn("PartyLink: rejected {} from {}: not a party certificate",
                 server::IdentityString(*identity), peer);
    return absl::PermissionDeniedError("only parties may connect to PartyLink");
  }
  if (revocation_ != nullptr && revocation_->enabled()) {
    if (absl::Status st = revocation_->Check(server::PeerCertificatePem(context)); !st.ok()) {
      spdlog::warn("PartyLink: rejected party '{}' from {}: {}", identity->name, peer,
                   std::string(st.message()));
      return st;
    }
  }
  return identity->name;
}

absl::Status PartyLinkService::CheckHello(const std::string& party, const std::string& peer,
                                          const fedanon::v1::PartyHello& hello) {
  if (absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> seal = crypto::VerifiedSealKey(
          hello.seal_certificate(), ca_pem(), crypto::Identity{crypto::Role::kParty, party});
      !seal.ok()) {
    spdlog::warn("PartyLink: party '{}' from {} sent an unusable seal certificate: {}", party, peer,
                 seal.status().ToString());
    return absl::PermissionDeniedError(
        absl::StrCat("the seal certificate in the hello is not valid for party '", party,
                     "': ", seal.status().message()));
  }
  if (revocation_ != nullptr && revocation_->enabled()) {
    if (absl::Status st = revocation_->Check(hello.seal_certificate()); !st.ok()) {
      spdlog::warn("PartyLink: rejected party '{}' from {}: sealing certificate: {}", party, peer,
                   std::string(st.message()));
      return st;
    }
  }
  if (absl::Status st = CheckSignCertificate(party, hello); !st.ok()) {
    spdlog::warn("PartyLink: rejected party '{}' from {}: {}", party, peer,
                 std::string(st.message()));
    return st;
  }
  // The protocol version (common/wire/protocol_version.h): a party the leader cannot serve is
  // refused with both versions named (it backs off and retries; its operator must upgrade).
  const wire::ProtocolVersion protocol = wire::ProtocolVersionOf(hello);
  if (absl::Status st = wire::CheckPartyProtocol(party, protocol); !st.ok()) {
    spdlog::warn("PartyLink: rejected party '{}' from {} (version {}): {}", party, peer,
                 base::Printable(hello.version(), 128), std::string(st.message()));
    return st;
  }
  return absl::OkStatus();
}

absl::Time PartyLinkService::EarliestExpiry(const grpc::ServerContext& context,
                                            const fedanon::v1::PartyHello& hello) {
  absl::Time expiry = absl::InfiniteFuture();
  std::vector<std::string> certificates = {server::PeerCertificatePem(context),
                                           hello.seal_certificate()};
  if (!hello.sign_certificate().empty()) certificates.push_back(hello.sign_certificate());
  for (const std::string& pem : certificates) {
    absl::StatusOr<absl::Time> not_after = crypto::CertificateNotAfter(pem);
    expiry = std::min(expiry, not_after.ok() ? *not_after : absl::Now());
  }
  return expiry;
}

}  // namespace fedanon::leader_daemon
