// Mutual TLS for the federation: every connection is authenticated on both sides by certificates
// of the federation CA, and identities (role + name) are read from the verified peer certificate
// (crypto/certificates.h), never from message fields.
//
// The CA file may hold several CA certificates (a CA rotation's overlap, docs/operations.md
// "Rotating keys and certificates"): the TLS layer and crypto/certificates.h accept a
// certificate of any of them.
//
// Server side (the leader): the client must present a certificate chaining to the CA
// (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY); otherwise the handshake fails
// before any RPC runs. Client side (parties, admins): the leader's certificate must chain to the
// CA and name the dialled host. Leader certificates carry the addresses they are reached at as
// DNS / IP SANs (`fedanonctl provision --leader-host`), and gRPC matches IP SANs for IP targets
// such as 127.0.0.1:7443, so no GRPC_SSL_TARGET_NAME_OVERRIDE_ARG is used: an override would
// switch hostname checking off for every address and let any certificate of the federation
// (e.g. a party's) impersonate the leader at the TLS layer.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "crypto/certificates.h"
#include "server/runtime/config.h"

namespace fedanon::server {

// PEM contents of the files in a `tls:` section.
struct TlsMaterial {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;  // never logged
};

// Reads a PEM file. NotFound "cannot read <what> 'path': <errno text>"; InvalidArgument when the
// file holds no PEM block of the expected kind ("CERTIFICATE" / "PRIVATE KEY") or is larger than
// 1 MiB. A private key file that group or others may read is refused (PermissionDenied "<what>
// '<path>' is readable by group or others (mode 0644) ...": chmod 600 it).
absl::StatusOr<std::string> ReadCertificateFile(const std::string& path, std::string_view what);
absl::StatusOr<std::string> ReadPrivateKeyFile(const std::string& path, std::string_view what);

// Reads the three files of a `tls:` section (errors name the file).
absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsPaths& paths);

// Startup check of our own TLS material, so configuration mistakes surface as one clear message
// instead of a failing handshake later: the certificate chains to the CA and is valid now
// (PermissionDenied otherwise), the key belongs to the certificate (InvalidArgument), and the
// certificate's identity is `expected` (InvalidArgument "certificate is for party/x, but the
// config says ...").
absl::Status CheckOwnCertificate(const TlsMaterial& tls, const crypto::Identity& expected);

// Server credentials for the leader (client certificates required and verified against the CA).
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsMaterial& tls);
// The same, re-reading the files of `paths` every `refresh_seconds` (> 0; gRPC's
// FileWatcherCertificateProvider): new handshakes use the certificate, key and CA bundle the
// files hold now, established connections (running jobs' streams) keep theirs. Files that do
// not load are skipped and the previous set kept (gRPC logs the error); replace them with
// rename(2), key and certificate one right after the other. Not checked again: the key file's
// mode and the certificate's identity (CheckOwnCertificate at start).
std::shared_ptr<grpc::ServerCredentials> MakeReloadingServerCredentials(const TlsPaths& paths,
                                                                        int refresh_seconds);
// Channel credentials for parties and admins (root = CA, own key and certificate).
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsMaterial& tls);

// The identity in the peer certificate of a call (the TLS layer has verified it against the CA).
// Unauthenticated when the call carries no certificate; PermissionDenied when the certificate
// holds no fedanon identity.
absl::StatusOr<crypto::Identity> PeerIdentity(const grpc::ServerContext& context);
// The peer's verified TLS certificate (PEM), "" when the connection carries none.
std::string PeerCertificatePem(const grpc::ServerContext& context);
// The same for the server's certificate seen by a client, once the call has started.
absl::StatusOr<crypto::Identity> ServerIdentity(const grpc::ClientContext& context);
// The server's certificate (PEM) seen by a client, once the call has started ("" when absent).
std::string ServerCertificatePem(const grpc::ClientContext& context);

// "party/hospital-a"
std::string IdentityString(const crypto::Identity& identity);

}  // namespace fedanon::server
