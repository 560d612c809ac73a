// Sealed box: authenticated public-key encryption of party-to-party messages that travel through
// the leader, an untrusted relay.
//
// Construction (ECIES-like, one-shot, no sender authentication):
//   (e, E) = fresh ephemeral P-256 key pair
//   Z      = ECDH(e, R)                              (32-byte x coordinate; R = recipient key)
//   key    = HKDF-SHA256(IKM = Z, salt = E || R, info = "fedanon sealed box v1", L = 32)
//   nonce  = 12 random bytes
//   ct|tag = AES-256-GCM(key, nonce, AAD = EncodeSealContext(context), plaintext)
// Wire format (all fixed offsets):
//   version (1 byte, 0x01) || E (65 bytes, uncompressed SEC1 point 0x04||x||y) ||
//   nonce (12 bytes) || ciphertext (len(plaintext) bytes) || tag (16 bytes)
// so a sealed box is exactly len(plaintext) + 94 bytes.
//
// Error contract of Open (the caller must not branch on anything finer):
//   kInvalidArgument  - malformed input: too short, unknown version, ephemeral key not a valid
//                       uncompressed P-256 point (not on the curve, bad prefix, coordinates >= p).
//   kPermissionDenied - authentication failed: wrong recipient key, any modified byte, or a
//                       different SealContext (other job, round, sender, receiver or purpose, i.e.
//                       a replay into another round or a delivery to the wrong party). All these
//                       cases give the same message; no partial plaintext is ever returned.
//
// Thread-safety: SealKeyPair and SealPublicKey are immutable after creation and may be shared
// between threads; Seal and Open are reentrant.
//
// Security assumptions: parties are semi-honest and know each other's long-term public keys
// through an authentic channel (the job spec); the leader may read, drop, reorder, replay or
// modify messages, which gives it nothing but failed Opens (confidentiality + integrity +
// binding to the context). There is no sender authentication beyond the context field: anyone
// who knows R can seal "as" any sender. A replay of the same box with the same context is
// accepted (callers deduplicate per (job, round, sender, purpose)). P-256 ECDH and AES-GCM are
// OpenSSL's constant-time implementations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crypto/secret_bytes.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY, kept out of this header.

namespace fedanon::crypto {

// What a sealed message is for; bound into the AEAD as associated data.
struct SealContext {
  std::string job_id;
  uint64_t round = 0;
  std::string sender;
  std::string receiver;
  std::string purpose;
};

// Canonical, injective encoding: "fedanon-seal-ctx-v1" || u32be(len(job_id)) || job_id ||
// u64be(round) || u32be(len(sender)) || sender || u32be(len(receiver)) || receiver ||
// u32be(len(purpose)) || purpose.
std::string EncodeSealContext(const SealContext& context);

inline constexpr uint8_t kSealedBoxVersion = 0x01;
inline constexpr size_t kSealPointSize = 65;  // uncompressed P-256 point
inline constexpr size_t kSealNonceSize = 12;
inline constexpr size_t kSealTagSize = 16;
inline constexpr size_t kSealOverhead = 1 + kSealPointSize + kSealNonceSize + kSealTagSize;

namespace internal {
struct EvpPkeyDeleter {
  void operator()(evp_pkey_st* pkey) const;
};
using EvpPkeyPtr = std::unique_ptr<evp_pkey_st, EvpPkeyDeleter>;
}  // namespace internal

// A P-256 public key of a party.
class SealPublicKey {
 public:
  // DER SubjectPublicKeyInfo (id-ecPublicKey, namedCurve prime256v1).
  static absl::StatusOr<std::unique_ptr<SealPublicKey>> FromSpkiDer(std::string_view der);
  // 65-byte uncompressed SEC1 point 0x04 || x || y.
  static absl::StatusOr<std::unique_ptr<SealPublicKey>> FromUncompressedPoint(
      std::string_view point);

  SealPublicKey(const SealPublicKey&) = delete;
  SealPublicKey& operator=(const SealPublicKey&) = delete;

  absl::StatusOr<std::string> SpkiDer() const;
  const std::string& UncompressedPoint() const { return point_; }

 private:
  friend class SealKeyPair;
  friend absl::StatusOr<std::string> Seal(const SealPublicKey&, const SealContext&,
                                          std::string_view);
  SealPublicKey(internal::EvpPkeyPtr pkey, std::string point);

  internal::EvpPkeyPtr pkey_;
  std::string point_;  // cached uncompressed encoding
};

// A party's long-term P-256 key pair.
class SealKeyPair {
 public:
  static absl::StatusOr<std::unique_ptr<SealKeyPair>> Generate();
  // DER PKCS#8 PrivateKeyInfo holding a P-256 key (the public key is recomputed if absent).
  static absl::StatusOr<std::unique_ptr<SealKeyPair>> FromPrivateKeyPkcs8Der(
      const SecretBytes& der);

  SealKeyPair(const SealKeyPair&) = delete;
  SealKeyPair& operator=(const SealKeyPair&) = delete;

  // DER PKCS#8 PrivateKeyInfo (unencrypted: protect it at rest).
  absl::StatusOr<SecretBytes> PrivateKeyPkcs8Der() const;
  const SealPublicKey& public_key() const { return *public_key_; }

 private:
  friend absl::StatusOr<std::string> Open(const SealKeyPair&, const SealContext&, std::string_view);
  SealKeyPair(internal::EvpPkeyPtr pkey, std::unique_ptr<SealPublicKey> public_key);

  internal::EvpPkeyPtr pkey_;
  std::unique_ptr<SealPublicKey> public_key_;
};

// Encrypts `plaintext` to `recipient`, bound to `context`. Output: see the wire format above.
absl::StatusOr<std::string> Seal(const SealPublicKey& recipient, const SealContext& context,
                                 std::string_view plaintext);

// Decrypts a sealed box addressed to `recipient` under `expected_context`; see the error
// contract above.
absl::StatusOr<std::string> Open(const SealKeyPair& recipient, const SealContext& expected_context,
                                 std::string_view sealed);

}  // namespace fedanon::crypto
