#include "crypto/signature.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/openssl_util.h"

namespace fedanon::crypto {
namespace {

using internal::EvpMdCtxPtr;
using internal::OpenSslDeleter;
using internal::OpenSslInternal;
using internal::U8;

using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;

constexpr size_t kMaxPemBytes = size_t{1} << 20;
constexpr size_t kMaxSignatureBytes = 80;  // DER ECDSA P-256: at most 72 bytes

int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

BioPtr ReadOnlyBio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

bool IsP256(EVP_PKEY* key) {
  char name[64];
  size_t len = 0;
  const bool ok =
      EVP_PKEY_is_a(key, "EC") == 1 &&
      EVP_PKEY_get_group_name(key, name, sizeof(name), &len) == 1 &&
      (std::string_view(name, len) == "prime256v1" || std::string_view(name, len) == "P-256");
  ERR_clear_error();
  return ok;
}

}  // namespace

absl::StatusOr<std::string> Sign(std::string_view key_pem, std::string_view message) {
  if (key_pem.empty() || key_pem.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError("signing key: empty or too large");
  }
  BioPtr bio = ReadOnlyBio(key_pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (key == nullptr) {
    ERR_clear_error();  // nothing about the key's bytes belongs in a status
    return absl::InvalidArgumentError("signing key: not an unencrypted PEM private key");
  }
  if (!IsP256(key.get())) return absl::InvalidArgumentError("signing key: not an EC P-256 key");
  EvpMdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  if (ctx == nullptr ||
      EVP_DigestSignInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, key.get(), nullptr) !=
          1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, U8(message), message.size()) != 1) {
    return OpenSslInternal("setting up the signature");
  }
  std::string signature(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &len,
                     U8(message), message.size()) != 1) {
    return OpenSslInternal("signing");
  }
  signature.resize(len);
  return signature;
}

absl::StatusOr<Identity> VerifySignature(std::string_view cert_pem, std::string_view ca_pem,
                                         Role expected_role, std::string_view message,
                                         std::string_view signature) {
  // Chain to the CA, validity, TLS usage and the identity URI: the certificates module's checks.
  ASSIGN_OR_RETURN(const Identity signer, VerifiedTlsIdentity(cert_pem, ca_pem));
  if (signer.role != expected_role) {
    return absl::PermissionDeniedError(absl::StrCat("the signer '", signer.name, "' is ",
                                                    std::string(RoleName(signer.role)), ", not ",
                                                    std::string(RoleName(expected_role))));
  }
  if (signature.empty() || signature.size() > kMaxSignatureBytes) {
    return absl::PermissionDeniedError("the signature does not verify (malformed)");
  }
  BioPtr bio = ReadOnlyBio(cert_pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  if (cert == nullptr) return OpenSslInternal("reading the verified certificate");
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  if (key == nullptr || !IsP256(key)) {
    return absl::PermissionDeniedError("the signer's certificate holds no EC P-256 key");
  }
  EvpMdCtxPtr ctx(EVP_MD_CTX_new());
  if (ctx == nullptr ||
      EVP_DigestVerifyInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, key, nullptr) != 1) {
    return OpenSslInternal("setting up signature verification");
  }
  const int ok =
      EVP_DigestVerify(ctx.get(), U8(signature), signature.size(), U8(message), message.size());
  ERR_clear_error();
  if (ok != 1) return absl::PermissionDeniedError("the signature does not verify");
  return signer;
}

absl::StatusOr<std::string> SignStatement(std::string_view sign_key_pem, std::string_view message) {
  return Sign(sign_key_pem, message);
}

absl::Status VerifyStatement(const SealPublicKey& key, std::string_view message,
                             std::string_view signature) {
  if (signature.empty() || signature.size() > kMaxSignatureBytes) {
    return absl::PermissionDeniedError("the signature does not verify (malformed)");
  }
  ASSIGN_OR_RETURN(const std::string spki, key.SpkiDer());
  const unsigned char* p = U8(spki);
  PkeyPtr pub(d2i_PUBKEY(nullptr, &p, static_cast<long>(spki.size())));
  if (pub == nullptr || !IsP256(pub.get())) {
    ERR_clear_error();
    return absl::PermissionDeniedError("the signer's statement key is not an EC P-256 key");
  }
  EvpMdCtxPtr ctx(EVP_MD_CTX_new());
  if (ctx == nullptr || EVP_DigestVerifyInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr,
                                                pub.get(), nullptr) != 1) {
    return OpenSslInternal("setting up signature verification");
  }
  const int ok =
      EVP_DigestVerify(ctx.get(), U8(signature), signature.size(), U8(message), message.size());
  ERR_clear_error();
  if (ok != 1) return absl::PermissionDeniedError("the signature does not verify");
  return absl::OkStatus();
}

}  // namespace fedanon::crypto
