#include "crypto/fixed_key_hash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <climits>
#include <string>

#include "crypto/hash.h"
#include "crypto/openssl_util.h"

namespace fedanon::crypto::mpc {

using internal::EvpCipherCtxPtr;
using internal::OpenSslInternal;

namespace {

// EVP_EncryptUpdate takes an int length: blocks per call.
constexpr size_t kBlocksPerCall = size_t{1} << 20;

absl::Status Ecb(evp_cipher_ctx_st* ctx, const Block* in, Block* out, size_t n) {
  for (size_t done = 0; done < n;) {
    const size_t now = std::min(kBlocksPerCall, n - done);
    int len = 0;
    if (EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(out + done), &len,
                          reinterpret_cast<const unsigned char*>(in + done),
                          static_cast<int>(now * kBlockBytes)) != 1 ||
        static_cast<size_t>(len) != now * kBlockBytes) {
      return OpenSslInternal("fixed-key AES");
    }
    done += now;
  }
  return absl::OkStatus();
}

}  // namespace

Block FixedAesKey() {
  static const Block key = [] {
    const std::string digest = Sha256("fedanon fixed-key AES for garbling and OT extension v1");
    return LoadBlock(digest.data());
  }();
  return key;
}

void FixedKeyHash::Free::operator()(evp_cipher_ctx_st* ctx) const { EVP_CIPHER_CTX_free(ctx); }

FixedKeyHash::FixedKeyHash(std::unique_ptr<evp_cipher_ctx_st, Free> ctx) : ctx_(std::move(ctx)) {}
FixedKeyHash::~FixedKeyHash() = default;

absl::StatusOr<std::unique_ptr<FixedKeyHash>> FixedKeyHash::Create() {
  std::unique_ptr<evp_cipher_ctx_st, Free> ctx(EVP_CIPHER_CTX_new());
  const Block key = FixedAesKey();
  if (ctx == nullptr ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_128_ecb(), nullptr,
                         reinterpret_cast<const unsigned char*>(&key), nullptr) != 1 ||
      EVP_CIPHER_CTX_set_padding(ctx.get(), 0) != 1) {
    return OpenSslInternal("fixed-key AES set-up");
  }
  return std::unique_ptr<FixedKeyHash>(new FixedKeyHash(std::move(ctx)));
}

absl::Status FixedKeyHash::Permute(const Block* x, Block* out, size_t n) {
  return Ecb(ctx_.get(), x, out, n);
}

absl::Status FixedKeyHash::Hash(const Block* x, const Block* tweaks, Block* out, size_t n) {
  if (buffer_size_ < n) {
    buffer_ = std::make_unique<Block[]>(n);
    buffer_size_ = n;
  }
  Block* pi_x = buffer_.get();
  if (absl::Status s = Ecb(ctx_.get(), x, pi_x, n); !s.ok()) return s;
  for (size_t k = 0; k < n; ++k) out[k] = pi_x[k] ^ tweaks[k];
  if (absl::Status s = Ecb(ctx_.get(), out, out, n); !s.ok()) return s;
  for (size_t k = 0; k < n; ++k) out[k] ^= pi_x[k];
  return absl::OkStatus();
}

absl::Status PrgExpand(Block seed, uint8_t* out, size_t bytes) {
  EvpCipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  const unsigned char iv[16] = {};
  if (ctx == nullptr ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_128_ctr(), nullptr,
                         reinterpret_cast<const unsigned char*>(&seed), iv) != 1) {
    return OpenSslInternal("PRG set-up");
  }
  std::fill(out, out + bytes, uint8_t{0});
  constexpr size_t kBytesPerCall = size_t{1} << 28;
  for (size_t done = 0; done < bytes;) {
    const size_t now = std::min(kBytesPerCall, bytes - done);
    int len = 0;
    if (EVP_EncryptUpdate(ctx.get(), out + done, &len, out + done, static_cast<int>(now)) != 1 ||
        static_cast<size_t>(len) != now) {
      return OpenSslInternal("PRG");
    }
    done += now;
  }
  return absl::OkStatus();
}

}  // namespace fedanon::crypto::mpc
