#include "crypto/certificates.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "crypto/sealed_box.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kDenied = absl::StatusCode::kPermissionDenied;
const absl::Duration kYear = absl::Hours(24 * 365);

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
using StorePtr = std::unique_ptr<X509_STORE, Free<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Free<X509_STORE_CTX_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Free<BN_free>>;

Identity Party(std::string name) { return Identity{.role = Role::kParty, .name = std::move(name)}; }
Identity Leader(std::string name) {
  return Identity{.role = Role::kLeader, .name = std::move(name)};
}
Identity Admin(std::string name) { return Identity{.role = Role::kAdmin, .name = std::move(name)}; }

X509Ptr ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(cert, nullptr);
  return cert;
}

PkeyPtr ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(key, nullptr);
  return key;
}

std::string ToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_EQ(PEM_write_bio_X509(bio.get(), cert), 1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

std::string KeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr),
            1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

std::string CommonName(X509* cert) {
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
  return buf;
}

// Seconds from now to `t` (negative: in the past).
int64_t SecondsFromNow(const ASN1_TIME* t) {
  int days = 0, secs = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, t), 1);
  return int64_t{days} * 86400 + secs;
}

// What a hand-made certificate looks like (for the cases our CA never issues).
struct CustomCert {
  std::string san;  // OpenSSL config syntax, e.g. "URI:fedanon://party/x"; empty: no SAN
  std::string key_usage = "critical,digitalSignature";
  std::string ext_key_usage = "serverAuth,clientAuth";  // empty: none
  std::string basic_constraints = "critical,CA:FALSE";
  long not_before = -300;  // NOLINT(runtime/int): seconds from now
  long not_after = 3600;   // NOLINT(runtime/int)
};

// A leaf signed with the CA's key, built with raw OpenSSL calls (independent of the code under
// test apart from loading the CA).
std::string MakeCustomCert(const CertificateAuthority& ca, const CustomCert& spec) {
  X509Ptr ca_cert = ParseCert(ca.cert_pem());
  absl::StatusOr<std::string> ca_key_pem = ca.key_pem();
  EXPECT_TRUE(ca_key_pem.ok());
  PkeyPtr ca_key = ParseKey(*ca_key_pem);
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 4242);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("custom"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  X509_set_pubkey(cert.get(), key.get());
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), spec.not_before);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.not_after);
  auto add = [&](int nid, const std::string& value) {
    if (value.empty()) return;
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, ca_cert.get(), cert.get(), nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    ASSERT_NE(ext, nullptr) << value;
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, spec.basic_constraints);
  add(NID_key_usage, spec.key_usage);
  add(NID_ext_key_usage, spec.ext_key_usage);
  add(NID_subject_alt_name, spec.san);
  add(NID_subject_key_identifier, "hash");
  add(NID_authority_key_identifier, "keyid:always");
  EXPECT_GT(X509_sign(cert.get(), ca_key.get(), EVP_sha256()), 0);
  return ToPem(cert.get());
}

// `openssl verify -purpose <purpose> -CAfile ca.pem cert.pem`, done by hand.
int OpenSslVerify(const std::string& cert_pem, const std::string& ca_pem, int purpose) {
  X509Ptr ca = ParseCert(ca_pem);
  X509Ptr cert = ParseCert(cert_pem);
  StorePtr store(X509_STORE_new());
  EXPECT_EQ(X509_STORE_add_cert(store.get(), ca.get()), 1);
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  EXPECT_EQ(X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr), 1);
  if (purpose != 0) X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

class CertificatesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto ca = CertificateAuthority::Create("hospitals", 10 * kYear);
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = ca->release();
    auto other = CertificateAuthority::Create("impostors", 10 * kYear);
    ASSERT_TRUE(other.ok()) << other.status();
    other_ca_ = other->release();
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete other_ca_;
    ca_ = other_ca_ = nullptr;
  }
  static CertificateAuthority* ca_;
  static CertificateAuthority* other_ca_;
};
CertificateAuthority* CertificatesTest::ca_ = nullptr;
CertificateAuthority* CertificatesTest::other_ca_ = nullptr;

// ---- names ------------------------------------------------------------------------------------

TEST(ParticipantNameTest, Validation) {
  for (const char* ok : {"a", "hospital-a", "Leader_1", "9lives", "a.b-c_d", "x..y"}) {
    EXPECT_OK(ValidateParticipantName(ok)) << ok;
  }
  EXPECT_OK(ValidateParticipantName(std::string(64, 'n')));
  for (const std::string& bad :
       {std::string(), std::string(65, 'n'), std::string("-a"), std::string(".a"),
        std::string("_a"), std::string(".."), std::string("a/b"), std::string("a b"),
        std::string("a:b"), std::string("hôpital"), std::string("a\0b", 3), std::string("a,b")}) {
    EXPECT_THAT(ValidateParticipantName(bad), StatusIs(kInvalid, "invalid name")) << bad;
  }
}

TEST(RoleNameTest, Names) {
  EXPECT_EQ(RoleName(Role::kLeader), "leader");
  EXPECT_EQ(RoleName(Role::kParty), "party");
  EXPECT_EQ(RoleName(Role::kAdmin), "admin");
}

// ---- the CA -----------------------------------------------------------------------------------

TEST_F(CertificatesTest, CaCertificateProperties) {
  X509Ptr ca = ParseCert(ca_->cert_pem());
  EXPECT_EQ(CommonName(ca.get()), "fedanon CA hospitals");
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_get_pathlen(ca.get()), 0);
  EXPECT_EQ(X509_get_key_usage(ca.get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EXPECT_EQ(X509_get_signature_nid(ca.get()), NID_ecdsa_with_SHA256);
  EXPECT_EQ(X509_get_version(ca.get()), X509_VERSION_3);
  EXPECT_NE(X509_get_extension_flags(ca.get()) & EXFLAG_SS, 0u);  // self-signed
  EVP_PKEY* pub = X509_get0_pubkey(ca.get());
  EXPECT_EQ(EVP_PKEY_is_a(pub, "EC"), 1);
  EXPECT_EQ(X509_verify(ca.get(), pub), 1);
  EXPECT_NEAR(SecondsFromNow(X509_get0_notBefore(ca.get())), -300, 60);
  EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(ca.get())), absl::ToInt64Seconds(10 * kYear), 60);
  // The CA verifies as its own trust anchor.
  EXPECT_EQ(OpenSslVerify(ca_->cert_pem(), ca_->cert_pem(), 0), X509_V_OK);
}

TEST_F(CertificatesTest, CaCreateLoadRoundTrip) {
  ASSERT_OK_AND_ASSIGN(const std::string key_pem, ca_->key_pem());
  EXPECT_THAT(key_pem, StartsWith("-----BEGIN PRIVATE KEY-----"));  // PKCS#8, unencrypted
  ASSERT_OK_AND_ASSIGN(auto loaded, CertificateAuthority::Load(ca_->cert_pem(), key_pem));
  EXPECT_EQ(loaded->cert_pem(), ca_->cert_pem());
  ASSERT_OK_AND_ASSIGN(const std::string key_pem2, loaded->key_pem());
  EXPECT_EQ(key_pem2, key_pem);
  // Certificates issued by the loaded CA verify against the original CA certificate.
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, loaded->IssueTls(Party("hospital-a"), {}, kYear));
  ASSERT_OK_AND_ASSIGN(Identity id, VerifiedTlsIdentity(tls.cert_pem, ca_->cert_pem()));
  EXPECT_EQ(id, Party("hospital-a"));
}

TEST_F(CertificatesTest, LoadRejectsMismatchesAndNonCas) {
  ASSERT_OK_AND_ASSIGN(const std::string key_pem, ca_->key_pem());
  ASSERT_OK_AND_ASSIGN(const std::string other_key_pem, other_ca_->key_pem());
  EXPECT_THAT(CertificateAuthority::Load(ca_->cert_pem(), other_key_pem),
              StatusIs(kInvalid, "does not match"));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate leaf, ca_->IssueTls(Party("p"), {}, kYear));
  EXPECT_THAT(CertificateAuthority::Load(leaf.cert_pem, leaf.key_pem),
              StatusIs(kInvalid, "not a CA"));
  EXPECT_THAT(CertificateAuthority::Load("garbage", key_pem), StatusIs(kInvalid, "CA certificate"));
  EXPECT_THAT(CertificateAuthority::Load(ca_->cert_pem(), ""), StatusIs(kInvalid, "CA key"));
  EXPECT_THAT(CertificateAuthority::Load(ca_->cert_pem(), ca_->cert_pem()),
              StatusIs(kInvalid, "private key"));
  // An encrypted key is rejected instead of prompting for a passphrase.
  PkeyPtr key = ParseKey(key_pem);
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), key.get(), EVP_aes_256_cbc(), nullptr, 0,
                                          nullptr, const_cast<char*>("secret")),
            1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  EXPECT_THAT(CertificateAuthority::Load(ca_->cert_pem(), std::string(data, len)),
              StatusIs(kInvalid, "unencrypted"));
}

TEST(CertificateAuthorityTest, CreateValidatesArguments) {
  EXPECT_THAT(CertificateAuthority::Create("bad name", kYear), StatusIs(kInvalid, "federation"));
  EXPECT_THAT(CertificateAuthority::Create("", kYear), StatusIs(kInvalid, "federation"));
  EXPECT_THAT(CertificateAuthority::Create("ok", absl::ZeroDuration()),
              StatusIs(kInvalid, "positive"));
  EXPECT_THAT(CertificateAuthority::Create("ok", -kYear), StatusIs(kInvalid, "positive"));
  EXPECT_THAT(CertificateAuthority::Create("ok", 200 * kYear), StatusIs(kInvalid, "100 years"));
}

// ---- TLS certificates -------------------------------------------------------------------------

TEST_F(CertificatesTest, IssuedTlsCertificateVerifiesAndYieldsIdentity) {
  for (const Identity& who : {Leader("leader"), Party("hospital-a"), Admin("alice")}) {
    ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, ca_->IssueTls(who, {}, kYear));
    ASSERT_OK_AND_ASSIGN(Identity id, VerifiedTlsIdentity(tls.cert_pem, ca_->cert_pem()));
    EXPECT_EQ(id, who);
    ASSERT_OK_AND_ASSIGN(Identity unverified, IdentityOfCertificate(tls.cert_pem));
    EXPECT_EQ(unverified, who);
    EXPECT_THAT(tls.key_pem, StartsWith("-----BEGIN PRIVATE KEY-----"));

    X509Ptr cert = ParseCert(tls.cert_pem);
    EXPECT_EQ(CommonName(cert.get()), std::string(RoleName(who.role)) + "/" + who.name);
    EXPECT_EQ(X509_check_ca(cert.get()), 0);
    EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
    EXPECT_EQ(X509_get_extended_key_usage(cert.get()),
              static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
    EXPECT_EQ(X509_get_signature_nid(cert.get()), NID_ecdsa_with_SHA256);
    EXPECT_NEAR(SecondsFromNow(X509_get0_notBefore(cert.get())), -300, 60);
    EXPECT_NEAR(SecondsFromNow(X509_get0_notAfter(cert.get())), absl::ToInt64Seconds(kYear), 60);
    // The private key matches the certificate.
    PkeyPtr key = ParseKey(tls.key_pem);
    EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  }
}

TEST_F(CertificatesTest, SerialsAreRandom128Bit) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate a, ca_->IssueTls(Party("p"), {}, kYear));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate b, ca_->IssueTls(Party("p"), {}, kYear));
  X509Ptr ca = ParseCert(a.cert_pem), cb = ParseCert(b.cert_pem);
  BnPtr sa(ASN1_INTEGER_to_BN(X509_get0_serialNumber(ca.get()), nullptr));
  BnPtr sb(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cb.get()), nullptr));
  EXPECT_NE(BN_cmp(sa.get(), sb.get()), 0);
  EXPECT_LE(BN_num_bits(sa.get()), 128);
  EXPECT_GT(BN_num_bits(sa.get()), 64);  // fails with probability 2^-64
  EXPECT_FALSE(BN_is_negative(sa.get()));
}

TEST_F(CertificatesTest, OpenSslVerifySemantics) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls,
                       ca_->IssueTls(Leader("leader"), {"leader.example.org"}, kYear));
  EXPECT_EQ(OpenSslVerify(tls.cert_pem, ca_->cert_pem(), 0), X509_V_OK);
  EXPECT_EQ(OpenSslVerify(tls.cert_pem, ca_->cert_pem(), X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(OpenSslVerify(tls.cert_pem, ca_->cert_pem(), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_EQ(OpenSslVerify(tls.cert_pem, other_ca_->cert_pem(), 0),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca_->IssueSeal(Party("hospital-a"), kYear));
  EXPECT_EQ(OpenSslVerify(seal.cert_pem, ca_->cert_pem(), 0), X509_V_OK);
  // OpenSSL's purpose check alone accepts a sealing certificate for TLS (keyAgreement is a legal
  // server usage and "no extendedKeyUsage" means any purpose): that is why VerifiedTlsIdentity
  // checks the usages itself, and why sealing certificates carry another URI scheme.
  EXPECT_EQ(OpenSslVerify(seal.cert_pem, ca_->cert_pem(), X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_THAT(VerifiedTlsIdentity(seal.cert_pem, ca_->cert_pem()),
              StatusIs(kDenied, "not a TLS certificate"));
}

TEST_F(CertificatesTest, CertificateFromAnotherCaIsRejected) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, other_ca_->IssueTls(Party("hospital-a"), {}, kYear));
  EXPECT_THAT(VerifiedTlsIdentity(tls.cert_pem, ca_->cert_pem()),
              StatusIs(kDenied, "unable to get local issuer certificate"));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, other_ca_->IssueSeal(Party("hospital-a"), kYear));
  EXPECT_THAT(VerifiedSealKey(seal.cert_pem, ca_->cert_pem(), Party("hospital-a")),
              StatusIs(kDenied, "verification failed"));
}

TEST_F(CertificatesTest, SameNameDifferentCaKeyIsRejected) {
  // An impostor CA with the very same subject name: the signature check must fail.
  ASSERT_OK_AND_ASSIGN(auto twin, CertificateAuthority::Create("hospitals", kYear));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, twin->IssueTls(Party("hospital-a"), {}, kYear));
  EXPECT_THAT(VerifiedTlsIdentity(tls.cert_pem, ca_->cert_pem()), StatusIs(kDenied, ""));
}

TEST_F(CertificatesTest, ExpiredAndNotYetValidCertificatesAreRejected) {
  CustomCert expired{.san = "URI:fedanon://party/hospital-a"};
  expired.not_before = -7200;
  expired.not_after = -3600;
  EXPECT_THAT(VerifiedTlsIdentity(MakeCustomCert(*ca_, expired), ca_->cert_pem()),
              StatusIs(kDenied, "expired"));
  CustomCert future{.san = "URI:fedanon://party/hospital-a"};
  future.not_before = 3600;
  future.not_after = 7200;
  EXPECT_THAT(VerifiedTlsIdentity(MakeCustomCert(*ca_, future), ca_->cert_pem()),
              StatusIs(kDenied, "not yet valid"));
  // Control: the same construction with a current validity period is accepted.
  ASSERT_OK_AND_ASSIGN(
      Identity id,
      VerifiedTlsIdentity(MakeCustomCert(*ca_, {.san = "URI:fedanon://party/hospital-a"}),
                          ca_->cert_pem()));
  EXPECT_EQ(id, Party("hospital-a"));

  CustomCert expired_seal{.san = "URI:fedanon-seal://party/hospital-a",
                          .key_usage = "critical,keyAgreement",
                          .ext_key_usage = ""};
  expired_seal.not_before = -7200;
  expired_seal.not_after = -3600;
  EXPECT_THAT(
      VerifiedSealKey(MakeCustomCert(*ca_, expired_seal), ca_->cert_pem(), Party("hospital-a")),
      StatusIs(kDenied, "expired"));
}

TEST_F(CertificatesTest, LeavesNeverOutliveTheirCa) {
  // Leaves never outlive their CA: a short-lived CA caps its leaves' notAfter.
  ASSERT_OK_AND_ASSIGN(auto short_ca, CertificateAuthority::Create("short", absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, short_ca->IssueTls(Party("p"), {}, kYear));
  X509Ptr cert = ParseCert(tls.cert_pem);
  X509Ptr ca = ParseCert(short_ca->cert_pem());
  EXPECT_EQ(ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(ca.get())), 0);
  EXPECT_TRUE(VerifiedTlsIdentity(tls.cert_pem, short_ca->cert_pem()).ok());
}

TEST_F(CertificatesTest, InvalidValidityIsRejected) {
  EXPECT_THAT(ca_->IssueTls(Party("p"), {}, absl::ZeroDuration()), StatusIs(kInvalid, "positive"));
  EXPECT_THAT(ca_->IssueSeal(Party("p"), -absl::Hours(1)), StatusIs(kInvalid, "positive"));
}

TEST_F(CertificatesTest, SealingCertificateIsNotATlsIdentityAndViceVersa) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca_->IssueSeal(Party("hospital-a"), kYear));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, ca_->IssueTls(Party("hospital-a"), {}, kYear));
  EXPECT_THAT(VerifiedTlsIdentity(seal.cert_pem, ca_->cert_pem()), StatusIs(kDenied, ""));
  EXPECT_THAT(IdentityOfCertificate(seal.cert_pem), StatusIs(kDenied, "no fedanon://"));
  EXPECT_THAT(VerifiedSealKey(tls.cert_pem, ca_->cert_pem(), Party("hospital-a")),
              StatusIs(kDenied, "keyAgreement"));
  // Even a certificate with the TLS usages but a sealing URI (and vice versa) is refused.
  EXPECT_THAT(
      VerifiedTlsIdentity(MakeCustomCert(*ca_, {.san = "URI:fedanon-seal://party/hospital-a"}),
                          ca_->cert_pem()),
      StatusIs(kDenied, "no fedanon:// identity"));
  EXPECT_THAT(VerifiedSealKey(MakeCustomCert(*ca_, {.san = "URI:fedanon://party/hospital-a",
                                                    .key_usage = "critical,keyAgreement",
                                                    .ext_key_usage = ""}),
                              ca_->cert_pem(), Party("hospital-a")),
              StatusIs(kDenied, "no fedanon-seal:// identity"));
}

TEST_F(CertificatesTest, WrongUsagesAreRejected) {
  const std::string san = "URI:fedanon://party/hospital-a";
  // No extendedKeyUsage at all ("any purpose" for OpenSSL) is not a TLS certificate for us.
  EXPECT_THAT(
      VerifiedTlsIdentity(MakeCustomCert(*ca_, {.san = san, .ext_key_usage = ""}), ca_->cert_pem()),
      StatusIs(kDenied, "not a TLS certificate"));
  EXPECT_THAT(VerifiedTlsIdentity(MakeCustomCert(*ca_, {.san = san, .ext_key_usage = "clientAuth"}),
                                  ca_->cert_pem()),
              StatusIs(kDenied, "not a TLS certificate"));
  EXPECT_THAT(
      VerifiedTlsIdentity(MakeCustomCert(*ca_, {.san = san, .key_usage = ""}), ca_->cert_pem()),
      StatusIs(kDenied, "not a TLS certificate"));
  // The CA certificate itself is no participant.
  EXPECT_THAT(VerifiedTlsIdentity(ca_->cert_pem(), ca_->cert_pem()), StatusIs(kDenied, ""));
}

TEST_F(CertificatesTest, TamperedCertificateIsRejected) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, ca_->IssueTls(Party("hospital-a"), {}, kYear));
  X509Ptr cert = ParseCert(tls.cert_pem);
  // Re-encode with a different name in the SAN but keep the original signature.
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert.get(), &der);
  ASSERT_GT(len, 0);
  std::string bytes(reinterpret_cast<char*>(der), len);
  OPENSSL_free(der);
  const size_t pos = bytes.find("hospital-a", bytes.find("fedanon://"));
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 9] = 'b';  // hospital-b
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  X509Ptr forged(d2i_X509(nullptr, &p, static_cast<long>(bytes.size())));  // NOLINT
  ASSERT_NE(forged, nullptr);
  const std::string forged_pem = ToPem(forged.get());
  ASSERT_OK_AND_ASSIGN(Identity claimed, IdentityOfCertificate(forged_pem));
  EXPECT_EQ(claimed, Party("hospital-b"));                       // what the bytes say ...
  EXPECT_THAT(VerifiedTlsIdentity(forged_pem, ca_->cert_pem()),  // ... is not believed
              StatusIs(kDenied, "signature"));
}

TEST_F(CertificatesTest, MalformedIdentitiesAreRejected) {
  const std::string ca = ca_->cert_pem();
  struct Case {
    std::string san;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"", "no fedanon://"},
           {"DNS:hospital-a.example.org", "no fedanon://"},
           {"URI:https://party/hospital-a", "no fedanon://"},
           {"URI:fedanon://party/hospital-a,URI:fedanon://party/hospital-b", "2 fedanon://"},
           {"URI:fedanon://party/hospital-a,URI:fedanon://party/hospital-a", "2 fedanon://"},
           {"URI:fedanon://party/hospital-a,URI:FEDANON://leader/leader", "2 fedanon://"},
           {"URI:FEDANON://party/hospital-a", "malformed"},
           {"URI:fedanon://root/hospital-a", "unknown role"},
           {"URI:fedanon://Party/hospital-a", "unknown role"},
           {"URI:fedanon://party", "malformed"},
           {"URI:fedanon://party/", "invalid name"},
           {"URI:fedanon://party/a/b", "invalid name"},
           {"URI:fedanon://party/hospital a", "invalid name"},
           {"URI:fedanon://party/-a", "invalid name"},
           {"URI:fedanon://party/hospital-a?x=1", "invalid name"},
           {"URI:fedanon://party/" + std::string(65, 'x'), "invalid name"},
       }) {
    const std::string pem = MakeCustomCert(*ca_, {.san = c.san});
    EXPECT_THAT(VerifiedTlsIdentity(pem, ca), StatusIs(kDenied, c.error)) << c.san;
    EXPECT_THAT(IdentityOfCertificate(pem), StatusIs(kDenied, c.error)) << c.san;
  }
  // Other schemes and host entries next to exactly one identity are fine.
  ASSERT_OK_AND_ASSIGN(
      Identity id,
      VerifiedTlsIdentity(
          MakeCustomCert(*ca_, {.san = "URI:https://example.org,URI:fedanon-seal://party/x,"
                                       "URI:fedanon://admin/alice,DNS:example.org"}),
          ca));
  EXPECT_EQ(id, Admin("alice"));
}

TEST_F(CertificatesTest, UnparseableInputs) {
  EXPECT_THAT(VerifiedTlsIdentity("", ca_->cert_pem()), StatusIs(kInvalid, "empty"));
  EXPECT_THAT(VerifiedTlsIdentity("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                                  ca_->cert_pem()),
              StatusIs(kInvalid, "certificate"));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls, ca_->IssueTls(Party("p"), {}, kYear));
  EXPECT_THAT(VerifiedTlsIdentity(tls.cert_pem, "nope"), StatusIs(kInvalid, "CA certificate"));
  // A leaf is no trust anchor.
  EXPECT_THAT(VerifiedTlsIdentity(tls.cert_pem, tls.cert_pem), StatusIs(kInvalid, "not a CA"));
  EXPECT_THAT(IdentityOfCertificate("x"), StatusIs(kInvalid, ""));
}

TEST_F(CertificatesTest, IssueValidatesNames) {
  EXPECT_THAT(ca_->IssueTls(Party("bad/name"), {}, kYear), StatusIs(kInvalid, "invalid name"));
  EXPECT_THAT(ca_->IssueTls(Party(""), {}, kYear), StatusIs(kInvalid, "invalid name"));
  EXPECT_THAT(ca_->IssueSeal(Admin("-x"), kYear), StatusIs(kInvalid, "invalid name"));
}

// ---- SAN hosts --------------------------------------------------------------------------------

TEST_F(CertificatesTest, HostsAreInTheSubjectAltName) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate tls,
                       ca_->IssueTls(Leader("leader"),
                                     {"leader.example.org", "127.0.0.1", "::1", "[2001:db8::7]",
                                      "LocalHost", "127.0.0.1", "localhost"},
                                     kYear));
  X509Ptr cert = ParseCert(tls.cert_pem);
  EXPECT_EQ(X509_check_host(cert.get(), "leader.example.org", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "other.example.org", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "2001:db8::7", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.1", 0), 0);

  NamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  ASSERT_NE(names, nullptr);
  int uris = 0, dns = 0, ips = 0;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    if (n->type == GEN_URI) {
      ++uris;
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(
                    ASN1_STRING_get0_data(n->d.uniformResourceIdentifier))),
                "fedanon://leader/leader");
    }
    if (n->type == GEN_DNS) ++dns;
    if (n->type == GEN_IPADD) {
      ++ips;
      const int len = ASN1_STRING_length(n->d.iPAddress);
      EXPECT_TRUE(len == 4 || len == 16);
    }
  }
  EXPECT_EQ(uris, 1);
  EXPECT_EQ(dns, 2);  // leader.example.org, localhost (deduplicated case-insensitively)
  EXPECT_EQ(ips, 3);  // 127.0.0.1 (once), ::1, 2001:db8::7
  ASSERT_OK_AND_ASSIGN(Identity id, VerifiedTlsIdentity(tls.cert_pem, ca_->cert_pem()));
  EXPECT_EQ(id, Leader("leader"));

  // Without hosts, the SAN holds only the identity.
  ASSERT_OK_AND_ASSIGN(IssuedCertificate plain, ca_->IssueTls(Party("p"), {}, kYear));
  X509Ptr plain_cert = ParseCert(plain.cert_pem);
  EXPECT_EQ(X509_check_host(plain_cert.get(), "localhost", 0, 0, nullptr), 0);
}

TEST_F(CertificatesTest, InvalidHostsAreRejected) {
  for (const std::string& bad :
       {std::string(""), std::string("bad host"), std::string("a..b"), std::string("*.example.org"),
        std::string("-a.example.org"), std::string("x,URI:fedanon://admin/root"),
        std::string("1.2.3.4abc.") /* trailing dot */, std::string("fe80::1%eth0"),
        std::string(64, 'a') + ".org", std::string("host\0name", 9)}) {
    EXPECT_THAT(ca_->IssueTls(Leader("leader"), {bad}, kYear), StatusIs(kInvalid, "invalid host"))
        << bad;
  }
}

// ---- sealing certificates ---------------------------------------------------------------------

TEST_F(CertificatesTest, SealingKeyRoundTrip) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca_->IssueSeal(Party("hospital-b"), kYear));
  X509Ptr cert = ParseCert(seal.cert_pem);
  EXPECT_EQ(CommonName(cert.get()), "party/hospital-b");
  EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_KEY_AGREEMENT));
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()), UINT32_MAX);  // no EKU
  EXPECT_EQ(X509_check_ca(cert.get()), 0);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SealPublicKey> pub,
                       VerifiedSealKey(seal.cert_pem, ca_->cert_pem(), Party("hospital-b")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SealKeyPair> pair, SealKeyPairFromPem(seal.key_pem));
  EXPECT_EQ(pub->UncompressedPoint(), pair->public_key().UncompressedPoint());

  const SealContext ctx{.job_id = "job-1",
                        .run_id = "run-1",
                        .round = 7,
                        .sender = "hospital-a",
                        .receiver = "hospital-b",
                        .purpose = "test"};
  ASSERT_OK_AND_ASSIGN(const std::string box, Seal(*pub, ctx, "patient counts"));
  ASSERT_OK_AND_ASSIGN(const std::string opened, Open(*pair, ctx, box));
  EXPECT_EQ(opened, "patient counts");

  // Another party's key cannot open it.
  ASSERT_OK_AND_ASSIGN(IssuedCertificate other, ca_->IssueSeal(Party("hospital-c"), kYear));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SealKeyPair> other_pair, SealKeyPairFromPem(other.key_pem));
  EXPECT_THAT(Open(*other_pair, ctx, box), StatusIs(kDenied, ""));
}

TEST_F(CertificatesTest, VerifiedSealKeyChecksTheExpectedIdentity) {
  ASSERT_OK_AND_ASSIGN(IssuedCertificate seal, ca_->IssueSeal(Party("hospital-b"), kYear));
  EXPECT_THAT(VerifiedSealKey(seal.cert_pem, ca_->cert_pem(), Party("hospital-c")),
              StatusIs(kDenied, "fedanon-seal://party/hospital-b"));
  EXPECT_THAT(VerifiedSealKey(seal.cert_pem, ca_->cert_pem(), Leader("hospital-b")),
              StatusIs(kDenied, "want fedanon-seal://leader/hospital-b"));
  EXPECT_THAT(VerifiedSealKey(seal.cert_pem, ca_->cert_pem(), Party("")), StatusIs(kDenied, ""));
}

TEST(SealKeyPairFromPemTest, RejectsOtherKeys) {
  EXPECT_THAT(SealKeyPairFromPem(""), StatusIs(kInvalid, ""));
  EXPECT_THAT(SealKeyPairFromPem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
              StatusIs(kInvalid, ""));
  PkeyPtr ed(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  ASSERT_NE(ed, nullptr);
  EXPECT_THAT(SealKeyPairFromPem(KeyToPem(ed.get())), StatusIs(kInvalid, "P-256"));
  PkeyPtr p384(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"));
  ASSERT_NE(p384, nullptr);
  EXPECT_THAT(SealKeyPairFromPem(KeyToPem(p384.get())), StatusIs(kInvalid, "P-256"));
  // A P-256 key in PKCS#8 PEM (as written by OpenSSL) loads.
  PkeyPtr p256(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  EXPECT_TRUE(SealKeyPairFromPem(KeyToPem(p256.get())).ok());
}

}  // namespace
}  // namespace fedanon::crypto

namespace fedanon::crypto {
namespace {

// Revocation: a CRL signed by the CA revokes exactly the certificates it names; a CRL from
// another CA, a tampered or expired one fails closed.
TEST(RevocationTest, TheCaRevokesExactlyWhatItLists) {
  ASSERT_OK_AND_ASSIGN(auto ca, CertificateAuthority::Create("fed", absl::Hours(48)));
  ASSERT_OK_AND_ASSIGN(auto mallory, ca->IssueTls({Role::kParty, "mallory"}, {}, absl::Hours(5)));
  ASSERT_OK_AND_ASSIGN(auto alice, ca->IssueTls({Role::kAdmin, "alice"}, {}, absl::Hours(5)));
  ASSERT_OK_AND_ASSIGN(auto seal, ca->IssueSeal({Role::kParty, "mallory"}, absl::Hours(5)));
  ASSERT_OK_AND_ASSIGN(std::string crl,
                       ca->IssueCrl({mallory.cert_pem, seal.cert_pem}, absl::Hours(24)));
  EXPECT_THAT(
      CheckNotRevoked(mallory.cert_pem, crl, ca->cert_pem()),
      ::fedanon::testing::StatusIs(absl::StatusCode::kPermissionDenied, "certificate revoked"));
  EXPECT_THAT(CheckNotRevoked(seal.cert_pem, crl, ca->cert_pem()),
              ::fedanon::testing::StatusIs(absl::StatusCode::kPermissionDenied, "revoked"));
  EXPECT_OK(CheckNotRevoked(alice.cert_pem, crl, ca->cert_pem()));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> serials, RevokedSerials(crl, ca->cert_pem()));
  EXPECT_EQ(serials.size(), 2u);
  // An empty list revokes nothing.
  ASSERT_OK_AND_ASSIGN(std::string empty, ca->IssueCrl({}, absl::Hours(24)));
  EXPECT_OK(CheckNotRevoked(mallory.cert_pem, empty, ca->cert_pem()));

  // Another CA's list (which could "un-revoke") is refused, as is a modified one.
  ASSERT_OK_AND_ASSIGN(auto other, CertificateAuthority::Create("fed", absl::Hours(48)));
  ASSERT_OK_AND_ASSIGN(std::string foreign, other->IssueCrl({}, absl::Hours(24)));
  EXPECT_THAT(CheckNotRevoked(mallory.cert_pem, foreign, ca->cert_pem()),
              ::fedanon::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                           "not signed by the federation CA"));
  std::string tampered = crl;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(CheckNotRevoked(alice.cert_pem, tampered, ca->cert_pem()).ok());
  EXPECT_FALSE(CheckNotRevoked(alice.cert_pem, "garbage", ca->cert_pem()).ok());
  // A certificate of another CA cannot be put on this CA's list.
  ASSERT_OK_AND_ASSIGN(auto stranger, other->IssueTls({Role::kParty, "x"}, {}, absl::Hours(5)));
  EXPECT_FALSE(ca->IssueCrl({stranger.cert_pem}, absl::Hours(24)).ok());
}

TEST(RevocationTest, AnExpiredListFailsClosed) {
  ASSERT_OK_AND_ASSIGN(auto ca, CertificateAuthority::Create("fed", absl::Hours(48)));
  ASSERT_OK_AND_ASSIGN(auto alice, ca->IssueTls({Role::kAdmin, "alice"}, {}, absl::Hours(5)));
  ASSERT_OK_AND_ASSIGN(std::string crl, ca->IssueCrl({}, absl::Seconds(1)));
  absl::SleepFor(absl::Seconds(2));
  EXPECT_THAT(CheckNotRevoked(alice.cert_pem, crl, ca->cert_pem()),
              ::fedanon::testing::StatusIs(absl::StatusCode::kPermissionDenied, "expired"));
}

// ---- CA bundles (a CA rotation's overlap) -------------------------------------------------------

TEST_F(CertificatesTest, ABundleOfTwoCasAcceptsCertificatesAndListsOfEither) {
  const std::string bundle = ca_->cert_pem() + other_ca_->cert_pem();
  const Identity a{Role::kParty, "hospital-a"};
  const Identity b{Role::kParty, "hospital-b"};
  ASSERT_OK_AND_ASSIGN(IssuedCertificate old_tls, ca_->IssueTls(a, {}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate new_tls, other_ca_->IssueTls(b, {}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(IssuedCertificate new_seal, other_ca_->IssueSeal(b, absl::Hours(1)));
  // Each CA is a trust anchor of the bundle, in either order.
  for (const std::string& cas : {bundle, other_ca_->cert_pem() + ca_->cert_pem()}) {
    ASSERT_OK_AND_ASSIGN(const Identity got_a, VerifiedTlsIdentity(old_tls.cert_pem, cas));
    EXPECT_TRUE(got_a == a);
    ASSERT_OK_AND_ASSIGN(const Identity got_b, VerifiedTlsIdentity(new_tls.cert_pem, cas));
    EXPECT_TRUE(got_b == b);
    EXPECT_OK(VerifiedSealKey(new_seal.cert_pem, cas, b).status());
  }
  // Without the new CA its certificates are refused, as before.
  EXPECT_THAT(VerifiedTlsIdentity(new_tls.cert_pem, ca_->cert_pem()),
              StatusIs(absl::StatusCode::kPermissionDenied, "certificate verification failed"));
  EXPECT_THAT(VerifiedSealKey(new_seal.cert_pem, ca_->cert_pem(), b),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  // A list of either CA is recognised by its signer.
  ASSERT_OK_AND_ASSIGN(std::string old_crl, ca_->IssueCrl({old_tls.cert_pem}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(std::string new_crl,
                       other_ca_->IssueCrl({new_tls.cert_pem}, absl::Hours(1)));
  EXPECT_THAT(CheckNotRevoked(old_tls.cert_pem, old_crl, bundle),
              StatusIs(absl::StatusCode::kPermissionDenied, "certificate revoked"));
  EXPECT_THAT(CheckNotRevoked(new_tls.cert_pem, new_crl, bundle),
              StatusIs(absl::StatusCode::kPermissionDenied, "certificate revoked"));
  EXPECT_OK(CheckNotRevoked(new_tls.cert_pem, old_crl, bundle));
  EXPECT_THAT(CheckNotRevoked(new_tls.cert_pem, new_crl, ca_->cert_pem()),
              StatusIs(absl::StatusCode::kInvalidArgument, "not signed by the federation CA"));
  EXPECT_THAT(VerifiedTlsIdentity(old_tls.cert_pem, "no PEM here"),
              StatusIs(absl::StatusCode::kInvalidArgument, "CA certificate"));
}

}  // namespace
}  // namespace fedanon::crypto
