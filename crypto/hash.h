// SHA-256 (OpenSSL EVP), for digests that parties and the leader compare (job digests).
#pragma once

#include <string>
#include <string_view>

namespace fedanon::crypto {

// The 32-byte SHA-256 digest of `data`.
std::string Sha256(std::string_view data);
// Lower-case hex of `bytes`.
std::string ToHex(std::string_view bytes);

}  // namespace fedanon::crypto
