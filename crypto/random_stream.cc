#include "crypto/random_stream.h"

#include <openssl/crypto.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "crypto/block.h"
#include "crypto/fixed_key_hash.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto::mpc {

namespace {
constexpr std::string_view kDomain = "fedanon comparison randomness v1";
}  // namespace

RandomStream::~RandomStream() { OPENSSL_cleanse(prefix_.data(), prefix_.size()); }

RandomStream::RandomStream(RandomStream&& other) noexcept
    : prefix_(std::move(other.prefix_)), draws_(other.draws_) {
  OPENSSL_cleanse(other.prefix_.data(), other.prefix_.size());
  other.prefix_.clear();
}

RandomStream& RandomStream::operator=(RandomStream&& other) noexcept {
  if (this != &other) {
    OPENSSL_cleanse(prefix_.data(), prefix_.size());
    prefix_ = std::move(other.prefix_);
    draws_ = other.draws_;
    OPENSSL_cleanse(other.prefix_.data(), other.prefix_.size());
    other.prefix_.clear();
  }
  return *this;
}

absl::StatusOr<RandomStream> RandomStream::FromSeed(std::string_view seed, std::string_view label) {
  if (seed.size() != kRandomSeedBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a comparison's random seed is ",
                                                   kRandomSeedBytes, " bytes, not ", seed.size()));
  }
  RandomStream s;
  // The label's length first, so that (label, seed) pairs never collide.
  const std::string label_length = absl::StrCat(label.size(), ":");
  s.prefix_.reserve(kDomain.size() + label_length.size() + label.size() + seed.size());
  s.prefix_.append(kDomain).append(label_length).append(label).append(seed);
  return s;
}

absl::StatusOr<RandomStream> RandomStream::Fresh(std::string_view label) {
  std::string seed(kRandomSeedBytes, '\0');
  if (absl::Status st =
          FillRandom(absl::MakeSpan(reinterpret_cast<uint8_t*>(seed.data()), seed.size()));
      !st.ok()) {
    return st;
  }
  absl::StatusOr<RandomStream> s = FromSeed(seed, label);
  OPENSSL_cleanse(seed.data(), seed.size());
  return s;
}

absl::Status RandomStream::Fill(uint8_t* out, size_t n) {
  if (prefix_.empty()) return absl::FailedPreconditionError("a moved-from random stream");
  std::string input = prefix_;
  for (int b = 0; b < 8; ++b) input.push_back(static_cast<char>((draws_ >> (8 * b)) & 0xff));
  ++draws_;
  std::string digest = Sha256(input);
  OPENSSL_cleanse(input.data(), input.size());
  Block key;
  std::memcpy(&key, digest.data(), kBlockBytes);
  OPENSSL_cleanse(digest.data(), digest.size());
  absl::Status st = n == 0 ? absl::OkStatus() : PrgExpand(key, out, n);
  OPENSSL_cleanse(&key, sizeof(key));
  return st;
}

}  // namespace fedanon::crypto::mpc
