#include "crypto/sealed_box.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/x509.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "crypto/openssl_util.h"

namespace fedanon::crypto {
namespace internal {
void EvpPkeyDeleter::operator()(evp_pkey_st* pkey) const { EVP_PKEY_free(pkey); }
}  // namespace internal

namespace {

using internal::BnCtxPtr;
using internal::EcPointPtr;
using internal::EvpCipherCtxPtr;
using internal::EvpKdfCtxPtr;
using internal::EvpPkeyCtxPtr;
using internal::EvpPkeyPtr;
using internal::OpenSslError;
using internal::OpenSslInternal;
using internal::U8;

constexpr std::string_view kContextTag = "fedanon-seal-ctx-v2";
constexpr std::string_view kHkdfInfo = "fedanon sealed box v1";
constexpr std::string_view kHkdfInfoAuthenticated = "fedanon sealed box v2 sender-authenticated";
constexpr size_t kKeySize = 32;
constexpr size_t kPointOffset = 1;
constexpr size_t kNonceOffset = kPointOffset + kSealPointSize;
constexpr size_t kCiphertextOffset = kNonceOffset + kSealNonceSize;
// EVP_*Update take an int length: process huge inputs in 1 GiB pieces (same context, one pass).
constexpr size_t kMaxUpdate = size_t{1} << 30;

void AppendU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
void AppendU64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
void AppendField(std::string* out, std::string_view s) {
  AppendU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Decodes and validates a 65-byte uncompressed P-256 point: prefix 0x04, coordinates < p, on the
// curve. (The point at infinity has no 65-byte encoding; P-256 has cofactor 1, so every on-curve
// point other than infinity is in the prime-order group.)
absl::Status ValidateUncompressedPoint(std::string_view point) {
  if (point.size() != kSealPointSize || static_cast<uint8_t>(point[0]) != 0x04) {
    return absl::InvalidArgumentError("not a 65-byte uncompressed P-256 point");
  }
  const EC_GROUP* group = internal::P256Group();
  if (group == nullptr) return OpenSslInternal("P-256 group unavailable");
  EcPointPtr p(EC_POINT_new(group));
  if (p == nullptr) return OpenSslInternal("EC_POINT_new");
  if (EC_POINT_oct2point(group, p.get(), U8(point), point.size(), nullptr) != 1 ||
      EC_POINT_is_on_curve(group, p.get(), nullptr) != 1 ||
      EC_POINT_is_at_infinity(group, p.get())) {
    ERR_clear_error();
    return absl::InvalidArgumentError("invalid P-256 point (not on the curve)");
  }
  return absl::OkStatus();
}

absl::Status CheckIsP256(EVP_PKEY* pkey) {
  if (EVP_PKEY_is_a(pkey, "EC") != 1) return absl::InvalidArgumentError("not an EC key");
  char name[64];
  size_t len = 0;
  if (EVP_PKEY_get_group_name(pkey, name, sizeof(name), &len) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("EC key without a named curve");
  }
  const std::string_view n(name, len);
  if (n != "prime256v1" && n != "P-256") {
    return absl::InvalidArgumentError(
        absl::StrCat("EC key on curve ", std::string(n), ", want P-256"));
  }
  return absl::OkStatus();
}

// The key's public point, re-encoded as 65-byte uncompressed SEC1.
absl::StatusOr<std::string> UncompressedPointOf(EVP_PKEY* pkey) {
  unsigned char buf[kSealPointSize + 8];
  size_t len = 0;
  if (EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, buf, sizeof(buf), &len) != 1) {
    return OpenSslInternal("reading the EC public key");
  }
  const EC_GROUP* group = internal::P256Group();
  if (group == nullptr) return OpenSslInternal("P-256 group unavailable");
  EcPointPtr p(EC_POINT_new(group));
  if (p == nullptr || EC_POINT_oct2point(group, p.get(), buf, len, nullptr) != 1 ||
      EC_POINT_is_at_infinity(group, p.get())) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "invalid EC public key");
  }
  std::string out(kSealPointSize, '\0');
  if (EC_POINT_point2oct(group, p.get(), POINT_CONVERSION_UNCOMPRESSED,
                         reinterpret_cast<unsigned char*>(out.data()), out.size(),
                         nullptr) != kSealPointSize) {
    return OpenSslInternal("EC_POINT_point2oct");
  }
  return out;
}

// A public-only EVP_PKEY from an already validated uncompressed point.
absl::StatusOr<EvpPkeyPtr> PkeyFromPoint(std::string_view point) {
  char group_name[] = "prime256v1";
  std::string pub(point);  // OSSL_PARAM wants non-const pointers
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group_name, 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub.data(), pub.size()),
      OSSL_PARAM_construct_end()};
  EvpPkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw = nullptr;
  if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params) != 1) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "building the EC public key");
  }
  return EvpPkeyPtr(raw);
}

// ECDH shared secret (x coordinate, 32 bytes). `peer` must already be validated.
absl::StatusOr<SecretBytes> Ecdh(EVP_PKEY* own, EVP_PKEY* peer) {
  EvpPkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, own, nullptr));
  size_t len = 0;
  if (ctx == nullptr || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer_ex(ctx.get(), peer, /*validate_peer=*/1) != 1 ||
      EVP_PKEY_derive(ctx.get(), nullptr, &len) != 1 || len != kKeySize) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "ECDH failed");
  }
  SecretBytes shared(len);
  if (EVP_PKEY_derive(ctx.get(), shared.data(), &len) != 1 || len != kKeySize) {
    return OpenSslInternal("ECDH derive");
  }
  return shared;
}

// HKDF-SHA256(IKM = ikm, salt = salt, info = info), 32 bytes.
absl::StatusOr<SecretBytes> DeriveKey(const SecretBytes& shared, std::string salt,
                                      std::string_view info_text) {
  if (internal::HkdfKdf() == nullptr) return OpenSslInternal("HKDF unavailable");
  EvpKdfCtxPtr kctx(EVP_KDF_CTX_new(internal::HkdfKdf()));
  if (kctx == nullptr) return OpenSslInternal("EVP_KDF_CTX_new");
  std::string info(info_text);
  char digest[] = "SHA256";
  SecretBytes ikm = shared.Clone();
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, ikm.data(), ikm.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt.data(), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_end()};
  SecretBytes key(kKeySize);
  if (EVP_KDF_derive(kctx.get(), key.data(), key.size(), params) != 1) {
    return OpenSslInternal("HKDF derive");
  }
  return key;
}

// The AEAD key of a box. Anonymous (v1): IKM = ECDH(e, R), salt = E || R. Sender-authenticated
// (v2): IKM = ECDH(e, R) || ECDH(s, R), salt = E || R || S. `ephemeral_side` and `static_side`
// are the two ECDH computations as seen by the caller (sealer: (e, R) and (s, R); opener:
// (r, E) and (r, S)); `static_side` is null for v1.
struct KeyInputs {
  EVP_PKEY* own_ephemeral_side = nullptr;   // e (sealer) or r (opener)
  EVP_PKEY* peer_ephemeral_side = nullptr;  // R (sealer) or E (opener)
  EVP_PKEY* own_static_side = nullptr;      // s (sealer) or r (opener); v2 only
  EVP_PKEY* peer_static_side = nullptr;     // R (sealer) or S (opener); v2 only
  std::string_view ephemeral;               // E
  std::string_view recipient;               // R
  std::string_view sender;                  // S; v2 only
};

absl::StatusOr<SecretBytes> BoxKey(const KeyInputs& in) {
  absl::StatusOr<SecretBytes> shared = Ecdh(in.own_ephemeral_side, in.peer_ephemeral_side);
  if (!shared.ok()) return shared.status();
  std::string salt(in.ephemeral);
  salt.append(in.recipient);
  if (in.own_static_side == nullptr) return DeriveKey(*shared, std::move(salt), kHkdfInfo);
  absl::StatusOr<SecretBytes> shared_static = Ecdh(in.own_static_side, in.peer_static_side);
  if (!shared_static.ok()) return shared_static.status();
  SecretBytes both(shared->size() + shared_static->size());
  std::memcpy(both.data(), shared->data(), shared->size());
  std::memcpy(both.data() + shared->size(), shared_static->data(), shared_static->size());
  salt.append(in.sender);
  return DeriveKey(both, std::move(salt), kHkdfInfoAuthenticated);
}

}  // namespace

std::string EncodeSealContext(const SealContext& context) {
  std::string out;
  out.reserve(kContextTag.size() + size_t{5} * 4 + 8 + context.job_id.size() +
              context.run_id.size() + context.sender.size() + context.receiver.size() +
              context.purpose.size());
  out.append(kContextTag);
  AppendField(&out, context.job_id);
  AppendField(&out, context.run_id);
  AppendU64(&out, context.round);
  AppendField(&out, context.sender);
  AppendField(&out, context.receiver);
  AppendField(&out, context.purpose);
  return out;
}

// ---- SealPublicKey --------------------------------------------------------------------------

SealPublicKey::SealPublicKey(EvpPkeyPtr pkey, std::string point)
    : pkey_(std::move(pkey)), point_(std::move(point)) {}

absl::StatusOr<std::unique_ptr<SealPublicKey>> SealPublicKey::FromSpkiDer(std::string_view der) {
  if (der.size() > LONG_MAX) return absl::InvalidArgumentError("SPKI too large");
  const unsigned char* p = U8(der);
  EvpPkeyPtr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));  // NOLINT
  if (pkey == nullptr) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "not a DER SubjectPublicKeyInfo");
  }
  if (p != U8(der) + der.size()) {
    return absl::InvalidArgumentError("trailing bytes after SubjectPublicKeyInfo");
  }
  if (absl::Status st = CheckIsP256(pkey.get()); !st.ok()) return st;
  absl::StatusOr<std::string> point = UncompressedPointOf(pkey.get());
  if (!point.ok()) return point.status();
  if (absl::Status st = ValidateUncompressedPoint(*point); !st.ok()) return st;
  return std::unique_ptr<SealPublicKey>(new SealPublicKey(std::move(pkey), *std::move(point)));
}

absl::StatusOr<std::unique_ptr<SealPublicKey>> SealPublicKey::FromUncompressedPoint(
    std::string_view point) {
  if (absl::Status st = ValidateUncompressedPoint(point); !st.ok()) return st;
  absl::StatusOr<EvpPkeyPtr> pkey = PkeyFromPoint(point);
  if (!pkey.ok()) return pkey.status();
  return std::unique_ptr<SealPublicKey>(new SealPublicKey(*std::move(pkey), std::string(point)));
}

absl::StatusOr<std::string> SealPublicKey::SpkiDer() const {
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(pkey_.get(), &der);
  if (len <= 0 || der == nullptr) return OpenSslInternal("i2d_PUBKEY");
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return out;
}

// ---- SealKeyPair ----------------------------------------------------------------------------

SealKeyPair::SealKeyPair(EvpPkeyPtr pkey, std::unique_ptr<SealPublicKey> public_key)
    : pkey_(std::move(pkey)), public_key_(std::move(public_key)) {}

namespace {
absl::StatusOr<std::unique_ptr<SealPublicKey>> PublicPart(EVP_PKEY* pkey) {
  absl::StatusOr<std::string> point = UncompressedPointOf(pkey);
  if (!point.ok()) return point.status();
  return SealPublicKey::FromUncompressedPoint(*point);
}
}  // namespace

absl::StatusOr<std::unique_ptr<SealKeyPair>> SealKeyPair::Generate() {
  EvpPkeyPtr pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (pkey == nullptr) return OpenSslInternal("P-256 key generation");
  absl::StatusOr<std::unique_ptr<SealPublicKey>> pub = PublicPart(pkey.get());
  if (!pub.ok()) return pub.status();
  return std::unique_ptr<SealKeyPair>(new SealKeyPair(std::move(pkey), *std::move(pub)));
}

absl::StatusOr<std::unique_ptr<SealKeyPair>> SealKeyPair::FromPrivateKeyPkcs8Der(
    const SecretBytes& der) {
  if (der.size() > LONG_MAX) return absl::InvalidArgumentError("PKCS#8 too large");
  const unsigned char* p = der.data();
  std::unique_ptr<PKCS8_PRIV_KEY_INFO, internal::OpenSslDeleter<PKCS8_PRIV_KEY_INFO_free>> p8(
      d2i_PKCS8_PRIV_KEY_INFO(nullptr, &p, static_cast<long>(der.size())));  // NOLINT
  if (p8 == nullptr) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "not a DER PKCS#8 PrivateKeyInfo");
  }
  if (p != der.data() + der.size()) {
    return absl::InvalidArgumentError("trailing bytes after PrivateKeyInfo");
  }
  EvpPkeyPtr pkey(EVP_PKCS82PKEY(p8.get()));
  if (pkey == nullptr) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "unusable PKCS#8 private key");
  }
  if (absl::Status st = CheckIsP256(pkey.get()); !st.ok()) return st;
  // Full key-pair consistency check (private scalar in range, public = d*G).
  EvpPkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey.get(), nullptr));
  if (ctx == nullptr || EVP_PKEY_pairwise_check(ctx.get()) != 1) {
    return OpenSslError(absl::StatusCode::kInvalidArgument, "inconsistent P-256 key pair");
  }
  absl::StatusOr<std::unique_ptr<SealPublicKey>> pub = PublicPart(pkey.get());
  if (!pub.ok()) return pub.status();
  return std::unique_ptr<SealKeyPair>(new SealKeyPair(std::move(pkey), *std::move(pub)));
}

absl::StatusOr<SecretBytes> SealKeyPair::PrivateKeyPkcs8Der() const {
  std::unique_ptr<PKCS8_PRIV_KEY_INFO, internal::OpenSslDeleter<PKCS8_PRIV_KEY_INFO_free>> p8(
      EVP_PKEY2PKCS8(pkey_.get()));
  if (p8 == nullptr) return OpenSslInternal("EVP_PKEY2PKCS8");
  unsigned char* der = nullptr;
  const int len = i2d_PKCS8_PRIV_KEY_INFO(p8.get(), &der);
  if (len <= 0 || der == nullptr) return OpenSslInternal("i2d_PKCS8_PRIV_KEY_INFO");
  SecretBytes out = SecretBytes::CopyFrom(absl::Span<const uint8_t>(der, static_cast<size_t>(len)));
  OPENSSL_clear_free(der, static_cast<size_t>(len));
  return out;
}

// ---- Seal / Open ----------------------------------------------------------------------------

namespace internal {

absl::StatusOr<std::string> SealBox(const SealKeyPair* sender, const SealPublicKey& recipient,
                                    const SealContext& context, std::string_view plaintext) {
  EvpPkeyPtr eph(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (eph == nullptr) return OpenSslInternal("ephemeral key generation");
  absl::StatusOr<std::string> eph_point = UncompressedPointOf(eph.get());
  if (!eph_point.ok()) return eph_point.status();
  KeyInputs in;
  in.own_ephemeral_side = eph.get();
  in.peer_ephemeral_side = recipient.pkey_.get();
  in.ephemeral = *eph_point;
  in.recipient = recipient.point_;
  if (sender != nullptr) {
    in.own_static_side = sender->pkey_.get();
    in.peer_static_side = recipient.pkey_.get();
    in.sender = sender->public_key().UncompressedPoint();
  }
  absl::StatusOr<SecretBytes> key = BoxKey(in);
  if (!key.ok()) return key.status();
  eph.reset();  // the ephemeral private key is no longer needed

  const std::string aad = EncodeSealContext(context);
  std::string out(kSealOverhead + plaintext.size(), '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  o[0] = sender == nullptr ? kSealedBoxVersion : kSealedBoxAuthenticatedVersion;
  std::memcpy(o + kPointOffset, eph_point->data(), kSealPointSize);
  if (absl::Status st = FillRandom(absl::Span<uint8_t>(o + kNonceOffset, kSealNonceSize));
      !st.ok()) {
    return st;
  }

  if (internal::Aes256Gcm() == nullptr) return OpenSslInternal("AES-256-GCM unavailable");
  EvpCipherCtxPtr c(EVP_CIPHER_CTX_new());
  int len = 0;
  if (c == nullptr ||
      EVP_EncryptInit_ex2(c.get(), internal::Aes256Gcm(), key->data(), o + kNonceOffset, nullptr) !=
          1 ||
      EVP_EncryptUpdate(c.get(), nullptr, &len, U8(aad), static_cast<int>(aad.size())) != 1) {
    return OpenSslInternal("AES-GCM init");
  }
  unsigned char* ct = o + kCiphertextOffset;
  for (size_t done = 0; done < plaintext.size();) {
    const size_t chunk = std::min(plaintext.size() - done, kMaxUpdate);
    if (EVP_EncryptUpdate(c.get(), ct + done, &len, U8(plaintext) + done,
                          static_cast<int>(chunk)) != 1 ||
        static_cast<size_t>(len) != chunk) {
      return OpenSslInternal("AES-GCM encrypt");
    }
    done += chunk;
  }
  if (EVP_EncryptFinal_ex(c.get(), ct + plaintext.size(), &len) != 1 || len != 0 ||
      EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kSealTagSize),
                          ct + plaintext.size()) != 1) {
    return OpenSslInternal("AES-GCM finish");
  }
  return out;
}

absl::StatusOr<std::string> OpenBox(const SealKeyPair& recipient, const SealPublicKey* sender,
                                    const SealContext& expected_context, std::string_view sealed) {
  if (sealed.size() < kSealOverhead) {
    return absl::InvalidArgumentError(
        absl::StrCat("sealed box too short: ", sealed.size(), " bytes, minimum ", kSealOverhead));
  }
  const uint8_t version = static_cast<uint8_t>(sealed[0]);
  if (version != kSealedBoxVersion && version != kSealedBoxAuthenticatedVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported sealed box version ", static_cast<int>(sealed[0])));
  }
  if (sender != nullptr && version != kSealedBoxAuthenticatedVersion) {
    return absl::PermissionDeniedError(
        "sealed box is anonymous where a sender-authenticated one is required");
  }
  if (sender == nullptr && version != kSealedBoxVersion) {
    return absl::InvalidArgumentError(
        "sealed box is sender-authenticated: open it with the sender's key");
  }
  const std::string_view eph_point = sealed.substr(kPointOffset, kSealPointSize);
  if (absl::Status st = ValidateUncompressedPoint(eph_point); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sealed box ephemeral key: ", st.message()));
  }
  absl::StatusOr<EvpPkeyPtr> peer = PkeyFromPoint(eph_point);
  if (!peer.ok()) return peer.status();
  KeyInputs in;
  in.own_ephemeral_side = recipient.pkey_.get();
  in.peer_ephemeral_side = peer->get();
  in.ephemeral = eph_point;
  in.recipient = recipient.public_key().UncompressedPoint();
  if (sender != nullptr) {
    in.own_static_side = recipient.pkey_.get();
    in.peer_static_side = sender->pkey_.get();
    in.sender = sender->UncompressedPoint();
  }
  absl::StatusOr<SecretBytes> key = BoxKey(in);
  if (!key.ok()) return key.status();

  const std::string aad = EncodeSealContext(expected_context);
  const unsigned char* nonce = U8(sealed) + kNonceOffset;
  const size_t ct_len = sealed.size() - kSealOverhead;
  const unsigned char* ct = U8(sealed) + kCiphertextOffset;
  // The tag is copied: EVP_CTRL_AEAD_SET_TAG takes a non-const pointer.
  unsigned char tag[kSealTagSize];
  std::memcpy(tag, ct + ct_len, kSealTagSize);

  if (internal::Aes256Gcm() == nullptr) return OpenSslInternal("AES-256-GCM unavailable");
  EvpCipherCtxPtr c(EVP_CIPHER_CTX_new());
  int len = 0;
  if (c == nullptr ||
      EVP_DecryptInit_ex2(c.get(), internal::Aes256Gcm(), key->data(), nonce, nullptr) != 1 ||
      EVP_DecryptUpdate(c.get(), nullptr, &len, U8(aad), static_cast<int>(aad.size())) != 1) {
    return OpenSslInternal("AES-GCM init");
  }
  std::string plaintext(ct_len, '\0');
  auto* pt = reinterpret_cast<unsigned char*>(plaintext.data());
  for (size_t done = 0; done < ct_len;) {
    const size_t chunk = std::min(ct_len - done, kMaxUpdate);
    if (EVP_DecryptUpdate(c.get(), pt + done, &len, ct + done, static_cast<int>(chunk)) != 1 ||
        static_cast<size_t>(len) != chunk) {
      return OpenSslInternal("AES-GCM decrypt");
    }
    done += chunk;
  }
  if (EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kSealTagSize), tag) !=
      1) {
    return OpenSslInternal("AES-GCM set tag");
  }
  if (EVP_DecryptFinal_ex(c.get(), pt + ct_len, &len) != 1) {
    ERR_clear_error();
    // Never release unauthenticated plaintext.
    if (!plaintext.empty()) OPENSSL_cleanse(plaintext.data(), plaintext.size());
    return absl::PermissionDeniedError("sealed box authentication failed");
  }
  return plaintext;
}

}  // namespace internal

absl::StatusOr<std::string> Seal(const SealPublicKey& recipient, const SealContext& context,
                                 std::string_view plaintext) {
  return internal::SealBox(nullptr, recipient, context, plaintext);
}

absl::StatusOr<std::string> Open(const SealKeyPair& recipient, const SealContext& expected_context,
                                 std::string_view sealed) {
  return internal::OpenBox(recipient, nullptr, expected_context, sealed);
}

absl::StatusOr<std::string> SealFrom(const SealKeyPair& sender, const SealPublicKey& recipient,
                                     const SealContext& context, std::string_view plaintext) {
  return internal::SealBox(&sender, recipient, context, plaintext);
}

absl::StatusOr<std::string> OpenFrom(const SealKeyPair& recipient, const SealPublicKey& sender,
                                     const SealContext& expected_context, std::string_view sealed) {
  return internal::OpenBox(recipient, &sender, expected_context, sealed);
}

}  // namespace fedanon::crypto
