#include "crypto/certificates.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/openssl_util.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto {

namespace {

using internal::EvpPkeyCtxPtr;
using internal::EvpPkeyPtr;
using internal::OpenSslDeleter;
using internal::OpenSslError;
using internal::OpenSslInternal;

using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpenSslDeleter<X509_NAME_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpenSslDeleter<X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpenSslDeleter<X509_STORE_CTX_free>>;
using X509ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, OpenSslDeleter<GENERAL_NAMES_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, OpenSslDeleter<GENERAL_NAME_free>>;
using Asn1IntegerPtr = std::unique_ptr<ASN1_INTEGER, OpenSslDeleter<ASN1_INTEGER_free>>;
using Asn1TimePtr = std::unique_ptr<ASN1_TIME, OpenSslDeleter<ASN1_TIME_free>>;
using X509CrlPtr = std::unique_ptr<X509_CRL, OpenSslDeleter<X509_CRL_free>>;
using Pkcs8Ptr = std::unique_ptr<PKCS8_PRIV_KEY_INFO, OpenSslDeleter<PKCS8_PRIV_KEY_INFO_free>>;

constexpr std::string_view kTlsScheme = "fedanon";
constexpr std::string_view kSealScheme = "fedanon-seal";
constexpr std::string_view kSignScheme = "fedanon-sign";
constexpr size_t kMaxNameLength = 64;
constexpr int64_t kNotBeforeSlackSeconds = int64_t{5} * 60;
constexpr int64_t kMaxValiditySeconds = int64_t{100} * 366 * 24 * 3600;  // ~100 years
constexpr size_t kSerialBytes = 16;                                      // 128-bit serials

// Never prompt for a passphrase (OpenSSL's default callback reads the terminal): encrypted keys
// are simply rejected.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

BioPtr ReadOnlyBio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// The contents of a memory BIO as a string.
std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);  // NOLINT(runtime/int): OpenSSL's type
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string();
}

absl::Status CheckPemSize(std::string_view pem, std::string_view what) {
  if (pem.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is empty"));
  if (pem.size() > (size_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is too large"));
  }
  return absl::OkStatus();
}

absl::StatusOr<X509Ptr> ParseCertificatePem(std::string_view pem, std::string_view what) {
  RETURN_IF_ERROR(CheckPemSize(pem, what));
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  if (cert == nullptr) {
    return OpenSslError(absl::StatusCode::kInvalidArgument,
                        absl::StrCat(std::string(what), ": not a PEM X.509 certificate"));
  }
  return cert;
}

// Every certificate of a CA file: one CA, or during a CA rotation the old and the new one
// (each a trust anchor of its own). InvalidArgument when it holds none.
absl::StatusOr<std::vector<X509Ptr>> ParseCaBundle(std::string_view pem) {
  RETURN_IF_ERROR(CheckPemSize(pem, "CA certificate"));
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  std::vector<X509Ptr> cas;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
    if (cert == nullptr) break;
    cas.push_back(std::move(cert));
  }
  ERR_clear_error();  // the end of the bundle
  if (cas.empty()) {
    return absl::InvalidArgumentError("CA certificate: not a PEM X.509 certificate");
  }
  return cas;
}

absl::StatusOr<EvpPkeyPtr> ParsePrivateKeyPem(std::string_view pem, std::string_view what) {
  RETURN_IF_ERROR(CheckPemSize(pem, what));
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (key == nullptr) {
    // Do not echo OpenSSL's reasons here: nothing about the key's bytes belongs in a status.
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": not an unencrypted PEM private key"));
  }
  return key;
}

absl::Status CheckIsP256(EVP_PKEY* pkey, std::string_view what) {
  char name[64];
  size_t len = 0;
  if (EVP_PKEY_is_a(pkey, "EC") != 1 ||
      EVP_PKEY_get_group_name(pkey, name, sizeof(name), &len) != 1 ||
      (std::string_view(name, len) != "prime256v1" && std::string_view(name, len) != "P-256")) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is not an EC P-256 key"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvpPkeyPtr> GenerateP256Key() {
  EvpPkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (key == nullptr) return OpenSslInternal("generating a P-256 key");
  return key;
}

// PKCS#8 PEM ("BEGIN PRIVATE KEY"), unencrypted. The intermediate buffer lives in OpenSSL's
// secure-memory BIO (wiped when freed).
absl::StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_secmem()));
  if (bio == nullptr) return OpenSslInternal("BIO_new");
  if (PEM_write_bio_PKCS8PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslInternal("encoding the private key");
  }
  return BioContents(bio.get());
}

absl::StatusOr<std::string> CertificatePem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr) return OpenSslInternal("BIO_new");
  if (PEM_write_bio_X509(bio.get(), cert) != 1) return OpenSslInternal("encoding the certificate");
  return BioContents(bio.get());
}

absl::Status CheckValidity(absl::Duration validity) {
  if (validity <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("certificate validity must be positive");
  }
  if (validity > absl::Seconds(kMaxValiditySeconds)) {
    return absl::InvalidArgumentError("certificate validity must be at most 100 years");
  }
  return absl::OkStatus();
}

// A random positive 128-bit serial number.
absl::Status SetRandomSerial(X509* cert) {
  unsigned char bytes[kSerialBytes];
  internal::BnPtr bn;
  do {
    RETURN_IF_ERROR(FillRandom(absl::MakeSpan(bytes, sizeof(bytes))));
    bn.reset(BN_bin2bn(bytes, sizeof(bytes), nullptr));
    if (bn == nullptr) return OpenSslInternal("BN_bin2bn");
  } while (BN_is_zero(bn.get()));
  Asn1IntegerPtr serial(BN_to_ASN1_INTEGER(bn.get(), nullptr));
  if (serial == nullptr || X509_set_serialNumber(cert, serial.get()) != 1) {
    return OpenSslInternal("setting the serial number");
  }
  return absl::OkStatus();
}

absl::StatusOr<X509NamePtr> NameWithCn(std::string_view cn) {
  X509NamePtr name(X509_NAME_new());
  if (name == nullptr ||
      X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.data()),
                                 static_cast<int>(cn.size()), -1, 0) != 1) {
    return OpenSslInternal("building the subject name");
  }
  return name;
}

// notBefore = now - 5 min; notAfter = now + validity, capped at `cap` when given (a certificate
// never outlives its issuer).
absl::Status SetValidity(X509* cert, absl::Duration validity, const ASN1_TIME* cap) {
  const int64_t seconds = absl::ToInt64Seconds(validity);
  if (X509_gmtime_adj(X509_getm_notBefore(cert), -kNotBeforeSlackSeconds) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert), static_cast<int>(seconds / 86400),
                       static_cast<long>(seconds % 86400),  // NOLINT(runtime/int)
                       nullptr) == nullptr) {
    return OpenSslInternal("setting the validity period");
  }
  if (cap != nullptr && ASN1_TIME_compare(X509_get0_notAfter(cert), cap) > 0) {
    if (X509_set1_notAfter(cert, cap) != 1) return OpenSslInternal("capping notAfter");
  }
  return absl::OkStatus();
}

// Adds an extension described in OpenSSL's configuration syntax (only constant strings from this
// file are passed here: user-supplied values go through AddSubjectAltName).
absl::Status AddConfExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslInternal(absl::StrCat("adding extension ", OBJ_nid2sn(nid), " = ", value));
  }
  return absl::OkStatus();
}

// An IPv4 or IPv6 literal (optionally in brackets) as 4 or 16 network-order bytes.
std::optional<std::string> ParseIpLiteral(std::string_view host) {
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned char buf[16];
  if (inet_pton(AF_INET, h.c_str(), buf) == 1) return std::string(reinterpret_cast<char*>(buf), 4);
  if (inet_pton(AF_INET6, h.c_str(), buf) == 1) {
    return std::string(reinterpret_cast<char*>(buf), 16);
  }
  return std::nullopt;
}

// RFC 1123 host name: labels of 1-63 [A-Za-z0-9-] not starting or ending with '-', at most 253
// characters in total. No wildcards.
bool IsValidDnsName(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  size_t start = 0;
  while (start <= host.size()) {
    size_t end = host.find('.', start);
    if (end == std::string_view::npos) end = host.size();
    const std::string_view label = host.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    start = end + 1;
  }
  return true;
}

absl::Status PushGeneralName(GENERAL_NAMES* names, int type, std::string_view value) {
  GeneralNamePtr name(GENERAL_NAME_new());
  ASN1_STRING* str = type == GEN_IPADD ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
  if (name == nullptr || str == nullptr ||
      ASN1_STRING_set(str, value.data(), static_cast<int>(value.size())) != 1) {
    ASN1_STRING_free(str);
    return OpenSslInternal("building a subjectAltName entry");
  }
  GENERAL_NAME_set0_value(name.get(), type, str);
  if (sk_GENERAL_NAME_push(names, name.get()) <= 0) {
    return OpenSslInternal("building the subjectAltName");
  }
  GENERAL_NAME* owned_by_names = name.release();
  (void)owned_by_names;  // `names` frees it
  return absl::OkStatus();
}

// subjectAltName = URI:<uri>, then DNS:/IP: for every host (duplicates dropped). Built from
// GENERAL_NAME structures, never from a configuration string, so a host cannot inject entries.
absl::Status AddSubjectAltName(X509* cert, const std::string& uri,
                               const std::vector<std::string>& hosts) {
  GeneralNamesPtr names(GENERAL_NAMES_new());
  if (names == nullptr) return OpenSslInternal("GENERAL_NAMES_new");
  RETURN_IF_ERROR(PushGeneralName(names.get(), GEN_URI, uri));
  std::vector<std::pair<int, std::string>> seen;
  for (const std::string& host : hosts) {
    std::pair<int, std::string> entry;
    if (std::optional<std::string> ip = ParseIpLiteral(host)) {
      entry = {GEN_IPADD, *std::move(ip)};
    } else if (IsValidDnsName(host)) {
      entry = {GEN_DNS, absl::AsciiStrToLower(host)};
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid host \"", absl::CHexEscape(host),
                       "\": want a DNS name or an IPv4/IPv6 address"));
    }
    if (std::find(seen.begin(), seen.end(), entry) != seen.end()) continue;
    RETURN_IF_ERROR(PushGeneralName(names.get(), entry.first, entry.second));
    seen.push_back(std::move(entry));
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), /*crit=*/0, X509V3_ADD_DEFAULT) !=
      1) {
    return OpenSslInternal("adding subjectAltName");
  }
  return absl::OkStatus();
}

std::string IdentityUri(std::string_view scheme, const Identity& identity) {
  return absl::StrCat(std::string(scheme), "://", std::string(RoleName(identity.role)), "/",
                      identity.name);
}

absl::StatusOr<Role> ParseRole(std::string_view s) {
  for (Role r : {Role::kLeader, Role::kParty, Role::kAdmin}) {
    if (s == RoleName(r)) return r;
  }
  return absl::PermissionDeniedError(
      absl::StrCat("unknown role \"", absl::CHexEscape(std::string(s)), "\" in certificate"));
}

// The identity in the certificate's single SAN URI with scheme `scheme` (compared
// case-insensitively when counting, so "FEDANON://x" next to "fedanon://y" is ambiguous and
// rejected). PermissionDenied for zero or several such URIs, unknown roles and invalid names.
absl::StatusOr<Identity> ExtractIdentity(X509* cert, std::string_view scheme) {
  GeneralNamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, /*crit=*/nullptr, /*idx=*/nullptr)));
  ERR_clear_error();
  const std::string prefix = absl::StrCat(std::string(scheme), "://");
  std::vector<std::string> uris;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* s = name->d.uniformResourceIdentifier;
    const std::string uri(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                          static_cast<size_t>(ASN1_STRING_length(s)));
    if (uri.size() >= prefix.size() &&
        absl::EqualsIgnoreCase(uri.substr(0, prefix.size()), prefix)) {
      uris.push_back(uri);
    }
  }
  if (uris.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("certificate has no ", prefix, " identity in its subjectAltName"));
  }
  if (uris.size() > 1) {
    return absl::PermissionDeniedError(
        absl::StrCat("certificate has ", uris.size(), " ", prefix, " identities, want one"));
  }
  const std::string& uri = uris.front();
  if (uri.compare(0, prefix.size(), prefix) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("malformed identity URI (want ", prefix, ")"));
  }
  const std::string_view rest = std::string_view(uri).substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return absl::PermissionDeniedError(
        absl::StrCat("malformed identity URI \"", absl::CHexEscape(uri), "\""));
  }
  Identity identity;
  ASSIGN_OR_RETURN(identity.role, ParseRole(rest.substr(0, slash)));
  const std::string_view name = rest.substr(slash + 1);
  if (absl::Status st = ValidateParticipantName(name); !st.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("invalid name in identity URI \"",
                                                    absl::CHexEscape(uri),
                                                    "\": ", std::string(st.message())));
  }
  identity.name = std::string(name);
  return identity;
}

enum class Usage { kTls, kSeal, kSign };

// Verifies `cert` against `ca` as the only trust anchor (strict X.509 checks, current time, the
// leaf must be issued directly by the CA) and checks the leaf's usage. PermissionDenied with
// OpenSSL's verification reason on failure.
absl::Status VerifyLeaf(X509* cert, X509* ca, Usage usage) {
  if (X509_check_ca(ca) < 1) {
    return absl::InvalidArgumentError("the CA certificate is not a CA (basicConstraints)");
  }
  X509StorePtr store(X509_STORE_new());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, /*untrusted=*/nullptr) != 1) {
    return OpenSslInternal("setting up certificate verification");
  }
  if (usage == Usage::kTls && X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT) != 1) {
    return OpenSslInternal("X509_STORE_CTX_set_purpose");
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  X509_VERIFY_PARAM_set_depth(param, 0);  // leaf signed directly by the trust anchor
  if (X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return absl::PermissionDeniedError(
        absl::StrCat("certificate verification failed: ", X509_verify_cert_error_string(err)));
  }
  if (X509_check_ca(cert) != 0) {
    return absl::PermissionDeniedError("a CA certificate is not a participant certificate");
  }
  const uint32_t flags = X509_get_extension_flags(cert);
  const uint32_t ku = X509_get_key_usage(cert);
  const uint32_t xku = X509_get_extended_key_usage(cert);
  if (usage == Usage::kTls) {
    if (!(flags & EXFLAG_KUSAGE) || !(ku & KU_DIGITAL_SIGNATURE) || !(flags & EXFLAG_XKUSAGE) ||
        !(xku & XKU_SSL_SERVER) || !(xku & XKU_SSL_CLIENT)) {
      return absl::PermissionDeniedError(
          "not a TLS certificate (want keyUsage digitalSignature and extendedKeyUsage "
          "serverAuth, clientAuth)");
    }
  } else if (usage == Usage::kSeal) {
    if (!(flags & EXFLAG_KUSAGE) || !(ku & KU_KEY_AGREEMENT)) {
      return absl::PermissionDeniedError("not a sealing certificate (want keyUsage keyAgreement)");
    }
  } else {
    // A statement-signing certificate signs and does nothing else: no key agreement, no TLS.
    if (!(flags & EXFLAG_KUSAGE) || ku != KU_DIGITAL_SIGNATURE || (flags & EXFLAG_XKUSAGE)) {
      return absl::PermissionDeniedError(
          "not a statement-signing certificate (want keyUsage digitalSignature only, no "
          "extendedKeyUsage)");
    }
  }
  return absl::OkStatus();
}

// VerifyLeaf against each CA of a bundle: OK when one of them issued `cert` (the error of the
// last otherwise). Each CA is tried alone, so two CAs of the same name during a rotation cannot
// shadow each other.
absl::Status VerifyLeafAgainstAny(X509* cert, const std::vector<X509Ptr>& cas, Usage usage) {
  absl::Status last = absl::InvalidArgumentError("no CA certificate");
  for (const X509Ptr& ca : cas) {
    last = VerifyLeaf(cert, ca.get(), usage);
    if (last.ok()) return last;
  }
  return last;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kLeader:
      return "leader";
    case Role::kParty:
      return "party";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::Status ValidateParticipantName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid name \"", absl::CHexEscape(std::string(name)), "\": want 1-64 characters"));
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(name.front()))) {
    return absl::InvalidArgumentError(absl::StrCat("invalid name \"",
                                                   absl::CHexEscape(std::string(name)),
                                                   "\": must start with a letter or digit"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid name \"", absl::CHexEscape(std::string(name)),
                       "\": only letters, digits, '.', '_' and '-' are allowed"));
    }
  }
  return absl::OkStatus();
}

// ---- CertificateAuthority ---------------------------------------------------------------------

struct CertificateAuthority::Impl {
  X509Ptr cert;
  EvpPkeyPtr key;

  // A leaf certificate for `identity` carrying `uri` (and `hosts`) with the given usage.
  absl::StatusOr<IssuedCertificate> Issue(const Identity& identity, Usage usage,
                                          const std::vector<std::string>& hosts,
                                          absl::Duration validity) const {
    RETURN_IF_ERROR(ValidateParticipantName(identity.name));
    RETURN_IF_ERROR(CheckValidity(validity));
    if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) <= 0) {
      return absl::FailedPreconditionError("the CA certificate has expired");
    }
    ASSIGN_OR_RETURN(EvpPkeyPtr leaf_key, GenerateP256Key());
    X509Ptr leaf(X509_new());
    if (leaf == nullptr || X509_set_version(leaf.get(), X509_VERSION_3) != 1) {
      return OpenSslInternal("X509_new");
    }
    RETURN_IF_ERROR(SetRandomSerial(leaf.get()));
    const std::string cn = absl::StrCat(std::string(RoleName(identity.role)), "/", identity.name);
    ASSIGN_OR_RETURN(X509NamePtr subject, NameWithCn(cn));
    if (X509_set_subject_name(leaf.get(), subject.get()) != 1 ||
        X509_set_issuer_name(leaf.get(), X509_get_subject_name(cert.get())) != 1 ||
        X509_set_pubkey(leaf.get(), leaf_key.get()) != 1) {
      return OpenSslInternal("building the certificate");
    }
    RETURN_IF_ERROR(SetValidity(leaf.get(), validity, X509_get0_notAfter(cert.get())));
    X509* issuer = cert.get();
    RETURN_IF_ERROR(
        AddConfExtension(leaf.get(), issuer, NID_basic_constraints, "critical,CA:FALSE"));
    if (usage == Usage::kTls) {
      RETURN_IF_ERROR(
          AddConfExtension(leaf.get(), issuer, NID_key_usage, "critical,digitalSignature"));
      RETURN_IF_ERROR(
          AddConfExtension(leaf.get(), issuer, NID_ext_key_usage, "serverAuth,clientAuth"));
      RETURN_IF_ERROR(AddSubjectAltName(leaf.get(), IdentityUri(kTlsScheme, identity), hosts));
    } else if (usage == Usage::kSeal) {
      RETURN_IF_ERROR(AddConfExtension(leaf.get(), issuer, NID_key_usage, "critical,keyAgreement"));
      RETURN_IF_ERROR(
          AddSubjectAltName(leaf.get(), IdentityUri(kSealScheme, identity), /*hosts=*/{}));
    } else {
      RETURN_IF_ERROR(
          AddConfExtension(leaf.get(), issuer, NID_key_usage, "critical,digitalSignature"));
      RETURN_IF_ERROR(
          AddSubjectAltName(leaf.get(), IdentityUri(kSignScheme, identity), /*hosts=*/{}));
    }
    RETURN_IF_ERROR(AddConfExtension(leaf.get(), issuer, NID_subject_key_identifier, "hash"));
    RETURN_IF_ERROR(
        AddConfExtension(leaf.get(), issuer, NID_authority_key_identifier, "keyid:always"));
    if (X509_sign(leaf.get(), key.get(), internal::Sha256()) <= 0) {
      return OpenSslInternal("signing the certificate");
    }
    IssuedCertificate out;
    ASSIGN_OR_RETURN(out.cert_pem, CertificatePem(leaf.get()));
    ASSIGN_OR_RETURN(out.key_pem, PrivateKeyPem(leaf_key.get()));
    return out;
  }
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<Impl> impl, std::string cert_pem)
    : impl_(std::move(impl)), cert_pem_(std::move(cert_pem)) {}

CertificateAuthority::~CertificateAuthority() = default;

absl::StatusOr<std::unique_ptr<CertificateAuthority>> CertificateAuthority::Create(
    std::string_view federation, absl::Duration validity) {
  if (absl::Status st = ValidateParticipantName(federation); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("federation name: ", std::string(st.message())));
  }
  RETURN_IF_ERROR(CheckValidity(validity));
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->key, GenerateP256Key());
  impl->cert.reset(X509_new());
  X509* cert = impl->cert.get();
  if (cert == nullptr || X509_set_version(cert, X509_VERSION_3) != 1) {
    return OpenSslInternal("X509_new");
  }
  RETURN_IF_ERROR(SetRandomSerial(cert));
  ASSIGN_OR_RETURN(X509NamePtr name,
                   NameWithCn(absl::StrCat("fedanon CA ", std::string(federation))));
  if (X509_set_subject_name(cert, name.get()) != 1 || X509_set_issuer_name(cert, name.get()) != 1 ||
      X509_set_pubkey(cert, impl->key.get()) != 1) {
    return OpenSslInternal("building the CA certificate");
  }
  RETURN_IF_ERROR(SetValidity(cert, validity, /*cap=*/nullptr));
  RETURN_IF_ERROR(
      AddConfExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  RETURN_IF_ERROR(AddConfExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign"));
  RETURN_IF_ERROR(AddConfExtension(cert, cert, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(AddConfExtension(cert, cert, NID_authority_key_identifier, "keyid:always"));
  if (X509_sign(cert, impl->key.get(), internal::Sha256()) <= 0) {
    return OpenSslInternal("signing the CA certificate");
  }
  ASSIGN_OR_RETURN(std::string pem, CertificatePem(cert));
  return std::unique_ptr<CertificateAuthority>(
      new CertificateAuthority(std::move(impl), std::move(pem)));
}

absl::StatusOr<std::unique_ptr<CertificateAuthority>> CertificateAuthority::Load(
    std::string_view cert_pem, std::string_view key_pem) {
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->cert, ParseCertificatePem(cert_pem, "CA certificate"));
  ASSIGN_OR_RETURN(impl->key, ParsePrivateKeyPem(key_pem, "CA key"));
  RETURN_IF_ERROR(CheckIsP256(impl->key.get(), "the CA key"));
  X509* cert = impl->cert.get();
  if (X509_check_ca(cert) < 1 || !(X509_get_extension_flags(cert) & EXFLAG_KUSAGE) ||
      !(X509_get_key_usage(cert) & KU_KEY_CERT_SIGN)) {
    return absl::InvalidArgumentError(
        "not a CA certificate (want basicConstraints CA:TRUE and keyUsage keyCertSign)");
  }
  if (X509_check_private_key(cert, impl->key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the CA key does not match the CA certificate");
  }
  ASSIGN_OR_RETURN(std::string pem, CertificatePem(cert));
  return std::unique_ptr<CertificateAuthority>(
      new CertificateAuthority(std::move(impl), std::move(pem)));
}

absl::StatusOr<std::string> CertificateAuthority::key_pem() const {
  return PrivateKeyPem(impl_->key.get());
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::IssueTls(
    const Identity& identity, const std::vector<std::string>& hosts,
    absl::Duration validity) const {
  return impl_->Issue(identity, Usage::kTls, hosts, validity);
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::IssueSeal(const Identity& identity,
                                                                  absl::Duration validity) const {
  return impl_->Issue(identity, Usage::kSeal, /*hosts=*/{}, validity);
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::IssueStatementSigner(
    const Identity& identity, absl::Duration validity) const {
  return impl_->Issue(identity, Usage::kSign, /*hosts=*/{}, validity);
}

absl::StatusOr<std::string> CertificateAuthority::IssueCrl(const std::vector<std::string>& revoked,
                                                           absl::Duration validity) const {
  RETURN_IF_ERROR(CheckValidity(validity));
  X509CrlPtr crl(X509_CRL_new());
  if (crl == nullptr || X509_CRL_set_version(crl.get(), 1) != 1 ||  // v2
      X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(impl_->cert.get())) != 1) {
    return OpenSslInternal("X509_CRL_new");
  }
  Asn1TimePtr now(ASN1_TIME_set(nullptr, absl::ToTimeT(absl::Now())));
  Asn1TimePtr next(ASN1_TIME_set(nullptr, absl::ToTimeT(absl::Now() + validity)));
  if (now == nullptr || next == nullptr || X509_CRL_set1_lastUpdate(crl.get(), now.get()) != 1 ||
      X509_CRL_set1_nextUpdate(crl.get(), next.get()) != 1) {
    return OpenSslInternal("setting the CRL's dates");
  }
  for (const std::string& pem : revoked) {
    ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(pem, "revoked certificate"));
    if (X509_check_issued(impl_->cert.get(), cert.get()) != X509_V_OK) {
      return absl::InvalidArgumentError("a certificate to revoke was not issued by this CA");
    }
    X509_REVOKED* entry = X509_REVOKED_new();
    if (entry == nullptr ||
        X509_REVOKED_set_serialNumber(entry, X509_get_serialNumber(cert.get())) != 1 ||
        X509_REVOKED_set_revocationDate(entry, now.get()) != 1 ||
        X509_CRL_add0_revoked(crl.get(), entry) != 1) {
      X509_REVOKED_free(entry);
      return OpenSslInternal("adding a revoked certificate");
    }
  }
  if (X509_CRL_sort(crl.get()) != 1 ||
      X509_CRL_sign(crl.get(), impl_->key.get(), internal::Sha256()) <= 0) {
    return OpenSslInternal("signing the CRL");
  }
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509_CRL(bio.get(), crl.get()) != 1) {
    return OpenSslInternal("encoding the CRL");
  }
  return BioContents(bio.get());
}

// ---- Verification -----------------------------------------------------------------------------

namespace {

// The CRL `crl_pem`, checked to be signed by the CA `ca` and named for it.
absl::StatusOr<X509CrlPtr> VerifiedCrl(std::string_view crl_pem, X509* ca) {
  RETURN_IF_ERROR(CheckPemSize(crl_pem, "revocation list"));
  BioPtr bio = ReadOnlyBio(crl_pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  X509CrlPtr crl(PEM_read_bio_X509_CRL(bio.get(), nullptr, NoPassphrase, nullptr));
  if (crl == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the revocation list is not a PEM X509 CRL");
  }
  EVP_PKEY* ca_key = X509_get0_pubkey(ca);
  if (ca_key == nullptr ||
      X509_NAME_cmp(X509_CRL_get_issuer(crl.get()), X509_get_subject_name(ca)) != 0 ||
      X509_CRL_verify(crl.get(), ca_key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the revocation list is not signed by the federation CA");
  }
  return crl;
}

}  // namespace

// The CRL verified against the CA of the bundle that signed it (InvalidArgument: none did).
absl::StatusOr<X509CrlPtr> VerifiedCrlOfBundle(std::string_view crl_pem, std::string_view ca_pem) {
  ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, ParseCaBundle(ca_pem));
  absl::StatusOr<X509CrlPtr> crl = absl::InvalidArgumentError("no CA certificate");
  for (const X509Ptr& ca : cas) {
    crl = VerifiedCrl(crl_pem, ca.get());
    if (crl.ok()) break;
  }
  return crl;
}

absl::Status CheckNotRevoked(std::string_view cert_pem, std::string_view crl_pem,
                             std::string_view ca_pem) {
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, "certificate"));
  ASSIGN_OR_RETURN(X509CrlPtr crl, VerifiedCrlOfBundle(crl_pem, ca_pem));
  const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crl.get());
  if (next == nullptr || X509_cmp_current_time(next) <= 0) {
    return absl::PermissionDeniedError(
        "the revocation list has expired (its nextUpdate has passed): issue a new one with "
        "fedanonctl revoke");
  }
  X509_REVOKED* entry = nullptr;
  if (X509_CRL_get0_by_serial(crl.get(), &entry, X509_get_serialNumber(cert.get())) == 1) {
    return absl::PermissionDeniedError("certificate revoked");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> RevokedSerials(std::string_view crl_pem,
                                                        std::string_view ca_pem) {
  ASSIGN_OR_RETURN(X509CrlPtr crl, VerifiedCrlOfBundle(crl_pem, ca_pem));
  std::vector<std::string> serials;
  const STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl.get());
  for (int i = 0; i < sk_X509_REVOKED_num(revoked); ++i) {
    const ASN1_INTEGER* serial = X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(revoked, i));
    internal::BnPtr bn(ASN1_INTEGER_to_BN(serial, nullptr));
    if (bn == nullptr) return OpenSslInternal("reading a serial number");
    char* hex = BN_bn2hex(bn.get());
    if (hex == nullptr) return OpenSslInternal("BN_bn2hex");
    serials.emplace_back(hex);
    OPENSSL_free(hex);
  }
  return serials;
}

absl::StatusOr<Identity> VerifiedTlsIdentity(std::string_view cert_pem, std::string_view ca_pem) {
  ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, ParseCaBundle(ca_pem));
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, "certificate"));
  RETURN_IF_ERROR(VerifyLeafAgainstAny(cert.get(), cas, Usage::kTls));
  return ExtractIdentity(cert.get(), kTlsScheme);
}

absl::Status CheckKeyBelongsToCertificate(std::string_view cert_pem, std::string_view key_pem,
                                          std::string_view cert_what, std::string_view key_what) {
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, cert_what));
  ASSIGN_OR_RETURN(EvpPkeyPtr key, ParsePrivateKeyPem(key_pem, key_what));
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(key_what), " does not belong to ", std::string(cert_what)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Identity> IdentityOfCertificate(std::string_view cert_pem) {
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, "certificate"));
  return ExtractIdentity(cert.get(), kTlsScheme);
}

absl::StatusOr<absl::Time> CertificateNotAfter(std::string_view cert_pem) {
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, "certificate"));
  struct tm when {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &when) != 1) {
    return absl::InvalidArgumentError("the certificate's notAfter does not parse");
  }
  return absl::FromCivil(absl::CivilSecond(when.tm_year + 1900, when.tm_mon + 1, when.tm_mday,
                                           when.tm_hour, when.tm_min, when.tm_sec),
                         absl::UTCTimeZone());
}

namespace {

// The public key of a sealing or statement-signing certificate verified for `expected`.
absl::StatusOr<std::unique_ptr<SealPublicKey>> VerifiedKeyOf(std::string_view cert_pem,
                                                             std::string_view ca_pem,
                                                             const Identity& expected, Usage usage,
                                                             std::string_view scheme,
                                                             std::string_view what) {
  ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, ParseCaBundle(ca_pem));
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificatePem(cert_pem, std::string(what)));
  RETURN_IF_ERROR(VerifyLeafAgainstAny(cert.get(), cas, usage));
  ASSIGN_OR_RETURN(const Identity identity, ExtractIdentity(cert.get(), scheme));
  if (!(identity == expected)) {
    return absl::PermissionDeniedError(absl::StrCat(std::string(what), " belongs to ",
                                                    IdentityUri(scheme, identity), ", want ",
                                                    IdentityUri(scheme, expected)));
  }
  EVP_PKEY* pub = X509_get0_pubkey(cert.get());
  if (pub == nullptr) return OpenSslError(absl::StatusCode::kPermissionDenied, "no public key");
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(pub, &der);
  if (len <= 0) return OpenSslInternal("encoding the certificate's public key");
  std::string spki(reinterpret_cast<char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return SealPublicKey::FromSpkiDer(spki);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SealPublicKey>> VerifiedSealKey(std::string_view seal_cert_pem,
                                                               std::string_view ca_pem,
                                                               const Identity& expected) {
  return VerifiedKeyOf(seal_cert_pem, ca_pem, expected, Usage::kSeal, kSealScheme,
                       "sealing certificate");
}

absl::StatusOr<std::unique_ptr<SealPublicKey>> VerifiedStatementKey(std::string_view sign_cert_pem,
                                                                    std::string_view ca_pem,
                                                                    const Identity& expected) {
  return VerifiedKeyOf(sign_cert_pem, ca_pem, expected, Usage::kSign, kSignScheme,
                       "statement-signing certificate");
}

absl::StatusOr<std::unique_ptr<SealKeyPair>> SealKeyPairFromPem(std::string_view key_pem) {
  ASSIGN_OR_RETURN(EvpPkeyPtr key, ParsePrivateKeyPem(key_pem, "sealing key"));
  RETURN_IF_ERROR(CheckIsP256(key.get(), "the sealing key"));
  Pkcs8Ptr p8(EVP_PKEY2PKCS8(key.get()));
  if (p8 == nullptr) return OpenSslInternal("EVP_PKEY2PKCS8");
  unsigned char* der = nullptr;
  const int len = i2d_PKCS8_PRIV_KEY_INFO(p8.get(), &der);
  if (len <= 0) return OpenSslInternal("encoding the sealing key");
  SecretBytes bytes = SecretBytes::CopyFrom(
      std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(len)));
  OPENSSL_clear_free(der, static_cast<size_t>(len));
  return SealKeyPair::FromPrivateKeyPkcs8Der(bytes);
}

}  // namespace fedanon::crypto

#undef ASSIGN_OR_RETURN_IMPL_
#undef ASSIGN_OR_RETURN
#undef RETURN_IF_ERROR
#undef CERTS_CONCAT_
#undef CERTS_CONCAT_INNER_
