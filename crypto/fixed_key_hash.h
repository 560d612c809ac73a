// The hash and the pseudo-random generator of the garbled circuits and the OT extension
// (crypto/half_gates.h, crypto/ot_extension.h). Internal to crypto/.
//
// FixedKeyHash is the tweakable circular correlation-robust hash of Guo, Katz, Wang and Yu (IEEE
// S&P 2020, §7.3), built from AES-128 under a fixed public key (a random permutation pi):
//   H(x, i) = pi(pi(x) XOR i) XOR pi(x)
// Two AES blocks per hash, computed in batches through OpenSSL's EVP (AES-NI where the CPU has
// it). Callers give every hash of a session its own tweak (gate number and half, or OT index, with
// the domain in the tweak's high word), as the construction requires.
//
// PrgExpand is AES-128-CTR keyed by a 16-byte seed with an all-zero counter block: the rows of
// the OT extension matrix, and the coefficients of its consistency check.
//
// Thread-safety: a FixedKeyHash holds an OpenSSL cipher context and a buffer; one per thread.
// PrgExpand is reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crypto/block.h"

struct evp_cipher_ctx_st;  // OpenSSL's EVP_CIPHER_CTX, kept out of this header.

namespace fedanon::crypto::mpc {

class FixedKeyHash {
 public:
  static absl::StatusOr<std::unique_ptr<FixedKeyHash>> Create();
  ~FixedKeyHash();
  FixedKeyHash(const FixedKeyHash&) = delete;
  FixedKeyHash& operator=(const FixedKeyHash&) = delete;

  // out[k] = H(x[k], tweaks[k]) for k < n. `out` may alias `x`. kInternal if AES fails.
  absl::Status Hash(const Block* x, const Block* tweaks, Block* out, size_t n);
  // out[k] = pi(x[k]): the permutation alone (for tests against a plain AES).
  absl::Status Permute(const Block* x, Block* out, size_t n);

 private:
  struct Free {
    void operator()(evp_cipher_ctx_st* ctx) const;
  };
  explicit FixedKeyHash(std::unique_ptr<evp_cipher_ctx_st, Free> ctx);
  std::unique_ptr<evp_cipher_ctx_st, Free> ctx_;
  std::unique_ptr<Block[]> buffer_;
  size_t buffer_size_ = 0;
};

// The 16 bytes of the fixed AES key (public: the first half of SHA-256 of a fixed label).
Block FixedAesKey();

// `bytes` bytes of AES-128-CTR keystream under key `seed`, counter block zero. kInternal if AES
// fails.
absl::Status PrgExpand(Block seed, uint8_t* out, size_t bytes);

}  // namespace fedanon::crypto::mpc
