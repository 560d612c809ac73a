#include "crypto/secure_sum_masks.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto {
namespace {

absl::Status CheckSizes(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (acc.size() != v.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("vector size mismatch: ", acc.size(), " vs ", v.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> MaskVector(size_t n) { return RandomUint64Vector(n); }

absl::StatusOr<std::vector<uint64_t>> MaskWordsFromSeed(std::string_view seed, uint64_t offset,
                                                        size_t count) {
  if (seed.size() != kMaskSeedBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a mask seed is ", kMaskSeedBytes, " bytes, not ", seed.size()));
  }
  if (offset > (UINT64_MAX >> 3) || count > (UINT64_MAX >> 3) - offset) {
    return absl::InvalidArgumentError("mask words past the keystream's range");
  }
  // Word i sits at keystream byte 8i: start at the block holding word `offset` (16 bytes, two
  // words a block) and skip the first word when `offset` is odd.
  const uint64_t first_block = offset / 2;
  const size_t skip = static_cast<size_t>(offset % 2) * 8;
  unsigned char iv[16] = {0};
  for (int i = 0; i < 8; ++i) iv[15 - i] = static_cast<unsigned char>(first_block >> (8 * i));
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(),
                                                                      &EVP_CIPHER_CTX_free);
  if (ctx == nullptr ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_ctr(), nullptr,
                         reinterpret_cast<const unsigned char*>(seed.data()), iv) != 1) {
    return absl::InternalError("AES-256-CTR cannot be initialised");
  }
  // The keystream in slices of 1 MiB (EVP's lengths are ints), read as little-endian words.
  constexpr size_t kSliceBytes = size_t{1} << 20;
  std::vector<unsigned char> slice(kSliceBytes);
  std::vector<uint64_t> words(count);
  size_t to_skip = skip;
  size_t word = 0, byte_in_word = 0;
  uint64_t current = 0;
  size_t remaining = skip + count * 8;
  while (remaining > 0) {
    const size_t n = std::min(remaining, kSliceBytes);
    std::memset(slice.data(), 0, n);
    int produced = 0;
    if (EVP_EncryptUpdate(ctx.get(), slice.data(), &produced, slice.data(), static_cast<int>(n)) !=
            1 ||
        static_cast<size_t>(produced) != n) {
      return absl::InternalError("AES-256-CTR keystream failed");
    }
    for (size_t i = 0; i < n; ++i) {
      if (to_skip > 0) {
        --to_skip;
        continue;
      }
      current |= static_cast<uint64_t>(slice[i]) << (8 * byte_in_word);
      if (++byte_in_word == 8) {
        words[word++] = current;
        current = 0;
        byte_in_word = 0;
      }
    }
    remaining -= n;
  }
  return words;
}

absl::Status AddInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (absl::Status st = CheckSizes(acc, v); !st.ok()) return st;
  // Unsigned overflow is defined (wraps mod 2^64).
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
  return absl::OkStatus();
}

absl::Status SubtractInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (absl::Status st = CheckSizes(acc, v); !st.ok()) return st;
  for (size_t i = 0; i < acc.size(); ++i) acc[i] -= v[i];
  return absl::OkStatus();
}

}  // namespace fedanon::crypto
