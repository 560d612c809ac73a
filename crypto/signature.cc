#include "crypto/signature.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
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

// Keys parsed once per process: a party signs its statements of every round with the same key
// and verifies its peers' with theirs, and OpenSSL's decoders (PEM, SubjectPublicKeyInfo) cost
// more than the signature itself. Only keys that passed the P-256 check are kept; at most
// kMaxKeys, the oldest dropped first. EVP_PKEY is safe to sign and verify with from several
// threads at once (each operation has its own EVP_MD_CTX).
class ParsedKeyCache {
 public:
  // The key kept under `id` with a reference of the caller's own, or null.
  PkeyPtr Find(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [kept_id, key] : keys_) {
      if (kept_id == id && EVP_PKEY_up_ref(key.get()) == 1) return PkeyPtr(key.get());
    }
    return nullptr;
  }
  void Keep(std::string id, EVP_PKEY* key) {
    if (EVP_PKEY_up_ref(key) != 1) return;
    PkeyPtr ref(key);
    std::lock_guard<std::mutex> lock(mu_);
    if (keys_.size() >= kMaxKeys) keys_.pop_front();
    keys_.emplace_back(std::move(id), std::move(ref));
  }

 private:
  static constexpr size_t kMaxKeys = 32;
  std::mutex mu_;
  std::deque<std::pair<std::string, PkeyPtr>> keys_;
};

ParsedKeyCache& SigningKeys() {
  static ParsedKeyCache* keys = new ParsedKeyCache;  // never destroyed: used until exit
  return *keys;
}
ParsedKeyCache& StatementKeys() {
  static ParsedKeyCache* keys = new ParsedKeyCache;
  return *keys;
}

// The P-256 private key of `key_pem`, parsed once per process (kept under its SHA-256).
absl::StatusOr<PkeyPtr> SigningKey(std::string_view key_pem) {
  std::string id = Sha256(key_pem);
  if (PkeyPtr kept = SigningKeys().Find(id)) return kept;
  BioPtr bio = ReadOnlyBio(key_pem);
  if (bio == nullptr) return OpenSslInternal("BIO_new_mem_buf");
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (key == nullptr) {
    ERR_clear_error();  // nothing about the key's bytes belongs in a status
    return absl::InvalidArgumentError("signing key: not an unencrypted PEM private key");
  }
  if (!IsP256(key.get())) return absl::InvalidArgumentError("signing key: not an EC P-256 key");
  SigningKeys().Keep(std::move(id), key.get());
  return key;
}

}  // namespace

absl::StatusOr<std::string> Sign(std::string_view key_pem, std::string_view message) {
  if (key_pem.empty() || key_pem.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError("signing key: empty or too large");
  }
  ASSIGN_OR_RETURN(const PkeyPtr key, SigningKey(key_pem));
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
  // Parsed once per process, kept under its uncompressed point.
  PkeyPtr pub = StatementKeys().Find(key.UncompressedPoint());
  if (pub == nullptr) {
    ASSIGN_OR_RETURN(const std::string spki, key.SpkiDer());
    const unsigned char* p = U8(spki);
    pub.reset(d2i_PUBKEY(nullptr, &p, static_cast<long>(spki.size())));
    if (pub == nullptr || !IsP256(pub.get())) {
      ERR_clear_error();
      return absl::PermissionDeniedError("the signer's statement key is not an EC P-256 key");
    }
    StatementKeys().Keep(key.UncompressedPoint(), pub.get());
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
