// Sealed box: public-key encryption of party-to-party messages that travel through the leader,
// an untrusted relay. Two variants, told apart by the version byte:
//
//   * SealFrom/OpenFrom - SENDER-AUTHENTICATED (version 0x02). Every hop-to-hop payload (secure-sum
//     hops, union-list hops, vertical payloads, ID lists) uses this one: OpenFrom takes the
//     expected sender's certified public key, and a box sealed by anyone else (the leader
//     included, even though it knows the recipient's public key) fails with kPermissionDenied.
//   * Seal/Open - ANONYMOUS (version 0x01). Only for what must stay unattributable to its origin:
//     the rows of the secure set union (mohammed2010 §5.4, common/wire/released_union.h
//     UnionRowContext). Anyone who knows R can seal such a box.
//
// Construction (ECIES-like, one-shot; R = recipient key, S = sender's static key with private s):
//   (e, E) = fresh ephemeral P-256 key pair
//   anonymous:      IKM = ECDH(e, R)                       salt = E || R
//                   info = "fedanon sealed box v1"
//   authenticated:  IKM = ECDH(e, R) || ECDH(s, R)         salt = E || R || S
//                   info = "fedanon sealed box v2 sender-authenticated"
//   (each ECDH output is the 32-byte x coordinate; points are 65-byte uncompressed SEC1)
//   key    = HKDF-SHA256(IKM, salt, info, L = 32)
//   nonce  = 12 random bytes
//   ct|tag = AES-256-GCM(key, nonce, AAD = EncodeSealContext(context), plaintext)
// The opener computes ECDH(r, E) and, for version 0x02, ECDH(r, S) with the S it expects, so a
// different sender yields a different key and a failed tag check. (Static-static ECDH: whoever
// holds r could also forge boxes "from" S to r itself - harmless here, r is the only reader.)
// Wire format (all fixed offsets, same for both variants):
//   version (1 byte: 0x01 anonymous, 0x02 sender-authenticated) ||
//   E (65 bytes, uncompressed SEC1 point 0x04||x||y) ||
//   nonce (12 bytes) || ciphertext (len(plaintext) bytes) || tag (16 bytes)
// so a sealed box is exactly len(plaintext) + 94 bytes.
//
// Error contract of Open/OpenFrom (the caller must not branch on anything finer):
//   kInvalidArgument  - malformed input: too short, unknown version, ephemeral key not a valid
//                       uncompressed P-256 point (not on the curve, bad prefix, coordinates >= p),
//                       or a sender-authenticated box given to the anonymous Open.
//   kPermissionDenied - authentication failed: wrong recipient key, wrong sender (OpenFrom), an
//                       anonymous box given to OpenFrom, any modified byte, or a different
//                       SealContext (other job, run, round, sender, receiver or purpose, i.e. a
//                       replay into another round or a delivery to the wrong party). No partial
//                       plaintext is ever returned.
//
// Thread-safety: SealKeyPair and SealPublicKey are immutable after creation and may be shared
// between threads; Seal, Open, SealFrom and OpenFrom are reentrant.
//
// Security assumptions: participants know each other's long-term public keys through an
// authentic channel (CA-signed sealing certificates, checked at Prepare); the leader may read,
// drop, reorder, replay or modify messages, which gives it nothing but failed Opens
// (confidentiality + integrity + binding to the context + sender authentication for
// SealFrom). A replay of the same box with the same context is accepted (callers answer each
// request once, see party/reply_cache.h). P-256 ECDH and AES-GCM are OpenSSL's constant-time
// implementations.
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
  std::string run_id;  // the admin's run of the job: a box of an earlier run never opens in another
  uint64_t round = 0;
  std::string sender;
  std::string receiver;
  std::string purpose;
};

// Canonical, injective encoding: "fedanon-seal-ctx-v2" || u32be(len(job_id)) || job_id ||
// u32be(len(run_id)) || run_id || u64be(round) || u32be(len(sender)) || sender ||
// u32be(len(receiver)) || receiver || u32be(len(purpose)) || purpose.
std::string EncodeSealContext(const SealContext& context);

inline constexpr uint8_t kSealedBoxVersion = 0x01;               // anonymous
inline constexpr uint8_t kSealedBoxAuthenticatedVersion = 0x02;  // sender-authenticated
inline constexpr size_t kSealPointSize = 65;                     // uncompressed P-256 point
inline constexpr size_t kSealNonceSize = 12;
inline constexpr size_t kSealTagSize = 16;
inline constexpr size_t kSealOverhead = 1 + kSealPointSize + kSealNonceSize + kSealTagSize;

class SealKeyPair;
class SealPublicKey;

namespace internal {
struct EvpPkeyDeleter {
  void operator()(evp_pkey_st* pkey) const;
};
using EvpPkeyPtr = std::unique_ptr<evp_pkey_st, EvpPkeyDeleter>;
// The two variants share one implementation; `sender` null means anonymous.
absl::StatusOr<std::string> SealBox(const SealKeyPair* sender, const SealPublicKey& recipient,
                                    const SealContext& context, std::string_view plaintext);
absl::StatusOr<std::string> OpenBox(const SealKeyPair& recipient, const SealPublicKey* sender,
                                    const SealContext& expected_context, std::string_view sealed);
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
  friend absl::StatusOr<std::string> internal::SealBox(const SealKeyPair*, const SealPublicKey&,
                                                       const SealContext&, std::string_view);
  friend absl::StatusOr<std::string> internal::OpenBox(const SealKeyPair&, const SealPublicKey*,
                                                       const SealContext&, std::string_view);
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
  friend absl::StatusOr<std::string> internal::SealBox(const SealKeyPair*, const SealPublicKey&,
                                                       const SealContext&, std::string_view);
  friend absl::StatusOr<std::string> internal::OpenBox(const SealKeyPair&, const SealPublicKey*,
                                                       const SealContext&, std::string_view);
  SealKeyPair(internal::EvpPkeyPtr pkey, std::unique_ptr<SealPublicKey> public_key);

  internal::EvpPkeyPtr pkey_;
  std::unique_ptr<SealPublicKey> public_key_;
};

// ANONYMOUS: encrypts `plaintext` to `recipient`, bound to `context`; the box does not say who
// sealed it. Only for the secure union's rows. Output: see the wire format above.
absl::StatusOr<std::string> Seal(const SealPublicKey& recipient, const SealContext& context,
                                 std::string_view plaintext);

// ANONYMOUS: decrypts a version-0x01 box addressed to `recipient` under `expected_context`; see
// the error contract above.
absl::StatusOr<std::string> Open(const SealKeyPair& recipient, const SealContext& expected_context,
                                 std::string_view sealed);

// SENDER-AUTHENTICATED: encrypts `plaintext` from `sender` to `recipient`, bound to `context`.
absl::StatusOr<std::string> SealFrom(const SealKeyPair& sender, const SealPublicKey& recipient,
                                     const SealContext& context, std::string_view plaintext);

// SENDER-AUTHENTICATED: decrypts a version-0x02 box sealed by the holder of `sender`'s private
// key; kPermissionDenied for any other sender (see the error contract above).
absl::StatusOr<std::string> OpenFrom(const SealKeyPair& recipient, const SealPublicKey& sender,
                                     const SealContext& expected_context, std::string_view sealed);

}  // namespace fedanon::crypto
