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

void Sha256Stream::Free::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  // Allocation and SHA-256 initialisation fail only when memory is exhausted.
  if (ctx_ != nullptr) EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
}
Sha256Stream::~Sha256Stream() = default;

void Sha256Stream::Update(std::string_view piece) {
  if (ctx_ != nullptr) EVP_DigestUpdate(ctx_.get(), piece.data(), piece.size());
}

std::string Sha256Stream::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (ctx_ == nullptr || EVP_DigestFinal_ex(ctx_.get(), out, &len) != 1) return std::string();
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
