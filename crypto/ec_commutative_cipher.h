// Commutative encryption on P-256 for private ID matching (mohammed2011 §5 style):
//   E_k(id) = H(id)^k, where H is RFC 9380 hash_to_curve (suite P256_XMD:SHA-256_SSWU_RO_) and
//   ^k is scalar multiplication by a secret k in [1, n-1]. Since (H^a)^b = (H^b)^a, parties can
//   re-encrypt each other's encrypted IDs and compare the doubly encrypted values without
//   revealing IDs that are not in common (under DDH in P-256, with H a random oracle).
//
// Encodings: ciphertexts are SEC1 points, 33-byte compressed (0x02/0x03 || x) or, from the batch
// methods on request, 65-byte uncompressed (0x04 || x || y: 32 more bytes, but the receiver skips
// a 4.5 us decompression); every method that takes a point accepts both. HashToCurve and
// the RFC 9380 building blocks return 65-byte uncompressed points / 32-byte field elements
// (big-endian) so that they can be checked against the RFC's test vectors.
//
// Thread-safety: an EcCommutativeCipher is immutable after creation; every method is const and
// may be called concurrently (each call uses its own BN_CTX). The batch methods spawn
// std::threads internally, each with its own BN_CTX.
//
// Constant-time (see docs/crypto.md for details):
//   - scalar multiplications use EC_POINT_mul on the named P-256 group with a BN_FLG_CONSTTIME
//     scalar, which OpenSSL 3 implements with its constant-time nistz256 code;
//   - the key inverse k^-1 = k^(n-2) uses BN_mod_exp_mont_consttime; key generation uses
//     BN_priv_rand_range;
//   - hash_to_curve runs on crypto/p256_field (fixed 4x64-bit limbs, Montgomery multiplication,
//     fixed addition chains, masked selects): no branch or memory index depends on the id (but
//     for a fallback taken with probability about 2^-254); its multiplications are MULX/ADX
//     assembly where the CPU has it. Encrypt loads the hashed point into OpenSSL
//     (EC_POINT_set_Jprojective_coordinates_GFp: BIN2BN and BIGNUM Montgomery encoding, not
//     documented as constant time);
//   - products are encoded from their Jacobian coordinates with one field inversion per block of
//     128 (batches) on crypto/p256_field;
//   - decoding of received points (a public value) rejects invalid input early.
// Security assumptions: semi-honest parties; the leader only relays ciphertexts; identifiers are
// low-entropy, so ciphertexts must never leave the protocol without a second party's layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto {

// Domain separation tag used by EcCommutativeCipher::Encrypt.
inline constexpr std::string_view kIdHashDst = "FEDANON-V01-CS01-with-P256_XMD:SHA-256_SSWU_RO_";
inline constexpr size_t kCompressedPointSize = 33;
inline constexpr size_t kUncompressedPointSize = 65;

// How the batch methods encode their output points.
enum class PointEncoding { kCompressed, kUncompressed };
inline constexpr size_t kP256ScalarSize = 32;

// RFC 9380 §5.3.1 expand_message_xmd with SHA-256. DSTs longer than 255 bytes are hashed as in
// §5.3.3. kInvalidArgument for an empty DST, len_in_bytes > 65535 or ell > 255.
absl::StatusOr<std::string> ExpandMessageXmdSha256(std::string_view msg, std::string_view dst,
                                                   size_t len_in_bytes);

// RFC 9380 §5.2 hash_to_field(msg, count = 2) for P-256 (L = 48): two 32-byte big-endian field
// elements u[0], u[1].
absl::StatusOr<std::array<std::string, 2>> HashToFieldP256(std::string_view msg,
                                                           std::string_view dst);

// RFC 9380 §6.6.2 simplified SWU map for P-256 (Z = -10) of a 32-byte big-endian field element
// (must be < p): a 65-byte uncompressed point.
absl::StatusOr<std::string> MapToCurveSswuP256(std::string_view u);

// RFC 9380 hash_to_curve, suite P256_XMD:SHA-256_SSWU_RO_: a 65-byte uncompressed point
// 0x04 || P.x || P.y.
absl::StatusOr<std::string> HashToCurve(std::string_view msg, std::string_view dst);

class EcCommutativeCipher {
 public:
  // A fresh secret key, uniform in [1, n-1].
  static absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> CreateWithNewKey();
  // A 32-byte big-endian scalar in [1, n-1]; kInvalidArgument otherwise.
  static absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> CreateFromKey(const SecretBytes& key);
  // The cipher of scalar k * r^-1 mod n, for `key` with scalar k and `blind` with scalar r: it
  // turns a point blinded with r into the same point under k in one multiplication
  // (Unblinding(k, r).ReEncrypt(r.Encrypt(id)) == k.Encrypt(id)). An ID list's owner blinds its
  // list with r before it goes round the ring and applies this last, so that no other party ever
  // holds the list under every party's key (docs/crypto.md, "ID matching").
  static absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> Unblinding(
      const EcCommutativeCipher& key, const EcCommutativeCipher& blind);

  ~EcCommutativeCipher();
  EcCommutativeCipher(const EcCommutativeCipher&) = delete;
  EcCommutativeCipher& operator=(const EcCommutativeCipher&) = delete;

  // The 32-byte big-endian secret scalar (to persist the key for a job).
  SecretBytes GetPrivateKeyBytes() const;

  // HashToCurve(id, kIdHashDst) * k, as a 33-byte compressed point.
  absl::StatusOr<std::string> Encrypt(std::string_view id) const;
  // point * k, compressed. kInvalidArgument unless `point` is a valid 33-byte compressed or
  // 65-byte uncompressed P-256 point (validated once, here) that is not the point at infinity.
  absl::StatusOr<std::string> ReEncrypt(std::string_view point) const;
  // point * k^-1 (undoes this key's layer). Same input rules as ReEncrypt.
  absl::StatusOr<std::string> Decrypt(std::string_view point) const;

  // Encrypt/ReEncrypt of every element, encoded as `encoding`, on `threads` std::threads (<= 0:
  // one per hardware thread) that take pieces of 1024 items in turn (a slow thread on a loaded
  // machine holds back one piece, not a fixed share). Output order matches input order; the
  // first error (lowest failing index) is returned.
  absl::StatusOr<std::vector<std::string>> EncryptBatch(
      absl::Span<const std::string> ids, int threads,
      PointEncoding encoding = PointEncoding::kCompressed) const;
  absl::StatusOr<std::vector<std::string>> ReEncryptBatch(
      absl::Span<const std::string> points, int threads,
      PointEncoding encoding = PointEncoding::kCompressed) const;

 private:
  struct Impl;
  explicit EcCommutativeCipher(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fedanon::crypto
