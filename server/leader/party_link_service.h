// The leader's side of PartyLink.Connect: the long-lived stream each party dials out to open.
//
// 1. The caller's identity comes from its verified TLS certificate; only role `party` may
//    connect (PERMISSION_DENIED "only parties may connect to PartyLink" otherwise).
// 2. The first message must be a PartyHello (INVALID_ARGUMENT otherwise) carrying the party's
//    sealing certificate, which must be a CA-signed seal certificate for the same party name
//    (PERMISSION_DENIED otherwise; other parties verify it again before sealing for it).
// 3. The leader answers with a HelloAck, registers the stream in PartyConnections and from then on
//    reads replies and delivers them to the waiting calls until the stream ends.
// Thread-safe; each stream runs on one gRPC sync-server thread.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/sync_stream.h>

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/leader/deadline_watchdog.h"
#include "server/leader/party_connections.h"
#include "server/runtime/revocation.h"

namespace fedanon::leader_daemon {

class PartyLinkService final : public fedanon::v1::PartyLink::Service {
 public:
  // `connections` is not owned. `ca_pem` verifies the seal certificates in the hellos.
  PartyLinkService(std::string leader_name, std::string ca_pem, PartyConnections* connections);
  // Refuse parties whose certificates it revokes (not owned; may stay unset).
  void set_revocation(const server::RevocationCheck* revocation) { revocation_ = revocation; }
  // Replaces the CA bundle that verifies sealing certificates (a reloaded ca.crt).
  void set_ca_pem(std::string ca_pem) ABSL_LOCKS_EXCLUDED(ca_mu_) {
    absl::MutexLock lock(&ca_mu_);
    ca_pem_ = std::move(ca_pem);
  }

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<fedanon::v1::LeaderMessage,
                                                fedanon::v1::PartyMessage>* stream) override;

 private:
  std::string ca_pem() const ABSL_LOCKS_EXCLUDED(ca_mu_) {
    absl::MutexLock lock(&ca_mu_);
    return ca_pem_;
  }
  // OK when the hello carries no statement-signing certificate or one valid for `party` (CA,
  // identity, revocation list).
  absl::Status CheckSignCertificate(const std::string& party, const fedanon::v1::PartyHello& hello);
  // The party a stream's TLS client certificate names (a party certificate, not revoked); the
  // refusal is logged.
  absl::StatusOr<std::string> AuthenticatedParty(const grpc::ServerContext& context) const;
  // The hello's certificates (sealing: CA and identity, revocation; statement-signing) and its
  // protocol version; a refusal is logged and names what failed.
  absl::Status CheckHello(const std::string& party, const std::string& peer,
                          const fedanon::v1::PartyHello& hello);
  // When the first of the stream's certificates (TLS, sealing, statement-signing) expires; now for
  // one whose expiry cannot be read.
  static absl::Time EarliestExpiry(const grpc::ServerContext& context,
                                   const fedanon::v1::PartyHello& hello);
  // A PartyHello with request_id 0 on an open stream: the party's rotated sealing certificate
  // (and statement-signing certificate), checked like the hello's (CA, identity, revocation); a
  // good pair replaces the one the jobs prepared from now on record, a bad one is logged and
  // ignored (the party keeps the old one).
  void Reannounced(const std::string& party, const std::string& peer,
                   PartyConnections::ConnectionId id, const fedanon::v1::PartyHello& hello);

  std::string leader_name_;
  mutable absl::Mutex ca_mu_;
  std::string ca_pem_ ABSL_GUARDED_BY(ca_mu_);
  PartyConnections* connections_;  // not owned
  const server::RevocationCheck* revocation_ = nullptr;
  DeadlineWatchdog certificate_expiry_;  // ends a party's stream when its certificate expires
};

}  // namespace fedanon::leader_daemon
