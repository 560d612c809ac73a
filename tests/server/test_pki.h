// Certificates for server/ tests and benchmarks, issued in-process by a fresh federation CA
// (tests only: keys are generated per run and never persisted).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "crypto/certificates.h"
#include "server/runtime/tls.h"

namespace fedanon::server::testing {

class TestPki {
 public:
  explicit TestPki(const std::string& federation) {
    auto ca = crypto::CertificateAuthority::Create(federation, absl::Hours(24 * 30));
    if (!ca.ok()) throw std::runtime_error(ca.status().ToString());
    ca_ = std::move(ca).value();
  }

  const std::string& ca_pem() const { return ca_->cert_pem(); }

  // TLS material (CA + own certificate and key) for `name` in `role`; `hosts` go into the SAN.
  TlsMaterial Tls(crypto::Role role, const std::string& name,
                  const std::vector<std::string>& hosts = {},
                  absl::Duration validity = absl::Hours(24)) const {
    auto issued = ca_->IssueTls(crypto::Identity{role, name}, hosts, validity);
    if (!issued.ok()) throw std::runtime_error(issued.status().ToString());
    return TlsMaterial{ca_->cert_pem(), issued->cert_pem, issued->key_pem};
  }
  TlsMaterial Leader() const { return Tls(crypto::Role::kLeader, "leader", {"127.0.0.1"}); }
  TlsMaterial Party(const std::string& name) const { return Tls(crypto::Role::kParty, name); }
  TlsMaterial Admin(const std::string& name) const { return Tls(crypto::Role::kAdmin, name); }

  // A revocation list of this CA revoking `revoked` (certificate PEMs).
  std::string Crl(const std::vector<std::string>& revoked) const {
    auto crl = ca_->IssueCrl(revoked, absl::Hours(24));
    if (!crl.ok()) throw std::runtime_error(crl.status().ToString());
    return *crl;
  }

  // A sealing certificate and its key for `party`.
  crypto::IssuedCertificate SealIssued(const std::string& party) const {
    return ca_->IssueSeal(crypto::Identity{crypto::Role::kParty, party}, absl::Hours(24)).value();
  }
  // A sealing certificate and its key for `name` in `role` (e.g. the leader's).
  crypto::IssuedCertificate SealIssued(crypto::Role role, const std::string& name) const {
    return ca_->IssueSeal(crypto::Identity{role, name}, absl::Hours(24)).value();
  }
  // A statement-signing certificate and its key for `party`.
  crypto::IssuedCertificate SignIssued(const std::string& party) const {
    return ca_->IssueStatementSigner(crypto::Identity{crypto::Role::kParty, party}, absl::Hours(24))
        .value();
  }
  std::string SealCert(const std::string& party) const {
    auto issued = ca_->IssueSeal(crypto::Identity{crypto::Role::kParty, party}, absl::Hours(24));
    if (!issued.ok()) throw std::runtime_error(issued.status().ToString());
    return issued->cert_pem;
  }

 private:
  std::unique_ptr<crypto::CertificateAuthority> ca_;
};

}  // namespace fedanon::server::testing
