// Internal helpers shared by the crypto/ sources: unique_ptr aliases for OpenSSL handles, error
// formatting and process-wide fetched algorithms. Not part of the public API (includes OpenSSL).
//
// Thread-safety: the fetched algorithm objects and the P-256 group are created once (thread-safe
// static initialisation), never mutated afterwards, and intentionally never freed (they stay
// reachable until exit), so they may be used from any thread.
//
// Security: OpenSslError copies OpenSSL's error strings (no key material) into statuses; callers
// that must not leak a reason (authentication failures) clear the queue and return a fixed
// message instead.
#pragma once

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fedanon::crypto::internal {

template <auto Fn>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};

using BnPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>>;
// For secret scalars: wiped before freeing.
using SecretBnPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_clear_free>>;
using BnCtxPtr = std::unique_ptr<BN_CTX, OpenSslDeleter<BN_CTX_free>>;
using BnMontCtxPtr = std::unique_ptr<BN_MONT_CTX, OpenSslDeleter<BN_MONT_CTX_free>>;
using EcGroupPtr = std::unique_ptr<EC_GROUP, OpenSslDeleter<EC_GROUP_free>>;
using EcPointPtr = std::unique_ptr<EC_POINT, OpenSslDeleter<EC_POINT_free>>;
using EvpMdCtxPtr = std::unique_ptr<EVP_MD_CTX, OpenSslDeleter<EVP_MD_CTX_free>>;
using EvpCipherCtxPtr = std::unique_ptr<EVP_CIPHER_CTX, OpenSslDeleter<EVP_CIPHER_CTX_free>>;
using EvpPkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, OpenSslDeleter<EVP_PKEY_CTX_free>>;
using EvpKdfCtxPtr = std::unique_ptr<EVP_KDF_CTX, OpenSslDeleter<EVP_KDF_CTX_free>>;

// Status with the message `what` followed by the drained OpenSSL error queue.
absl::Status OpenSslError(absl::StatusCode code, std::string_view what);
inline absl::Status OpenSslInternal(std::string_view what) {
  return OpenSslError(absl::StatusCode::kInternal, what);
}

// Process-wide algorithm objects (fetched once; null only if the default provider is missing).
const EVP_MD* Sha256();
const EVP_CIPHER* Aes256Gcm();
EVP_KDF* HkdfKdf();
// The P-256 group (read-only; safe to share between threads).
const EC_GROUP* P256Group();

inline const unsigned char* U8(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace fedanon::crypto::internal
