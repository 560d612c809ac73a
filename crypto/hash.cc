#include "crypto/hash.h"

#include <openssl/evp.h>

namespace fedanon::crypto {

std::string Sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest with SHA-256 cannot fail for in-memory input short of allocation failure.
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 15]);
  }
  return hex;
}

}  // namespace fedanon::crypto
