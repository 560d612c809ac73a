// ECDSA P-256 / SHA-256 signatures by federation certificates (OpenSSL 3 EVP): what an admin signs
// to authorize a job (docs/threat-model.md, "Job authorization") and what a party verifies
// before it takes part. Verification checks the signer's certificate as well: chained directly to
// the federation CA, valid now, a TLS certificate of the expected role; the signer's identity is
// read from that certificate only. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"

namespace fedanon::crypto {

// A DER-encoded ECDSA signature over SHA-256(`message`) by `key_pem` (an unencrypted PEM P-256
// private key). InvalidArgument for a key that does not parse or is not P-256.
absl::StatusOr<std::string> Sign(std::string_view key_pem, std::string_view message);

// Verifies `signature` over `message` by the key of `cert_pem`, and the certificate itself
// against `ca_pem` (chain, validity period, TLS usage, role `expected_role`). Returns the signer's
// identity. PermissionDenied (the message says why: "certificate verification failed: certificate
// has expired", "the signer is a party, not an admin", "the signature does not verify") otherwise.
absl::StatusOr<Identity> VerifySignature(std::string_view cert_pem, std::string_view ca_pem,
                                         Role expected_role, std::string_view message,
                                         std::string_view signature);

// Statements a party makes to the other parties through the leader (ID-matching statements,
// vertical proposals and verdicts; docs/crypto.md "Signed vertical statements") are signed with
// the party's statement-signing key: its own P-256 key under a certificate with keyUsage
// digitalSignature only (CertificateAuthority::IssueStatementSigner), which every participant
// receives in the Prepare and verifies against the CA (and the CRL) for the party's name
// (VerifiedStatementKey). The sealing key does key agreement only. The signed message must carry
// its own domain-separation prefix (party/vertical_statement.h does).
// SignStatement is Sign with the statement key's PEM; VerifyStatement checks an ECDSA P-256 /
// SHA-256 signature by `key` (already verified by the caller), PermissionDenied "the signature
// does not verify" otherwise.
absl::StatusOr<std::string> SignStatement(std::string_view sign_key_pem, std::string_view message);
absl::Status VerifyStatement(const SealPublicKey& key, std::string_view message,
                             std::string_view signature);

}  // namespace fedanon::crypto
