// The federation's certificate authority and identities (X.509 via OpenSSL 3).
//
// Every participant — the leader, each party, each admin — holds two CA-signed certificates:
//  * a TLS certificate (EC P-256, ECDSA; serverAuth + clientAuth) whose identity is the SAN URI
//    `fedanon://<role>/<name>` (role: leader | party | admin); the leader's also carries the DNS
//    names / IP addresses it is reached at;
//  * a sealing certificate (EC P-256, keyAgreement) with SAN URI `fedanon-seal://<role>/<name>`,
//    whose key seals party-to-party payloads (crypto/sealed_box). Because it is CA-signed, the
//    relaying leader cannot substitute its own key;
//  * a party also holds a statement-signing certificate (EC P-256, keyUsage digitalSignature
//    only, no extendedKeyUsage) with SAN URI `fedanon-sign://party/<name>`, whose key signs the
//    statements it makes to the other parties through the leader (crypto/signature.h), so the
//    sealing key does key agreement only and the TLS key TLS only.
// Identities are read from verified certificates only, never from what a peer claims.
// Thread-compatible; keys are returned as PEM (PKCS#8) and never logged.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "crypto/sealed_box.h"

namespace fedanon::crypto {

enum class Role { kLeader, kParty, kAdmin };

struct Identity {
  Role role = Role::kParty;
  std::string name;
  bool operator==(const Identity& o) const { return role == o.role && name == o.name; }
};

// "leader" / "party" / "admin"
std::string_view RoleName(Role role);
// Names: 1-64 characters of [A-Za-z0-9._-], starting with a letter or digit.
absl::Status ValidateParticipantName(std::string_view name);

struct IssuedCertificate {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8 PEM, unencrypted (written with mode 0600 by callers)
};

class CertificateAuthority {
 public:
  // A new self-signed CA (EC P-256) named "fedanon CA <federation>".
  static absl::StatusOr<std::unique_ptr<CertificateAuthority>> Create(std::string_view federation,
                                                                      absl::Duration validity);
  static absl::StatusOr<std::unique_ptr<CertificateAuthority>> Load(std::string_view cert_pem,
                                                                    std::string_view key_pem);
  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  const std::string& cert_pem() const { return cert_pem_; }
  absl::StatusOr<std::string> key_pem() const;

  // `hosts`: DNS names or IP addresses put into the SAN (for the leader's server certificate).
  absl::StatusOr<IssuedCertificate> IssueTls(const Identity& identity,
                                             const std::vector<std::string>& hosts,
                                             absl::Duration validity) const;
  // A certificate revocation list (PEM) signed by this CA, revoking the certificates `revoked`
  // (PEM; TLS or sealing certificates this CA issued) and valid for `validity` (nextUpdate).
  absl::StatusOr<std::string> IssueCrl(const std::vector<std::string>& revoked,
                                       absl::Duration validity) const;
  absl::StatusOr<IssuedCertificate> IssueSeal(const Identity& identity,
                                              absl::Duration validity) const;
  // A party's statement-signing certificate and key (docs/crypto.md, "Which key").
  absl::StatusOr<IssuedCertificate> IssueStatementSigner(const Identity& identity,
                                                         absl::Duration validity) const;

 private:
  struct Impl;
  explicit CertificateAuthority(std::unique_ptr<Impl> impl, std::string cert_pem);
  std::unique_ptr<Impl> impl_;
  std::string cert_pem_;
};

// `ca_pem` may hold several CA certificates (a CA rotation's overlap: the old and the new CA);
// a certificate or CRL of any of them is accepted, each CA being a trust anchor of its own.
//
// Verifies `cert_pem` (chain: `ca_pem` only; validity period; TLS key usage) and returns the
// identity in its `fedanon://` SAN URI. PermissionDenied for another CA, expired or malformed
// identities.
absl::StatusOr<Identity> VerifiedTlsIdentity(std::string_view cert_pem, std::string_view ca_pem);
// OK if `key_pem` (an unencrypted PEM private key) is the key of the certificate `cert_pem`: the
// startup check of a participant's own TLS material. InvalidArgument otherwise, naming the two as
// `cert_what` and `key_what`: "<key_what>: not an unencrypted PEM private key", "<key_what> does
// not belong to <cert_what>" (or "<cert_what>: not a PEM X.509 certificate").
absl::Status CheckKeyBelongsToCertificate(std::string_view cert_pem, std::string_view key_pem,
                                          std::string_view cert_what, std::string_view key_what);
// The identity in a certificate that the TLS layer has already verified.
absl::StatusOr<Identity> IdentityOfCertificate(std::string_view cert_pem);

// OK unless `cert_pem` is revoked by `crl_pem`. The CRL must be signed by the CA `ca_pem` and
// current (nextUpdate not passed): a forged or stale list fails closed. PermissionDenied
// "certificate revoked" / "the revocation list ... has expired"; InvalidArgument when it does
// not parse or is not the CA's.
absl::Status CheckNotRevoked(std::string_view cert_pem, std::string_view crl_pem,
                             std::string_view ca_pem);
// The serial numbers (hex) a CRL lists, after checking it is the CA's (for `fedanonctl revoke`,
// which adds to an existing list).
absl::StatusOr<std::vector<std::string>> RevokedSerials(std::string_view crl_pem,
                                                        std::string_view ca_pem);

// The end of a certificate's validity (notAfter), to end long-lived streams when the peer's
// certificate expires (the TLS handshake checks validity only once).
absl::StatusOr<absl::Time> CertificateNotAfter(std::string_view cert_pem);
// Verifies a sealing certificate for `expected` and returns its public key.
absl::StatusOr<std::unique_ptr<SealPublicKey>> VerifiedSealKey(std::string_view seal_cert_pem,
                                                               std::string_view ca_pem,
                                                               const Identity& expected);
// Verifies a statement-signing certificate for `expected` (chain, validity, keyUsage
// digitalSignature only, SAN `fedanon-sign://`) and returns its P-256 public key. A sealing or
// TLS certificate is refused (PermissionDenied "not a statement-signing certificate ...").
absl::StatusOr<std::unique_ptr<SealPublicKey>> VerifiedStatementKey(std::string_view sign_cert_pem,
                                                                    std::string_view ca_pem,
                                                                    const Identity& expected);
// Loads a sealing private key (PKCS#8 PEM, EC P-256).
absl::StatusOr<std::unique_ptr<SealKeyPair>> SealKeyPairFromPem(std::string_view key_pem);

}  // namespace fedanon::crypto
