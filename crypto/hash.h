// SHA-256 (OpenSSL EVP), for digests that parties and the leader compare (job digests) and for
// fingerprints of what a party read (its table), in one piece or streamed.
#pragma once

#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header.

namespace fedanon::crypto {

// The 32-byte SHA-256 digest of `data`.
std::string Sha256(std::string_view data);

// SHA-256 over data given in pieces: Finish() is Sha256 of their concatenation. Not thread-safe.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(std::string_view piece);
  // The 32-byte digest; the stream is spent afterwards.
  std::string Finish();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};
// Lower-case hex of `bytes`.
std::string ToHex(std::string_view bytes);

}  // namespace fedanon::crypto
