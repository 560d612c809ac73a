// crypto/signature: ECDSA P-256 / SHA-256 signatures by admin certificates of the federation CA.
#include "crypto/signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "crypto/certificates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::testing::StatusIs;

constexpr auto kDenied = absl::StatusCode::kPermissionDenied;
const absl::Duration kYear = absl::Hours(24 * 365);

// Known answer: a CA and an admin certificate (valid 2026-2076) made once with
// CertificateAuthority, and an ECDSA signature by that admin's key over kKatMessage. ECDSA
// signatures are randomized, so the answer is that this fixed signature verifies.
constexpr char kKatMessage[] = "fedanon known-answer message: run 0123456789abcdef";
#include "tests/crypto/signature_test_vectors.inc"

template <auto Fn>
struct Free {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};
using X509Ptr = std::unique_ptr<X509, Free<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Free<BIO_free_all>>;

// An admin TLS certificate signed by `ca` that expired an hour ago, built with raw OpenSSL (our CA
// never issues one).
IssuedCertificate ExpiredAdmin(const CertificateAuthority& ca) {
  BioPtr cbio(BIO_new_mem_buf(ca.cert_pem().data(), static_cast<int>(ca.cert_pem().size())));
  X509Ptr ca_cert(PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr));
  const std::string ca_key_pem = *ca.key_pem();
  BioPtr kbio(BIO_new_mem_buf(ca_key_pem.data(), static_cast<int>(ca_key_pem.size())));
  PkeyPtr ca_key(PEM_read_bio_PrivateKey(kbio.get(), nullptr, nullptr, nullptr));
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 77);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("admin/old"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  X509_set_pubkey(cert.get(), key.get());
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -7200);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), -3600);
  for (const auto& [nid, value] :
       std::vector<std::pair<int, std::string>>{{NID_basic_constraints, "critical,CA:FALSE"},
                                                {NID_key_usage, "critical,digitalSignature"},
                                                {NID_ext_key_usage, "serverAuth,clientAuth"},
                                                {NID_subject_alt_name, "URI:fedanon://admin/old"},
                                                {NID_subject_key_identifier, "hash"},
                                                {NID_authority_key_identifier, "keyid:always"}}) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, ca_cert.get(), cert.get(), nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    EXPECT_NE(ext, nullptr) << value;
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  EXPECT_GT(X509_sign(cert.get(), ca_key.get(), EVP_sha256()), 0);
  IssuedCertificate out;
  BioPtr out_cert(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(out_cert.get(), cert.get());
  char* data = nullptr;
  long len = BIO_get_mem_data(out_cert.get(), &data);  // NOLINT(runtime/int)
  out.cert_pem.assign(data, static_cast<size_t>(len));
  BioPtr out_key(BIO_new(BIO_s_mem()));
  PEM_write_bio_PKCS8PrivateKey(out_key.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  len = BIO_get_mem_data(out_key.get(), &data);
  out.key_pem.assign(data, static_cast<size_t>(len));
  return out;
}

class SignatureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = CertificateAuthority::Create("hospitals", kYear)->release();
    admin_ = new IssuedCertificate(*ca_->IssueTls({Role::kAdmin, "alice"}, {}, kYear));
  }
  static void TearDownTestSuite() {
    delete admin_;
    delete ca_;
  }
  static CertificateAuthority* ca_;
  static IssuedCertificate* admin_;
};
CertificateAuthority* SignatureTest::ca_ = nullptr;
IssuedCertificate* SignatureTest::admin_ = nullptr;

TEST(SignatureKnownAnswer, FixedSignatureVerifies) {
  // FEDANON_PRINT_SIGNATURE_KAT=1 prints a fresh set of constants (how the checked-in ones were
  // made); the test then checks those.
  if (std::getenv("FEDANON_PRINT_SIGNATURE_KAT") != nullptr) {
    auto ca = CertificateAuthority::Create("kat", 50 * kYear);
    ASSERT_OK(ca);
    auto admin = (*ca)->IssueTls({Role::kAdmin, "kat-admin"}, {}, 50 * kYear);
    ASSERT_OK(admin);
    auto sig = Sign(admin->key_pem, kKatMessage);
    ASSERT_OK(sig);
    std::cout << "constexpr char kKatCa[] = R\"(" << (*ca)->cert_pem() << ")\";\n"
              << "constexpr char kKatAdminCert[] = R\"(" << admin->cert_pem << ")\";\n"
              << "constexpr char kKatAdminKey[] = R\"(" << admin->key_pem << ")\";\n"
              << "constexpr char kKatSignatureHex[] = \"" << absl::BytesToHexString(*sig)
              << "\";\n";
    return;
  }
  const std::string signature = absl::HexStringToBytes(kKatSignatureHex);
  ASSERT_OK_AND_ASSIGN(Identity signer, VerifySignature(kKatAdminCert, kKatCa, Role::kAdmin,
                                                        kKatMessage, signature));
  EXPECT_EQ(signer.name, "kat-admin");
  EXPECT_EQ(signer.role, Role::kAdmin);
  // One byte of the message or of the signature changed: no longer.
  std::string other = kKatMessage;
  other.back() ^= 1;
  EXPECT_THAT(VerifySignature(kKatAdminCert, kKatCa, Role::kAdmin, other, signature),
              StatusIs(kDenied, "the signature does not verify"));
  // A fresh signature by the checked-in key verifies too (Sign and the fixed key agree).
  ASSERT_OK_AND_ASSIGN(std::string fresh, Sign(kKatAdminKey, kKatMessage));
  EXPECT_OK(VerifySignature(kKatAdminCert, kKatCa, Role::kAdmin, kKatMessage, fresh).status());
}

TEST_F(SignatureTest, SignAndVerify) {
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(admin_->key_pem, "the job"));
  ASSERT_OK_AND_ASSIGN(Identity signer, VerifySignature(admin_->cert_pem, ca_->cert_pem(),
                                                        Role::kAdmin, "the job", sig));
  EXPECT_EQ(signer.name, "alice");
}

TEST_F(SignatureTest, EveryTamperedByteFails) {
  const std::string message = "run=42 ring=a,b,c recipient=leader";
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(admin_->key_pem, message));
  for (size_t i = 0; i < message.size(); ++i) {
    std::string changed = message;
    changed[i] ^= 0x20;
    EXPECT_THAT(VerifySignature(admin_->cert_pem, ca_->cert_pem(), Role::kAdmin, changed, sig),
                StatusIs(kDenied, "does not verify"))
        << i;
  }
  for (size_t i = 0; i < sig.size(); ++i) {
    std::string changed = sig;
    changed[i] ^= 0x01;
    EXPECT_FALSE(
        VerifySignature(admin_->cert_pem, ca_->cert_pem(), Role::kAdmin, message, changed).ok())
        << i;
  }
  EXPECT_FALSE(VerifySignature(admin_->cert_pem, ca_->cert_pem(), Role::kAdmin, message, "").ok());
}

TEST_F(SignatureTest, AnotherKeyFails) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate bob, ca_->IssueTls({Role::kAdmin, "bob"}, {}, kYear));
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(bob.key_pem, "the job"));
  // Bob's signature presented with Alice's certificate.
  EXPECT_THAT(VerifySignature(admin_->cert_pem, ca_->cert_pem(), Role::kAdmin, "the job", sig),
              StatusIs(kDenied, "the signature does not verify"));
}

TEST_F(SignatureTest, NonAdminCertificateFails) {
  for (Role role : {Role::kLeader, Role::kParty}) {
    ASSERT_OK_AND_ASSIGN(IssuedCertificate cert, ca_->IssueTls({role, "someone"}, {}, kYear));
    ASSERT_OK_AND_ASSIGN(std::string sig, Sign(cert.key_pem, "the job"));
    EXPECT_THAT(VerifySignature(cert.cert_pem, ca_->cert_pem(), Role::kAdmin, "the job", sig),
                StatusIs(kDenied, "not admin"));
  }
  // A sealing certificate is not a signing identity.
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca_->IssueSeal({Role::kAdmin, "alice"}, kYear));
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(seal.key_pem, "the job"));
  EXPECT_THAT(VerifySignature(seal.cert_pem, ca_->cert_pem(), Role::kAdmin, "the job", sig),
              StatusIs(kDenied, ""));
}

TEST_F(SignatureTest, ExpiredCertificateFails) {
  const IssuedCertificate old = ExpiredAdmin(*ca_);
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(old.key_pem, "the job"));
  EXPECT_THAT(VerifySignature(old.cert_pem, ca_->cert_pem(), Role::kAdmin, "the job", sig),
              StatusIs(kDenied, "expired"));
}

TEST_F(SignatureTest, CertificateOfAnotherCaFails) {
  auto other = CertificateAuthority::Create("impostors", kYear);
  ASSERT_OK(other);
  ASSERT_OK_AND_ASSIGN(IssuedCertificate mallory,
                       (*other)->IssueTls({Role::kAdmin, "alice"}, {}, kYear));
  ASSERT_OK_AND_ASSIGN(std::string sig, Sign(mallory.key_pem, "the job"));
  EXPECT_THAT(VerifySignature(mallory.cert_pem, ca_->cert_pem(), Role::kAdmin, "the job", sig),
              StatusIs(kDenied, "certificate verification failed"));
}

TEST_F(SignatureTest, SignRefusesKeysThatAreNotP256) {
  EXPECT_THAT(Sign("not a key", "m"), StatusIs(absl::StatusCode::kInvalidArgument, "not an"));
  PkeyPtr rsa(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048}));
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PKCS8PrivateKey(bio.get(), rsa.get(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  EXPECT_THAT(Sign(std::string(data, static_cast<size_t>(len)), "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, "not an EC P-256 key"));
}

// Statements a party signs with its statement-signing key (ID-matching statements, vertical
// proposals and verdicts): the holder of the public key verifies them; another key, a changed
// byte of the message or of the signature, or an empty signature does not verify.
TEST(StatementSignature, VerifiesOnlyTheSignersUnchangedStatement) {
  ASSERT_OK_AND_ASSIGN(auto ca, CertificateAuthority::Create("sig", absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate a,
                       ca->IssueStatementSigner({Role::kParty, "hospital-a"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate b,
                       ca->IssueStatementSigner({Role::kParty, "hospital-b"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(
      auto key_a, VerifiedStatementKey(a.cert_pem, ca->cert_pem(), {Role::kParty, "hospital-a"}));
  ASSERT_OK_AND_ASSIGN(
      auto key_b, VerifiedStatementKey(b.cert_pem, ca->cert_pem(), {Role::kParty, "hospital-b"}));
  const std::string statement = "round 3: accept candidate 1/0/2";
  ASSERT_OK_AND_ASSIGN(const std::string sig, SignStatement(a.key_pem, statement));
  EXPECT_OK(VerifyStatement(*key_a, statement, sig));
  EXPECT_THAT(VerifyStatement(*key_b, statement, sig),
              StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"));
  EXPECT_THAT(VerifyStatement(*key_a, "round 3: reject candidate 1/0/2", sig),
              StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"));
  std::string flipped = sig;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_THAT(VerifyStatement(*key_a, statement, flipped),
              StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"));
  EXPECT_THAT(VerifyStatement(*key_a, statement, ""),
              StatusIs(absl::StatusCode::kPermissionDenied, "malformed"));
}

// Signing and statement keys are parsed once per process and kept (at most 32 of each, the
// oldest dropped first): with 40 keys used in turn, twice over, every signature is still made
// with the key whose PEM was given and verifies under its own public key only.
TEST(StatementSignature, KeysKeptBetweenCallsSignAndVerifyAsTheirOwn) {
  ASSERT_OK_AND_ASSIGN(auto ca, CertificateAuthority::Create("sig", absl::Hours(1)));
  constexpr int kKeys = 40;
  std::vector<IssuedCertificate> certs;
  std::vector<std::unique_ptr<SealPublicKey>> keys;
  for (int i = 0; i < kKeys; ++i) {
    const std::string name = absl::StrCat("party-", i);
    ASSERT_OK_AND_ASSIGN(IssuedCertificate c,
                         ca->IssueStatementSigner({Role::kParty, name}, absl::Hours(1)));
    ASSERT_OK_AND_ASSIGN(auto key,
                         VerifiedStatementKey(c.cert_pem, ca->cert_pem(), {Role::kParty, name}));
    certs.push_back(std::move(c));
    keys.push_back(std::move(key));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string statement = absl::StrCat("pass ", pass, " statement of ", i);
      ASSERT_OK_AND_ASSIGN(const std::string sig, SignStatement(certs[i].key_pem, statement));
      EXPECT_OK(VerifyStatement(*keys[i], statement, sig)) << pass << " " << i;
      const int other = (i + 1) % kKeys;
      EXPECT_THAT(VerifyStatement(*keys[other], statement, sig),
                  StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"))
          << pass << " " << i;
    }
  }
}

// The three kinds of a party's certificates are not interchangeable: a statement-signing
// certificate is neither a sealing nor a TLS certificate, a sealing certificate (keyAgreement)
// and a TLS certificate do not verify as statement-signing ones, and the identity is checked.
TEST(StatementSignature, OnlyAStatementSigningCertificateOfTheNamedPartyIsAccepted) {
  ASSERT_OK_AND_ASSIGN(auto ca, CertificateAuthority::Create("sig", absl::Hours(1)));
  const Identity a{Role::kParty, "hospital-a"};
  ASSERT_OK_AND_ASSIGN(IssuedCertificate sign, ca->IssueStatementSigner(a, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca->IssueSeal(a, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, ca->IssueTls(a, {}, absl::Hours(1)));
  EXPECT_OK(VerifiedStatementKey(sign.cert_pem, ca->cert_pem(), a).status());
  EXPECT_THAT(VerifiedStatementKey(seal.cert_pem, ca->cert_pem(), a).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a statement-signing certificate"));
  EXPECT_THAT(VerifiedStatementKey(tls.cert_pem, ca->cert_pem(), a).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a statement-signing certificate"));
  EXPECT_THAT(VerifiedSealKey(sign.cert_pem, ca->cert_pem(), a).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a sealing certificate"));
  EXPECT_THAT(VerifiedTlsIdentity(sign.cert_pem, ca->cert_pem()).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a TLS certificate"));
  EXPECT_THAT(
      VerifiedStatementKey(sign.cert_pem, ca->cert_pem(), {Role::kParty, "hospital-b"}).status(),
      StatusIs(absl::StatusCode::kPermissionDenied,
               "belongs to fedanon-sign://party/hospital-a, want "
               "fedanon-sign://party/hospital-b"));
  ASSERT_OK_AND_ASSIGN(auto other_ca, CertificateAuthority::Create("other", absl::Hours(1)));
  EXPECT_THAT(VerifiedStatementKey(sign.cert_pem, other_ca->cert_pem(), a).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "certificate verification failed"));
  // The key signs with the statement-signing certificate's public key, not the sealing one's.
  ASSERT_OK_AND_ASSIGN(auto sign_key, VerifiedStatementKey(sign.cert_pem, ca->cert_pem(), a));
  ASSERT_OK_AND_ASSIGN(auto seal_key, VerifiedSealKey(seal.cert_pem, ca->cert_pem(), a));
  ASSERT_OK_AND_ASSIGN(const std::string sig, SignStatement(sign.key_pem, "statement"));
  EXPECT_OK(VerifyStatement(*sign_key, "statement", sig));
  EXPECT_THAT(VerifyStatement(*seal_key, "statement", sig),
              StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"));
}

}  // namespace
}  // namespace fedanon::crypto
