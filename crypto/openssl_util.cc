#include "crypto/openssl_util.h"

#include <openssl/err.h>
#include <openssl/obj_mac.h>

#include "absl/strings/str_cat.h"

namespace fedanon::crypto::internal {

absl::Status OpenSslError(absl::StatusCode code, std::string_view what) {
  std::string msg(what);
  unsigned long err;  // NOLINT(runtime/int): OpenSSL's type
  bool first = true;
  while ((err = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof(buf));
    absl::StrAppend(&msg, first ? " (" : "; ", buf);
    first = false;
  }
  if (!first) msg += ")";
  return absl::Status(code, msg);
}

const EVP_MD* Sha256() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

const EVP_CIPHER* Aes256Gcm() {
  static const EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return cipher;
}

EVP_KDF* HkdfKdf() {
  static EVP_KDF* const kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  return kdf;
}

const EC_GROUP* P256Group() {
  static const EC_GROUP* const group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  return group;
}

}  // namespace fedanon::crypto::internal
