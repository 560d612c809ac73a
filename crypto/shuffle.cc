#include "crypto/shuffle.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <functional>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace fedanon::crypto {
namespace {

// Fills a buffer with random bytes; false when the generator failed.
using ByteSource = std::function<bool(unsigned char*, size_t)>;

// Uniform in [0, bound) by rejection sampling on 64-bit draws (drawn in batches).
class UniformDraws {
 public:
  explicit UniformDraws(ByteSource source) : source_(std::move(source)) {}
  absl::StatusOr<uint64_t> Below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    while (true) {
      if (pos_ == buf_.size()) {
        if (!source_(reinterpret_cast<unsigned char*>(buf_.data()),
                     buf_.size() * sizeof(uint64_t))) {
          return absl::InternalError("the random generator failed");
        }
        pos_ = 0;
      }
      const uint64_t x = buf_[pos_++];
      if (x < limit) return x % bound;
    }
  }

 private:
  ByteSource source_;
  std::vector<uint64_t> buf_ = std::vector<uint64_t>(512);
  size_t pos_ = 512;
};

absl::StatusOr<std::vector<size_t>> Shuffle(size_t n, UniformDraws* draws) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  for (size_t i = n; i > 1; --i) {
    auto j = draws->Below(i);
    if (!j.ok()) return j.status();
    std::swap(p[i - 1], p[*j]);
  }
  return p;
}

}  // namespace

absl::StatusOr<std::vector<size_t>> SecurePermutation(size_t n) {
  UniformDraws draws(
      [](unsigned char* out, size_t len) { return RAND_bytes(out, static_cast<int>(len)) == 1; });
  return Shuffle(n, &draws);
}

absl::StatusOr<std::vector<size_t>> SeededPermutation(std::string_view seed, size_t n) {
  if (seed.size() != kPermutationSeedBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a permutation seed has ", kPermutationSeedBytes,
                                                   " bytes, not ", seed.size()));
  }
  // The AES-256-CTR keystream under the seed (zero IV: each seed is used for one permutation).
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(),
                                                                      &EVP_CIPHER_CTX_free);
  const unsigned char iv[16] = {};
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_ctr(), nullptr,
                                 reinterpret_cast<const unsigned char*>(seed.data()), iv) != 1) {
    return absl::InternalError("cannot set up the seeded permutation's keystream");
  }
  std::vector<unsigned char> zeros;
  UniformDraws draws([&ctx, &zeros](unsigned char* out, size_t len) {
    zeros.assign(len, 0);
    int written = 0;
    return EVP_EncryptUpdate(ctx.get(), out, &written, zeros.data(), static_cast<int>(len)) == 1 &&
           static_cast<size_t>(written) == len;
  });
  return Shuffle(n, &draws);
}

}  // namespace fedanon::crypto
