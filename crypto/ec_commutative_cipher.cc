#include "crypto/ec_commutative_cipher.h"

// expand_message_xmd uses the low-level SHA256_* functions (deprecated in OpenSSL 3, see
// ZPadState).
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "crypto/openssl_util.h"
#include "crypto/p256_field.h"
#include "crypto/p256_point.h"

namespace fedanon::crypto {
namespace {

using internal::BnCtxPtr;
using internal::BnMontCtxPtr;
using internal::BnPtr;
using internal::EcPointPtr;
using internal::EvpMdCtxPtr;
using internal::OpenSslInternal;
using internal::SecretBnPtr;
using internal::U8;

constexpr size_t kFieldBytes = 32;
constexpr size_t kHashToFieldL = 48;  // ceil((ceil(log2(p)) + k) / 8), k = 128
constexpr size_t kSha256Bytes = 32;   // b_in_bytes
constexpr size_t kSha256Block = 64;   // s_in_bytes
constexpr size_t kUncompressedSize = 65;
constexpr std::string_view kOversizeDstPrefix = "H2C-OVERSIZE-DST-";

// Curve constants for P-256 and the SSWU map, computed once and then only read.

// Group constants for the scalar side (the field side is crypto/p256_field), set once, then read.
struct P256Params {
  const EC_GROUP* group = nullptr;  // the named curve, so EC_POINT_mul runs OpenSSL's nistz256
  BnPtr n;
  BnPtr n_minus_2;  // exponent for scalar inversion
  BnMontCtxPtr mont_n;
};

const P256Params* Params() {
  static const P256Params* const params = []() -> const P256Params* {
    auto prm = std::make_unique<P256Params>();  // released (kept forever) on success
    prm->group = internal::P256Group();
    BnCtxPtr ctx(BN_CTX_new());
    prm->n.reset(BN_new());
    prm->n_minus_2.reset(BN_new());
    prm->mont_n.reset(BN_MONT_CTX_new());
    if (prm->group == nullptr || ctx == nullptr || prm->n == nullptr || prm->n_minus_2 == nullptr ||
        prm->mont_n == nullptr ||
        BN_copy(prm->n.get(), EC_GROUP_get0_order(prm->group)) == nullptr ||
        BN_MONT_CTX_set(prm->mont_n.get(), prm->n.get(), ctx.get()) != 1 ||
        BN_copy(prm->n_minus_2.get(), prm->n.get()) == nullptr ||
        BN_sub_word(prm->n_minus_2.get(), 2) != 1) {
      return nullptr;
    }
    return prm.release();
  }();
  return params;
}

absl::StatusOr<const P256Params*> GetParams() {
  const P256Params* prm = Params();
  if (prm == nullptr) return OpenSslInternal("P-256 parameter setup failed");
  return prm;
}

// ---- RFC 9380 building blocks -----------------------------------------------------------------

// SHA-256 state after the all-zero Z_pad block every b_0 starts with (computed once, then only
// copied). The low-level SHA256_* API is deprecated in OpenSSL 3 but is the one with a plain,
// copyable context: EVP would fetch or duplicate a provider context per hash (measured: the EVP
// calls were about half of expand_message_xmd's time).
const SHA256_CTX& ZPadState() {
  static const SHA256_CTX state = [] {
    SHA256_CTX c;
    static constexpr uint8_t kZPad[kSha256Block] = {};
    SHA256_Init(&c);
    SHA256_Update(&c, kZPad, sizeof(kZPad));
    return c;
  }();
  return state;
}

absl::Status ExpandMessageXmdInto(std::string_view msg, std::string_view dst,
                                  absl::Span<uint8_t> out) {
  const size_t len_in_bytes = out.size();
  const size_t ell = (len_in_bytes + kSha256Bytes - 1) / kSha256Bytes;
  if (dst.empty()) return absl::InvalidArgumentError("hash_to_curve: empty DST");
  if (ell > 255 || len_in_bytes > 65535 || len_in_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expand_message_xmd: unsupported output length ", len_in_bytes));
  }
  // §5.3.3: DSTs longer than 255 bytes are replaced by H("H2C-OVERSIZE-DST-" || DST).
  uint8_t short_dst[kSha256Bytes];
  SHA256_CTX h;
  if (dst.size() > 255) {
    SHA256_Init(&h);
    SHA256_Update(&h, kOversizeDstPrefix.data(), kOversizeDstPrefix.size());
    SHA256_Update(&h, dst.data(), dst.size());
    SHA256_Final(short_dst, &h);
    dst = std::string_view(reinterpret_cast<const char*>(short_dst), sizeof(short_dst));
  }
  // DST_prime = DST || I2OSP(len(DST), 1); the b_i inputs are built whole in one buffer.
  uint8_t bi_in[kSha256Bytes + 1 + 255 + 1];
  std::copy_n(reinterpret_cast<const uint8_t*>(dst.data()), dst.size(), bi_in + kSha256Bytes + 1);
  bi_in[kSha256Bytes + 1 + dst.size()] = static_cast<uint8_t>(dst.size());
  const size_t bi_len = kSha256Bytes + 1 + dst.size() + 1;
  const uint8_t* dst_prime = bi_in + kSha256Bytes + 1;
  const uint8_t tail[3] = {static_cast<uint8_t>(len_in_bytes >> 8),
                           static_cast<uint8_t>(len_in_bytes & 0xff), 0};
  uint8_t b0[kSha256Bytes];
  uint8_t bi[kSha256Bytes];
  // b_0 = H(Z_pad || msg || I2OSP(len_in_bytes, 2) || I2OSP(0, 1) || DST_prime)
  h = ZPadState();
  SHA256_Update(&h, msg.data(), msg.size());
  SHA256_Update(&h, tail, sizeof(tail));
  SHA256_Update(&h, dst_prime, dst.size() + 1);
  SHA256_Final(b0, &h);
  // b_1 = H(b_0 || I2OSP(1, 1) || DST_prime); b_i = H(strxor(b_0, b_(i-1)) || I2OSP(i, 1) || ...)
  for (size_t i = 1; i <= ell; ++i) {
    for (size_t j = 0; j < kSha256Bytes; ++j) bi_in[j] = i == 1 ? b0[j] : (b0[j] ^ bi[j]);
    bi_in[kSha256Bytes] = static_cast<uint8_t>(i);
    SHA256_Init(&h);  // not the one-shot SHA256(): in OpenSSL 3 it fetches the digest per call
    SHA256_Update(&h, bi_in, bi_len);
    SHA256_Final(bi, &h);
    const size_t offset = (i - 1) * kSha256Bytes;
    std::copy_n(bi, std::min(kSha256Bytes, len_in_bytes - offset), out.data() + offset);
  }
  OPENSSL_cleanse(&h, sizeof(h));
  OPENSSL_cleanse(b0, sizeof(b0));
  OPENSSL_cleanse(bi, sizeof(bi));
  OPENSSL_cleanse(bi_in, kSha256Bytes);
  return absl::OkStatus();
}

// hash_to_field(msg, count = 2) for P-256: OS2IP of each 48-byte chunk, reduced mod p.
absl::Status HashToFieldFe(std::string_view msg, std::string_view dst, p256::Fe* u0, p256::Fe* u1) {
  uint8_t uniform[2 * kHashToFieldL];
  if (absl::Status st = ExpandMessageXmdInto(msg, dst, absl::MakeSpan(uniform)); !st.ok()) {
    return st;
  }
  p256::FeFromWideBytes(u0, uniform);
  p256::FeFromWideBytes(u1, uniform + kHashToFieldL);
  OPENSSL_cleanse(uniform, sizeof(uniform));
  return absl::OkStatus();
}

// hash_to_curve (random-oracle variant): affine coordinates of map(u0) + map(u1).
absl::Status HashToCurveAffine(std::string_view msg, std::string_view dst, p256::Fe* x,
                               p256::Fe* y) {
  p256::Fe u0, u1;
  if (absl::Status st = HashToFieldFe(msg, dst, &u0, &u1); !st.ok()) return st;
  if (!p256::MapTwoToCurve(u0, u1, x, y)) {
    return absl::InternalError("hash_to_curve gave the point at infinity");
  }
  return absl::OkStatus();
}

// 0x04 || x || y.
void EncodeUncompressed(const p256::Fe& x, const p256::Fe& y, uint8_t out[kUncompressedSize]) {
  out[0] = 0x04;
  p256::FeToBytes(out + 1, x);
  p256::FeToBytes(out + 1 + kFieldBytes, y);
}

// Working state of the multiplications, one per thread: a BN_CTX, the OpenSSL points and the
// BIGNUMs for the coordinates are allocated once per batch worker (not per id), and the products
// of up to kBlock ids are encoded together with one field inversion (FeBatchInv).
struct MulWorkspace {
  static constexpr size_t kBlock = 128;
  BnCtxPtr ctx;
  EcPointPtr in;
  std::vector<EcPointPtr> out;
  BnPtr bx, by, bz;
  p256::Fe x[kBlock], y[kBlock], z[kBlock], scratch[kBlock];

  absl::Status Init(const P256Params& prm, size_t block) {
    ctx.reset(BN_CTX_new());
    in.reset(EC_POINT_new(prm.group));
    bx.reset(BN_new());
    by.reset(BN_new());
    bz.reset(BN_new());
    if (ctx == nullptr || in == nullptr || bx == nullptr || by == nullptr || bz == nullptr) {
      return OpenSslInternal("EC workspace allocation");
    }
    for (size_t i = 0; i < block; ++i) {
      out.emplace_back(EC_POINT_new(prm.group));
      if (out.back() == nullptr) return OpenSslInternal("EC_POINT_new");
    }
    return absl::OkStatus();
  }
};

// Loads an affine point known to be on the curve (a hash checked by IsOnCurve, or a decompressed
// point, whose y is checked by construction) into ws.in as Jacobian (x, y, 1): no OpenSSL
// on-curve check and no affine-coordinate conversion (EC_POINT_oct2point measured 0.8-1.5 us,
// this 0.5 us). EC_POINT_set_Jprojective_coordinates_GFp is deprecated in OpenSSL 3 but is the
// only way to set coordinates without the check.
absl::Status LoadAffine(const P256Params& prm, const p256::Fe& x, const p256::Fe& y,
                        MulWorkspace& ws) {
  uint8_t bytes[2 * kFieldBytes];
  p256::FeToBytes(bytes, x);
  p256::FeToBytes(bytes + kFieldBytes, y);
  const bool ok =
      BN_bin2bn(bytes, kFieldBytes, ws.bx.get()) != nullptr &&
      BN_bin2bn(bytes + kFieldBytes, kFieldBytes, ws.by.get()) != nullptr &&
      EC_POINT_set_Jprojective_coordinates_GFp(prm.group, ws.in.get(), ws.bx.get(), ws.by.get(),
                                               BN_value_one(), ws.ctx.get()) == 1;
  OPENSSL_cleanse(bytes, sizeof(bytes));
  if (!ok) return OpenSslInternal("EC_POINT_set_Jprojective_coordinates_GFp");
  return absl::OkStatus();
}

// Encodings (`encoding`) of ws.out[0..m): the Jacobian coordinates (X, Y, Z) = (x·Z², y·Z³, Z) of
// each product come out of OpenSSL, the m Z's are inverted together (Montgomery's trick: one
// inversion per block instead of EC_POINT_point2oct's one per point, 4.7-5.7 us each) and
// x and y (or sgn0(y)) encoded on our field.
absl::Status EncodeBlock(const P256Params& prm, size_t m, MulWorkspace& ws, PointEncoding encoding,
                         std::string* out) {
  for (size_t i = 0; i < m; ++i) {
    uint8_t bytes[3][kFieldBytes];
    if (EC_POINT_get_Jprojective_coordinates_GFp(prm.group, ws.out[i].get(), ws.bx.get(),
                                                 ws.by.get(), ws.bz.get(), ws.ctx.get()) != 1 ||
        BN_bn2binpad(ws.bx.get(), bytes[0], kFieldBytes) != kFieldBytes ||
        BN_bn2binpad(ws.by.get(), bytes[1], kFieldBytes) != kFieldBytes ||
        BN_bn2binpad(ws.bz.get(), bytes[2], kFieldBytes) != kFieldBytes ||
        !p256::FeFromBytes(&ws.x[i], bytes[0]) || !p256::FeFromBytes(&ws.y[i], bytes[1]) ||
        !p256::FeFromBytes(&ws.z[i], bytes[2])) {
      return OpenSslInternal("EC_POINT_get_Jprojective_coordinates_GFp");
    }
  }
  p256::FeBatchInv(ws.z, ws.z, m, ws.scratch);  // 0 (infinity) stays 0
  for (size_t i = 0; i < m; ++i) {
    p256::Fe zi2, zi3, x, y;
    p256::FeSqr(&zi2, ws.z[i]);
    p256::FeMul(&zi3, zi2, ws.z[i]);
    p256::FeMul(&x, ws.x[i], zi2);
    p256::FeMul(&y, ws.y[i], zi3);
    // k in [1, n-1] and an input of prime order n: infinity is impossible (public check).
    if (p256::FeIsZero(ws.z[i]) == 1) return absl::InternalError("unexpected point at infinity");
    if (encoding == PointEncoding::kUncompressed) {
      out[i].resize(kUncompressedSize);
      EncodeUncompressed(x, y, reinterpret_cast<uint8_t*>(out[i].data()));
      continue;
    }
    out[i].resize(kCompressedPointSize);
    auto* o = reinterpret_cast<uint8_t*>(out[i].data());
    o[0] = static_cast<uint8_t>(0x02 | p256::FeSgn0(y));
    p256::FeToBytes(o + 1, x);
  }
  return absl::OkStatus();
}

// Parses a received point, validating it once: a 33-byte compressed point (rejects bad prefixes,
// x >= p and x with no matching y) or a 65-byte uncompressed one (rejects a bad prefix, x or
// y >= p and points off the curve: 0.15 us against 4.5 us for a decompression); other lengths are
// rejected, and the point at infinity has neither form.
absl::Status DecodePoint(std::string_view bytes, p256::Fe* x, p256::Fe* y) {
  if (bytes.size() == kUncompressedSize) {
    if (static_cast<uint8_t>(bytes[0]) != 0x04) {
      return absl::InvalidArgumentError(absl::StrCat("bad uncompressed point prefix 0x",
                                                     absl::Hex(static_cast<uint8_t>(bytes[0]))));
    }
    const uint8_t* in = U8(bytes);
    if (!p256::FeFromBytes(x, in + 1) || !p256::FeFromBytes(y, in + 1 + kFieldBytes) ||
        !p256::IsOnCurve(*x, *y)) {
      return absl::InvalidArgumentError("not a valid P-256 point");
    }
    return absl::OkStatus();
  }
  if (bytes.size() != kCompressedPointSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a 33-byte compressed or 65-byte uncompressed P-256 point, got ",
                     bytes.size(), " bytes"));
  }
  const uint8_t prefix = static_cast<uint8_t>(bytes[0]);
  if (prefix != 0x02 && prefix != 0x03) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad compressed point prefix 0x", absl::Hex(prefix)));
  }
  if (!p256::DecompressPoint(U8(bytes), x, y)) {
    return absl::InvalidArgumentError("not a valid P-256 point");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ExpandMessageXmdSha256(std::string_view msg, std::string_view dst,
                                                   size_t len_in_bytes) {
  std::string out(len_in_bytes, '\0');
  if (absl::Status st = ExpandMessageXmdInto(
          msg, dst, absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
      !st.ok()) {
    return st;
  }
  return out;
}

absl::StatusOr<std::array<std::string, 2>> HashToFieldP256(std::string_view msg,
                                                           std::string_view dst) {
  p256::Fe u[2];
  if (absl::Status st = HashToFieldFe(msg, dst, &u[0], &u[1]); !st.ok()) return st;
  std::array<std::string, 2> out;
  for (int i = 0; i < 2; ++i) {
    out[i].resize(kFieldBytes);
    p256::FeToBytes(reinterpret_cast<uint8_t*>(out[i].data()), u[i]);
  }
  return out;
}

absl::StatusOr<std::string> MapToCurveSswuP256(std::string_view u) {
  if (u.size() != kFieldBytes) return absl::InvalidArgumentError("expected a 32-byte element");
  p256::Fe fu, x, y;
  if (!p256::FeFromBytes(&fu, U8(u))) {
    return absl::InvalidArgumentError("field element not reduced mod p");
  }
  p256::MapToCurveSswu(fu, &x, &y);
  if (!p256::IsOnCurve(x, y)) {
    return absl::InternalError("map_to_curve produced a point off the curve");
  }
  std::string out(kUncompressedSize, '\0');
  EncodeUncompressed(x, y, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

absl::StatusOr<std::string> HashToCurve(std::string_view msg, std::string_view dst) {
  p256::Fe x, y;
  if (absl::Status st = HashToCurveAffine(msg, dst, &x, &y); !st.ok()) return st;
  if (!p256::IsOnCurve(x, y)) {
    return absl::InternalError("hash_to_curve produced a point off the curve");
  }
  std::string out(kUncompressedSize, '\0');
  EncodeUncompressed(x, y, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

// ---- EcCommutativeCipher ----------------------------------------------------------------------

struct EcCommutativeCipher::Impl {
  const P256Params* prm = nullptr;
  SecretBnPtr k;      // secret scalar in [1, n-1], BN_FLG_CONSTTIME
  SecretBnPtr k_inv;  // k^-1 mod n, BN_FLG_CONSTTIME

  // out[i - begin] = point(items[i]) * scalar, encoded as `encoding`, for i in [begin, end):
  // point() is the hash of an id (`hash`) or the decoding of a received point. Blocks of
  // ws.out.size(): load and multiply each, then encode the block with one inversion. Errors name
  // the item if `name_items`.
  absl::Status MulRange(absl::Span<const std::string> items, size_t begin, size_t end, bool hash,
                        const BIGNUM* scalar, PointEncoding encoding, bool name_items,
                        MulWorkspace& ws, std::string* out) const {
    const size_t block = ws.out.size();
    for (size_t b = begin; b < end; b += block) {
      const size_t m = std::min(block, end - b);
      for (size_t j = 0; j < m; ++j) {
        p256::Fe x, y;
        absl::Status st;
        if (hash) {
          st = HashToCurveAffine(items[b + j], kIdHashDst, &x, &y);
          if (st.ok() && !p256::IsOnCurve(x, y)) {  // self-check of the map (public outcome)
            st = absl::InternalError("hash_to_curve produced a point off the curve");
          }
        } else {
          st = DecodePoint(items[b + j], &x, &y);
        }
        if (st.ok()) st = LoadAffine(*prm, x, y, ws);
        if (st.ok() && EC_POINT_mul(prm->group, ws.out[j].get(), nullptr, ws.in.get(), scalar,
                                    ws.ctx.get()) != 1) {
          st = OpenSslInternal("EC_POINT_mul");
        }
        if (!st.ok()) {
          if (!name_items) return st;
          return absl::Status(st.code(), absl::StrCat("item ", b + j, ": ", st.message()));
        }
      }
      if (absl::Status st = EncodeBlock(*prm, m, ws, encoding, out + (b - begin)); !st.ok()) {
        return st;
      }
    }
    return absl::OkStatus();
  }

  // Every item, on `threads` workers (<= 0: one per hardware thread) that take pieces of
  // kPiece items in turn from a shared counter, so that a worker slowed down by a loaded machine
  // holds back at most one piece (a fixed split waits for the slowest worker's whole share). Each
  // worker keeps one workspace for all its pieces. Returns the first error in index order: pieces
  // are claimed in increasing order, and after a failure no new piece is claimed, so every piece
  // below a failing one has run.
  absl::StatusOr<std::vector<std::string>> Batch(absl::Span<const std::string> items, bool hash,
                                                 const BIGNUM* scalar, PointEncoding encoding,
                                                 int threads) const {
    static constexpr size_t kPiece = 1024;
    const size_t n = items.size();
    std::vector<std::string> out(n);
    if (n == 0) return out;
    const size_t pieces = (n + kPiece - 1) / kPiece;
    size_t workers = threads > 0 ? static_cast<size_t>(threads)
                                 : std::max<size_t>(1, std::thread::hardware_concurrency());
    workers = std::min(workers, pieces);
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::pair<size_t, absl::Status>> errors(workers, {pieces, absl::OkStatus()});
    auto work = [&](size_t w) {
      MulWorkspace ws;
      if (absl::Status st = ws.Init(*prm, std::min(MulWorkspace::kBlock, n)); !st.ok()) {
        errors[w] = {0, st};
        failed = true;
        return;
      }
      while (!failed.load(std::memory_order_relaxed)) {
        const size_t piece = next.fetch_add(1);
        if (piece >= pieces) return;
        const size_t begin = piece * kPiece;
        const size_t end = std::min(n, begin + kPiece);
        if (absl::Status st =
                MulRange(items, begin, end, hash, scalar, encoding, true, ws, &out[begin]);
            !st.ok()) {
          errors[w] = {piece, st};
          failed = true;
          return;
        }
      }
    };
    if (workers == 1) {
      work(0);
    } else {
      std::vector<std::thread> pool;
      pool.reserve(workers - 1);
      for (size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
      work(0);
      for (std::thread& t : pool) t.join();
    }
    const auto first =
        std::min_element(errors.begin(), errors.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
    if (!first->second.ok()) return first->second;
    return out;
  }

  absl::StatusOr<std::string> One(std::string_view item, bool hash, const BIGNUM* scalar) const {
    const std::string in(item);
    std::string out;
    MulWorkspace ws;
    if (absl::Status st = ws.Init(*prm, 1); !st.ok()) return st;
    if (absl::Status st = MulRange(absl::MakeConstSpan(&in, 1), 0, 1, hash, scalar,
                                   PointEncoding::kCompressed, false, ws, &out);
        !st.ok()) {
      return st;
    }
    return out;
  }
};

EcCommutativeCipher::EcCommutativeCipher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EcCommutativeCipher::~EcCommutativeCipher() = default;

namespace {

// Builds the cipher state from a scalar already known to be in [1, n-1].
absl::StatusOr<SecretBnPtr> InvertScalar(const P256Params& prm, const BIGNUM* k) {
  BnCtxPtr ctx(BN_CTX_secure_new());
  SecretBnPtr inv(BN_secure_new());
  if (ctx == nullptr || inv == nullptr) return OpenSslInternal("BN alloc");
  BN_set_flags(inv.get(), BN_FLG_CONSTTIME);
  // Fermat: k^-1 = k^(n-2) mod n (n prime), constant time.
  if (BN_mod_exp_mont_consttime(inv.get(), k, prm.n_minus_2.get(), prm.n.get(), ctx.get(),
                                prm.mont_n.get()) != 1) {
    return OpenSslInternal("scalar inversion");
  }
  return inv;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> EcCommutativeCipher::CreateWithNewKey() {
  absl::StatusOr<const P256Params*> prm = GetParams();
  if (!prm.ok()) return prm.status();
  SecretBnPtr k(BN_secure_new());
  BnPtr range(BN_new());
  if (k == nullptr || range == nullptr) return OpenSslInternal("BN alloc");
  BN_set_flags(k.get(), BN_FLG_CONSTTIME);
  // k = 1 + uniform[0, n-2]  =>  uniform in [1, n-1].
  if (BN_sub(range.get(), (*prm)->n.get(), BN_value_one()) != 1 ||
      BN_priv_rand_range(k.get(), range.get()) != 1 || BN_add_word(k.get(), 1) != 1) {
    return OpenSslInternal("secret scalar generation");
  }
  absl::StatusOr<SecretBnPtr> k_inv = InvertScalar(**prm, k.get());
  if (!k_inv.ok()) return k_inv.status();
  auto impl = std::make_unique<Impl>();
  impl->prm = *prm;
  impl->k = std::move(k);
  impl->k_inv = *std::move(k_inv);
  return std::unique_ptr<EcCommutativeCipher>(new EcCommutativeCipher(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> EcCommutativeCipher::CreateFromKey(
    const SecretBytes& key) {
  absl::StatusOr<const P256Params*> prm = GetParams();
  if (!prm.ok()) return prm.status();
  if (key.size() != kP256ScalarSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("EC cipher key must be ", kP256ScalarSize, " bytes, got ", key.size()));
  }
  SecretBnPtr k(BN_secure_new());
  if (k == nullptr || BN_bin2bn(key.data(), static_cast<int>(key.size()), k.get()) == nullptr) {
    return OpenSslInternal("BN alloc");
  }
  BN_set_flags(k.get(), BN_FLG_CONSTTIME);
  if (BN_is_zero(k.get()) || BN_cmp(k.get(), (*prm)->n.get()) >= 0) {
    return absl::InvalidArgumentError("EC cipher key out of range [1, n-1]");
  }
  absl::StatusOr<SecretBnPtr> k_inv = InvertScalar(**prm, k.get());
  if (!k_inv.ok()) return k_inv.status();
  auto impl = std::make_unique<Impl>();
  impl->prm = *prm;
  impl->k = std::move(k);
  impl->k_inv = *std::move(k_inv);
  return std::unique_ptr<EcCommutativeCipher>(new EcCommutativeCipher(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<EcCommutativeCipher>> EcCommutativeCipher::Unblinding(
    const EcCommutativeCipher& key, const EcCommutativeCipher& blind) {
  const P256Params& prm = *key.impl_->prm;
  BnCtxPtr ctx(BN_CTX_secure_new());
  SecretBnPtr product(BN_secure_new());
  if (ctx == nullptr || product == nullptr) return OpenSslInternal("BN alloc");
  BN_set_flags(product.get(), BN_FLG_CONSTTIME);
  if (BN_mod_mul(product.get(), key.impl_->k.get(), blind.impl_->k_inv.get(), prm.n.get(),
                 ctx.get()) != 1) {
    return OpenSslInternal("scalar product");
  }
  // k and r^-1 are in [1, n-1] and n is prime, so their product mod n is too.
  absl::StatusOr<SecretBnPtr> inverse = InvertScalar(prm, product.get());
  if (!inverse.ok()) return inverse.status();
  auto impl = std::make_unique<Impl>();
  impl->prm = &prm;
  impl->k = std::move(product);
  impl->k_inv = *std::move(inverse);
  return std::unique_ptr<EcCommutativeCipher>(new EcCommutativeCipher(std::move(impl)));
}

SecretBytes EcCommutativeCipher::GetPrivateKeyBytes() const {
  SecretBytes out(kP256ScalarSize);
  BN_bn2binpad(impl_->k.get(), out.data(), static_cast<int>(out.size()));
  return out;
}

absl::StatusOr<std::string> EcCommutativeCipher::Encrypt(std::string_view id) const {
  return impl_->One(id, /*hash=*/true, impl_->k.get());
}

absl::StatusOr<std::string> EcCommutativeCipher::ReEncrypt(std::string_view point) const {
  return impl_->One(point, /*hash=*/false, impl_->k.get());
}

absl::StatusOr<std::string> EcCommutativeCipher::Decrypt(std::string_view point) const {
  return impl_->One(point, /*hash=*/false, impl_->k_inv.get());
}

absl::StatusOr<std::vector<std::string>> EcCommutativeCipher::EncryptBatch(
    absl::Span<const std::string> ids, int threads, PointEncoding encoding) const {
  return impl_->Batch(ids, /*hash=*/true, impl_->k.get(), encoding, threads);
}

absl::StatusOr<std::vector<std::string>> EcCommutativeCipher::ReEncryptBatch(
    absl::Span<const std::string> points, int threads, PointEncoding encoding) const {
  return impl_->Batch(points, /*hash=*/false, impl_->k.get(), encoding, threads);
}

}  // namespace fedanon::crypto
