// Test-only reference: the BIGNUM implementation of RFC 9380 hash_to_curve
// (P256_XMD:SHA-256_SSWU_RO_) that crypto/ec_commutative_cipher.cc used before the dedicated P-256
// field (crypto/p256_field.*), kept unchanged apart from its names so that the differential tests
// can check the new code against it on random inputs. Not constant time; not for production use.
#include "tests/crypto/reference_hash_to_curve.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "crypto/ec_commutative_cipher.h"
#include "crypto/openssl_util.h"

namespace fedanon::crypto::reference {
namespace {

using internal::BnCtxPtr;
using internal::BnMontCtxPtr;
using internal::BnPtr;
using internal::EcPointPtr;
using internal::OpenSslInternal;
using internal::U8;

constexpr size_t kFieldBytes = 32;
constexpr size_t kHashToFieldL = 48;  // ceil((ceil(log2(p)) + k) / 8), k = 128
constexpr size_t kUncompressedSize = 65;

// Curve constants for P-256 and the SSWU map, computed once and then only read.
struct P256Params {
  const EC_GROUP* group = nullptr;
  BnPtr p, a, b, n;
  BnPtr z;          // Z = -10 mod p
  BnPtr c1;         // (p - 3) / 4, exponent of sqrt_ratio for p = 3 mod 4
  BnPtr c2;         // sqrt(-Z) = sqrt(10) mod p
  BnPtr p_minus_2;  // exponent for field inversion
  BnPtr n_minus_2;  // exponent for scalar inversion
  BnMontCtxPtr mont_p, mont_n;
};

const P256Params* Params() {
  static const P256Params* const params = []() -> const P256Params* {
    auto prm = std::make_unique<P256Params>();  // released (kept forever) on success
    prm->group = internal::P256Group();
    BnCtxPtr ctx(BN_CTX_new());
    if (prm->group == nullptr || ctx == nullptr) return nullptr;
    for (BnPtr* bn : {&prm->p, &prm->a, &prm->b, &prm->n, &prm->z, &prm->c1, &prm->c2,
                      &prm->p_minus_2, &prm->n_minus_2}) {
      bn->reset(BN_new());
      if (*bn == nullptr) return nullptr;
    }
    prm->mont_p.reset(BN_MONT_CTX_new());
    prm->mont_n.reset(BN_MONT_CTX_new());
    BnPtr ten(BN_new());
    BnPtr check(BN_new());
    if (prm->mont_p == nullptr || prm->mont_n == nullptr || ten == nullptr || check == nullptr ||
        EC_GROUP_get_curve(prm->group, prm->p.get(), prm->a.get(), prm->b.get(), ctx.get()) != 1 ||
        BN_copy(prm->n.get(), EC_GROUP_get0_order(prm->group)) == nullptr ||
        BN_MONT_CTX_set(prm->mont_p.get(), prm->p.get(), ctx.get()) != 1 ||
        BN_MONT_CTX_set(prm->mont_n.get(), prm->n.get(), ctx.get()) != 1 ||
        BN_set_word(ten.get(), 10) != 1 || BN_sub(prm->z.get(), prm->p.get(), ten.get()) != 1 ||
        BN_sub(prm->c1.get(), prm->p.get(), BN_value_one()) != 1 ||  // c1 = (p - 3) / 4
        BN_sub_word(prm->c1.get(), 2) != 1 || BN_rshift(prm->c1.get(), prm->c1.get(), 2) != 1 ||
        BN_copy(prm->p_minus_2.get(), prm->p.get()) == nullptr ||
        BN_sub_word(prm->p_minus_2.get(), 2) != 1 ||
        BN_copy(prm->n_minus_2.get(), prm->n.get()) == nullptr ||
        BN_sub_word(prm->n_minus_2.get(), 2) != 1) {
      return nullptr;
    }
    // c2 = sqrt(10) = 10^((p + 1) / 4) since p = 3 mod 4; check that it squares back to 10.
    BnPtr e(BN_new());
    if (e == nullptr || BN_copy(e.get(), prm->c1.get()) == nullptr ||
        BN_add_word(e.get(), 1) != 1 ||
        BN_mod_exp_mont_consttime(prm->c2.get(), ten.get(), e.get(), prm->p.get(), ctx.get(),
                                  prm->mont_p.get()) != 1 ||
        BN_mod_sqr(check.get(), prm->c2.get(), prm->p.get(), ctx.get()) != 1 ||
        BN_cmp(check.get(), ten.get()) != 0 || BN_mod_word(prm->p.get(), 4) != 3) {
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

// Scoped BN_CTX frame: BN_CTX_start on construction, BN_CTX_end on destruction.
class BnFrame {
 public:
  explicit BnFrame(BN_CTX* ctx) : ctx_(ctx) { BN_CTX_start(ctx_); }
  ~BnFrame() { BN_CTX_end(ctx_); }
  BnFrame(const BnFrame&) = delete;
  BnFrame& operator=(const BnFrame&) = delete;
  // Null if the context is exhausted; callers check once after taking all their temporaries
  // (BN_CTX_get keeps returning null after the first failure).
  BIGNUM* Get() { return BN_CTX_get(ctx_); }

 private:
  BN_CTX* ctx_;
};

// hash_to_field(msg, 2) for P-256 into u0, u1.
absl::Status HashToFieldBn(const P256Params& prm, std::string_view msg, std::string_view dst,
                           BIGNUM* u0, BIGNUM* u1, BN_CTX* ctx) {
  absl::StatusOr<std::string> expanded = ExpandMessageXmdSha256(msg, dst, 2 * kHashToFieldL);
  if (!expanded.ok()) return expanded.status();
  uint8_t uniform[2 * kHashToFieldL];
  std::copy(expanded->begin(), expanded->end(), uniform);
  BIGNUM* us[2] = {u0, u1};
  for (int i = 0; i < 2; ++i) {
    if (BN_bin2bn(uniform + i * kHashToFieldL, kHashToFieldL, us[i]) == nullptr ||
        BN_nnmod(us[i], us[i], prm.p.get(), ctx) != 1) {
      return OpenSslInternal("hash_to_field");
    }
  }
  OPENSSL_cleanse(uniform, sizeof(uniform));
  return absl::OkStatus();
}

// RFC 9380 §6.6.2 simplified SWU (straight-line version of Appendix F.2 with sqrt_ratio for
// q = 3 mod 4, F.2.1.2). Writes the affine point (x, y). u must be in [0, p).
absl::Status MapToCurveSswu(const P256Params& prm, const BIGNUM* u, BIGNUM* x, BIGNUM* y,
                            BN_CTX* ctx) {
  BnFrame f(ctx);
  BIGNUM* tv1 = f.Get();
  BIGNUM* tv2 = f.Get();
  BIGNUM* tv3 = f.Get();
  BIGNUM* tv4 = f.Get();
  BIGNUM* tv5 = f.Get();
  BIGNUM* tv6 = f.Get();
  BIGNUM* y1 = f.Get();
  BIGNUM* y2 = f.Get();
  BIGNUM* s1 = f.Get();
  BIGNUM* s2 = f.Get();
  BIGNUM* s3 = f.Get();
  if (s3 == nullptr) return OpenSslInternal("BN_CTX_get");
  const BIGNUM* p = prm.p.get();
  const BIGNUM* a = prm.a.get();
  const BIGNUM* b = prm.b.get();
  bool ok = true;
  auto mul = [&](BIGNUM* r, const BIGNUM* l, const BIGNUM* rr) {
    ok = ok && BN_mod_mul(r, l, rr, p, ctx) == 1;
  };
  auto sqr = [&](BIGNUM* r, const BIGNUM* l) { ok = ok && BN_mod_sqr(r, l, p, ctx) == 1; };
  auto add = [&](BIGNUM* r, const BIGNUM* l, const BIGNUM* rr) {
    ok = ok && BN_mod_add_quick(r, l, rr, p) == 1;
  };
  auto exp = [&](BIGNUM* r, const BIGNUM* base, const BIGNUM* e) {
    ok = ok && BN_mod_exp_mont_consttime(r, base, e, p, ctx, prm.mont_p.get()) == 1;
  };
  auto neg = [&](BIGNUM* r, const BIGNUM* l) {
    if (BN_is_zero(l)) {
      BN_zero(r);
    } else {
      ok = ok && BN_sub(r, p, l) == 1;
    }
  };
  auto cmov = [&](BIGNUM* r, const BIGNUM* src, bool c) {  // r = c ? src : r
    if (c) ok = ok && BN_copy(r, src) != nullptr;
  };

  sqr(tv1, u);                    // 1. tv1 = u^2
  mul(tv1, prm.z.get(), tv1);     // 2. tv1 = Z * tv1
  sqr(tv2, tv1);                  // 3. tv2 = tv1^2
  add(tv2, tv2, tv1);             // 4. tv2 = tv2 + tv1
  add(tv3, tv2, BN_value_one());  // 5. tv3 = tv2 + 1
  mul(tv3, b, tv3);               // 6. tv3 = B * tv3
  neg(tv4, tv2);                  // 7. tv4 = CMOV(Z, -tv2, tv2 != 0)
  cmov(tv4, prm.z.get(), ok && BN_is_zero(tv2));
  mul(tv4, a, tv4);    // 8. tv4 = A * tv4
  sqr(tv2, tv3);       // 9. tv2 = tv3^2
  sqr(tv6, tv4);       // 10. tv6 = tv4^2
  mul(tv5, a, tv6);    // 11. tv5 = A * tv6
  add(tv2, tv2, tv5);  // 12. tv2 = tv2 + tv5
  mul(tv2, tv2, tv3);  // 13. tv2 = tv2 * tv3
  mul(tv6, tv6, tv4);  // 14. tv6 = tv6 * tv4
  mul(tv5, b, tv6);    // 15. tv5 = B * tv6
  add(tv2, tv2, tv5);  // 16. tv2 = tv2 + tv5
  mul(x, tv1, tv3);    // 17. x = tv1 * tv3
  // 18. (is_gx1_square, y1) = sqrt_ratio(tv2, tv6), F.2.1.2 (q = 3 mod 4):
  sqr(s1, tv6);                                           //   s1 = v^2
  mul(s2, tv2, tv6);                                      //   s2 = u * v
  mul(s1, s1, s2);                                        //   s1 = s1 * s2
  exp(y1, s1, prm.c1.get());                              //   y1 = s1^c1
  mul(y1, y1, s2);                                        //   y1 = y1 * s2
  mul(y2, y1, prm.c2.get());                              //   y2 = y1 * c2
  sqr(s3, y1);                                            //   s3 = y1^2
  mul(s3, s3, tv6);                                       //   s3 = s3 * v
  const bool is_gx1_square = ok && BN_cmp(s3, tv2) == 0;  //   isQR = s3 == u
  cmov(y2, y1, is_gx1_square);                            //   y = CMOV(y2, y1, isQR)  (kept in y2)
  mul(y, tv1, u);                                         // 19. y = tv1 * u
  mul(y, y, y2);                                          // 20. y = y * y1
  cmov(x, tv3, is_gx1_square);                            // 21. x = CMOV(x, tv3, is_gx1_square)
  cmov(y, y2, is_gx1_square);                             // 22. y = CMOV(y, y1, is_gx1_square)
  const bool e1 = ok && BN_is_odd(u) == BN_is_odd(y);     // 23. e1 = sgn0(u) == sgn0(y)
  if (!e1) neg(y, y);                                     // 24. y = CMOV(-y, y, e1)
  exp(tv4, tv4, prm.p_minus_2.get());                     // 25. tv4 = inv(tv4)
  mul(x, x, tv4);                                         // 26. x = x * tv4
  if (!ok) return OpenSslInternal("simplified SWU map");
  return absl::OkStatus();
}

absl::Status SetAffine(const P256Params& prm, EC_POINT* pt, const BIGNUM* x, const BIGNUM* y,
                       BN_CTX* ctx) {
  // Fails if (x, y) is not on the curve: a self-check of the map.
  if (EC_POINT_set_affine_coordinates(prm.group, pt, x, y, ctx) != 1) {
    return OpenSslInternal("map_to_curve produced a point off the curve");
  }
  return absl::OkStatus();
}

// hash_to_curve (random-oracle variant) into `out`.
absl::Status HashToCurvePoint(const P256Params& prm, std::string_view msg, std::string_view dst,
                              EC_POINT* out, BN_CTX* ctx) {
  BnFrame f(ctx);
  BIGNUM* u0 = f.Get();
  BIGNUM* u1 = f.Get();
  BIGNUM* x = f.Get();
  BIGNUM* y = f.Get();
  if (y == nullptr) return OpenSslInternal("BN_CTX_get");
  if (absl::Status st = HashToFieldBn(prm, msg, dst, u0, u1, ctx); !st.ok()) return st;
  EcPointPtr q1(EC_POINT_new(prm.group));
  if (q1 == nullptr) return OpenSslInternal("EC_POINT_new");
  if (absl::Status st = MapToCurveSswu(prm, u0, x, y, ctx); !st.ok()) return st;
  if (absl::Status st = SetAffine(prm, out, x, y, ctx); !st.ok()) return st;
  if (absl::Status st = MapToCurveSswu(prm, u1, x, y, ctx); !st.ok()) return st;
  if (absl::Status st = SetAffine(prm, q1.get(), x, y, ctx); !st.ok()) return st;
  // P = Q0 + Q1; clear_cofactor is the identity for P-256 (h = 1).
  if (EC_POINT_add(prm.group, out, out, q1.get(), ctx) != 1) return OpenSslInternal("EC add");
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodePoint(const P256Params& prm, const EC_POINT* pt,
                                        point_conversion_form_t form, BN_CTX* ctx) {
  if (EC_POINT_is_at_infinity(prm.group, pt)) {
    return absl::InternalError("unexpected point at infinity");
  }
  const size_t size =
      form == POINT_CONVERSION_COMPRESSED ? kCompressedPointSize : kUncompressedSize;
  std::string out(size, '\0');
  if (EC_POINT_point2oct(prm.group, pt, form, reinterpret_cast<unsigned char*>(out.data()),
                         out.size(), ctx) != size) {
    return OpenSslInternal("EC_POINT_point2oct");
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> MapToCurveSswuP256(std::string_view u) {
  absl::StatusOr<const P256Params*> prm = GetParams();
  if (!prm.ok()) return prm.status();
  if (u.size() != kFieldBytes) return absl::InvalidArgumentError("expected a 32-byte element");
  BnCtxPtr ctx(BN_CTX_new());
  BnPtr ub(BN_new()), x(BN_new()), y(BN_new());
  EcPointPtr pt(EC_POINT_new((*prm)->group));
  if (ctx == nullptr || ub == nullptr || x == nullptr || y == nullptr || pt == nullptr ||
      BN_bin2bn(U8(u), kFieldBytes, ub.get()) == nullptr) {
    return OpenSslInternal("BN alloc");
  }
  if (BN_cmp(ub.get(), (*prm)->p.get()) >= 0) {
    return absl::InvalidArgumentError("field element not reduced mod p");
  }
  if (absl::Status st = MapToCurveSswu(**prm, ub.get(), x.get(), y.get(), ctx.get()); !st.ok()) {
    return st;
  }
  if (absl::Status st = SetAffine(**prm, pt.get(), x.get(), y.get(), ctx.get()); !st.ok()) {
    return st;
  }
  return EncodePoint(**prm, pt.get(), POINT_CONVERSION_UNCOMPRESSED, ctx.get());
}

absl::StatusOr<std::string> HashToCurve(std::string_view msg, std::string_view dst) {
  absl::StatusOr<const P256Params*> prm = GetParams();
  if (!prm.ok()) return prm.status();
  BnCtxPtr ctx(BN_CTX_new());
  EcPointPtr pt(EC_POINT_new((*prm)->group));
  if (ctx == nullptr || pt == nullptr) return OpenSslInternal("alloc");
  if (absl::Status st = HashToCurvePoint(**prm, msg, dst, pt.get(), ctx.get()); !st.ok()) {
    return st;
  }
  return EncodePoint(**prm, pt.get(), POINT_CONVERSION_UNCOMPRESSED, ctx.get());
}

}  // namespace fedanon::crypto::reference
