#include "crypto/p256_point.h"

namespace fedanon::crypto::p256 {
namespace {

// Curve and map constants in Montgomery form, computed once.
struct Constants {
  Fe a;   // -3
  Fe b;   // the curve's b
  Fe z;   // SSWU Z = -10
  Fe c2;  // sqrt(-Z) = sqrt(10) = 10^((p+1)/4)
};

const Constants& C() {
  static const Constants c = [] {
    Constants k;
    FeNeg(&k.a, FeFromUint64(3));
    FeNeg(&k.z, FeFromUint64(10));
    static constexpr uint8_t kB[32] = {0x5a, 0xc6, 0x35, 0xd8, 0xaa, 0x3a, 0x93, 0xe7,
                                       0xb3, 0xeb, 0xbd, 0x55, 0x76, 0x98, 0x86, 0xbc,
                                       0x65, 0x1d, 0x06, 0xb0, 0xcc, 0x53, 0xb0, 0xf6,
                                       0x3b, 0xce, 0x3c, 0x3e, 0x27, 0xd2, 0x60, 0x4b};
    FeFromBytes(&k.b, kB);
    FeSqrt(&k.c2, FeFromUint64(10));  // 10 is a square mod p (checked by the tests)
    return k;
  }();
  return c;
}

// The simplified SWU map (RFC 9380 Appendix F.2 straight-line form) in two halves around its one
// exponentiation (step 4 of sqrt_ratio, Appendix F.2.1.2 for q = 3 mod 4), so that the two maps
// of hash_to_curve can run their exponentiations side by side (FePowC1x2).
struct MapState {
  Fe u;
  Fe tv1, tv3, tv4, tv4_sq, x;  // map steps 1-17
  Fe gx_num, gx_den;            // tv2, tv6: sqrt_ratio's u and v
  Fe v2, uv, base;              // sqrt_ratio steps 1-3: v^2, u·v, u·v^3
  Fe v_orig;                    // tv6 before ScaleRatio
  Fe d2;                        // the square ScaleRatio multiplied u and v by (1 if none)
};

// sqrt_ratio's steps 1-3 from gx_num, gx_den.
void RatioBase(MapState* s) {
  FeSqr(&s->v2, s->gx_den);             // tv1 = v^2
  FeMul(&s->uv, s->gx_num, s->gx_den);  // tv2 = u * v
  FeMul(&s->base, s->v2, s->uv);        // tv1 = tv1 * tv2
}

// sqrt_ratio(u·D², v·D²) for D ≠ 0 gives exactly sqrt_ratio(u, v): the ratio is the same and
// y1 picks up D^(8·c1 + 4) = D^(2(p-1)) = 1. But its free inverse is now 1/(v·D²), so 1/D² comes
// out of the same exponentiation (MapEnd's inv_d2).
void ScaleRatio(MapState* s, const Fe& d2) {
  s->d2 = d2;
  FeMul(&s->gx_num, s->gx_num, d2);
  FeMul(&s->gx_den, s->gx_den, d2);
  RatioBase(s);
}

void MapBegin(const Fe& u, MapState* s) {
  const Constants& k = C();
  Fe tv5, neg_tv2;
  s->u = u;
  FeSqr(&s->tv1, u);                     // 1. tv1 = u^2
  FeMul(&s->tv1, k.z, s->tv1);           // 2. tv1 = Z * tv1
  FeSqr(&s->gx_num, s->tv1);             // 3. tv2 = tv1^2
  FeAdd(&s->gx_num, s->gx_num, s->tv1);  // 4. tv2 = tv2 + tv1
  FeAdd(&s->tv3, s->gx_num, FeOne());    // 5. tv3 = tv2 + 1
  FeMul(&s->tv3, k.b, s->tv3);           // 6. tv3 = B * tv3
  FeNeg(&neg_tv2, s->gx_num);            // 7. tv4 = CMOV(Z, -tv2, tv2 != 0)
  FeSelect(&s->tv4, MaskFromBit(FeIsZero(s->gx_num)), k.z, neg_tv2);
  FeMul(&s->tv4, k.a, s->tv4);           // 8. tv4 = A * tv4 (never 0)
  FeSqr(&s->gx_num, s->tv3);             // 9. tv2 = tv3^2
  FeSqr(&s->tv4_sq, s->tv4);             // 10. tv6 = tv4^2
  FeMul(&tv5, k.a, s->tv4_sq);           // 11. tv5 = A * tv6
  FeAdd(&s->gx_num, s->gx_num, tv5);     // 12. tv2 = tv2 + tv5
  FeMul(&s->gx_num, s->gx_num, s->tv3);  // 13. tv2 = tv2 * tv3
  FeMul(&s->gx_den, s->tv4_sq, s->tv4);  // 14. tv6 = tv6 * tv4
  FeMul(&tv5, k.b, s->gx_den);           // 15. tv5 = B * tv6
  FeAdd(&s->gx_num, s->gx_num, tv5);     // 16. tv2 = tv2 + tv5
  FeMul(&s->x, s->tv1, s->tv3);          // 17. x = tv1 * tv3
  // 18. (is_gx1_square, y1) = sqrt_ratio(tv2, tv6), steps 1-3:
  s->v_orig = s->gx_den;
  s->d2 = FeOne();
  RatioBase(s);
}

// w = base^c1. Besides sqrt_ratio's y1, the exponentiation yields 1/v: w^2·u·v^3 =
// (u·v^3)^((q-1)/2) = ±1 (+1 iff isQR), so 1/v = ±w^2·u·v^2. Here u = tv2 ≠ 0: tv2 / tv6 =
// g(tv3 / tv4), and g has no root on P-256 (no point of order 2). So x = x / tv4 costs two
// multiplications instead of an inversion.
// Returns is_gx1_square; inv_d2 (if not null) receives 1/D² of ScaleRatio.
uint64_t MapEnd(const MapState& s, const Fe& w, Fe* x_out, Fe* y_out, Fe* inv_d2) {
  Fe y1, y2, tv3, t, neg_t, inv_v, inv_tv4, y, x, neg_y;
  FeMul(&y1, w, s.uv);                            // 5. y1 = y1 * tv2
  FeMul(&y2, y1, C().c2);                         // 6. y2 = y1 * c2
  FeSqr(&tv3, y1);                                // 7. tv3 = y1^2
  FeMul(&tv3, tv3, s.gx_den);                     // 8. tv3 = tv3 * v
  const uint64_t is_qr = FeEqual(tv3, s.gx_num);  // 9. isQR = tv3 == u
  const uint64_t m = MaskFromBit(is_qr);
  FeSelect(&y1, m, y1, y2);  // 10. y = CMOV(y2, y1, isQR)
  FeSqr(&t, w);
  FeMul(&t, t, s.gx_num);
  FeMul(&t, t, s.v2);
  FeNeg(&neg_t, t);
  FeSelect(&inv_v, m, t, neg_t);  // 1 / (tv6·D²)
  if (inv_d2 != nullptr) FeMul(inv_d2, inv_v, s.v_orig);
  FeMul(&inv_v, inv_v, s.d2);  // 1 / tv6
  // Map steps 19-25.
  FeMul(&y, s.tv1, s.u);                              // 19. y = tv1 * u
  FeMul(&y, y, y1);                                   // 20. y = y * y1
  FeSelect(&x, m, s.tv3, s.x);                        // 21. x = CMOV(x, tv3, is_gx1_square)
  FeSelect(&y, m, y1, y);                             // 22. y = CMOV(y, y1, is_gx1_square)
  const uint64_t e1 = 1 ^ (FeSgn0(s.u) ^ FeSgn0(y));  // 23. e1 = sgn0(u) == sgn0(y)
  FeNeg(&neg_y, y);                                   // 24. y = CMOV(-y, y, e1)
  FeSelect(y_out, MaskFromBit(e1), y, neg_y);
  FeMul(&inv_tv4, s.tv4_sq, inv_v);  // 1/tv4 = tv4^2 / tv4^3
  FeMul(x_out, x, inv_tv4);          // 25. x = x / tv4
  return is_qr;
}

}  // namespace

void MapToCurveSswu(const Fe& u, Fe* x, Fe* y) {
  MapState s;
  MapBegin(u, &s);
  Fe w;
  FePowC1(&w, s.base);
  MapEnd(s, w, x, y, nullptr);
}

void MapTwoToCurveAffine(const Fe& u0, const Fe& u1, Fe* x0, Fe* y0, Fe* x1, Fe* y1) {
  MapState s[2];
  MapBegin(u0, &s[0]);
  MapBegin(u1, &s[1]);
  const Fe base[2] = {s[0].base, s[1].base};
  Fe w[2];
  FePowC1x2(w, base);
  MapEnd(s[0], w[0], x0, y0, nullptr);
  MapEnd(s[1], w[1], x1, y1, nullptr);
}

ProjectivePoint Add(const ProjectivePoint& p, const ProjectivePoint& q) {
  const Fe& b = C().b;
  Fe t0, t1, t2, t3, t4, x3, y3, z3;
  FeMul(&t0, p.x, q.x);  // 1
  FeMul(&t1, p.y, q.y);
  FeMul(&t2, p.z, q.z);
  FeAdd(&t3, p.x, p.y);
  FeAdd(&t4, q.x, q.y);  // 5
  FeMul(&t3, t3, t4);
  FeAdd(&t4, t0, t1);
  FeSub(&t3, t3, t4);
  FeAdd(&t4, p.y, p.z);
  FeAdd(&x3, q.y, q.z);  // 10
  FeMul(&t4, t4, x3);
  FeAdd(&x3, t1, t2);
  FeSub(&t4, t4, x3);
  FeAdd(&x3, p.x, p.z);
  FeAdd(&y3, q.x, q.z);  // 15
  FeMul(&x3, x3, y3);
  FeAdd(&y3, t0, t2);
  FeSub(&y3, x3, y3);
  FeMul(&z3, b, t2);
  FeSub(&x3, y3, z3);  // 20
  FeAdd(&z3, x3, x3);
  FeAdd(&x3, x3, z3);
  FeSub(&z3, t1, x3);
  FeAdd(&x3, t1, x3);
  FeMul(&y3, b, y3);  // 25
  FeAdd(&t1, t2, t2);
  FeAdd(&t2, t1, t2);
  FeSub(&y3, y3, t2);
  FeSub(&y3, y3, t0);
  FeAdd(&t1, y3, y3);  // 30
  FeAdd(&y3, t1, y3);
  FeAdd(&t1, t0, t0);
  FeAdd(&t0, t1, t0);
  FeSub(&t0, t0, t2);
  FeMul(&t1, t4, y3);  // 35
  FeMul(&t2, t0, y3);
  FeMul(&y3, x3, z3);
  FeAdd(&y3, y3, t2);
  FeMul(&x3, t3, x3);
  FeSub(&x3, x3, t1);  // 40
  FeMul(&z3, t4, z3);
  FeMul(&t1, t3, t0);
  FeAdd(&z3, z3, t1);
  return ProjectivePoint{x3, y3, z3};
}

bool ToAffine(const ProjectivePoint& p, Fe* x, Fe* y) {
  Fe zinv;
  FeInv(&zinv, p.z);
  FeMul(x, p.x, zinv);
  FeMul(y, p.y, zinv);
  return FeIsZero(p.z) == 0;
}

bool MapTwoToCurve(const Fe& u0, const Fe& u1, Fe* x, Fe* y) {
  MapState s[2];
  MapBegin(u0, &s[0]);
  MapBegin(u1, &s[1]);
  // The affine sum needs 1/(x1 - x0). Map i's x is X_i/tv4_i with X_i = tv3_i (square case) or
  // tv1_i·tv3_i, known only after the exponentiations; so x1 - x0 = N/(tv4_0·tv4_1) with one of
  // four candidates N[q0][q1] = X_1(q1)·tv4_0 - X_0(q0)·tv4_1, all known now. Their product P is
  // folded into map 0's sqrt_ratio (ScaleRatio with D = P), which then also yields 1/P^2.
  Fe a[2], b[2], n[2][2], other[2][2], pa, pb, prod, d2;
  FeMul(&a[0], s[1].tv4, s[0].x);
  FeMul(&a[1], s[1].tv4, s[0].tv3);
  FeMul(&b[0], s[0].tv4, s[1].x);
  FeMul(&b[1], s[0].tv4, s[1].tv3);
  for (int q0 = 0; q0 < 2; ++q0) {
    for (int q1 = 0; q1 < 2; ++q1) FeSub(&n[q0][q1], b[q1], a[q0]);
  }
  FeMul(&pa, n[0][0], n[0][1]);
  FeMul(&pb, n[1][0], n[1][1]);
  FeMul(&prod, pa, pb);
  FeMul(&other[0][0], n[0][1], pb);  // the product of the three other candidates
  FeMul(&other[0][1], n[0][0], pb);
  FeMul(&other[1][0], n[1][1], pa);
  FeMul(&other[1][1], n[1][0], pa);
  if (FeIsZero(prod) == 1) {
    // Two candidate x coordinates coincide (probability about 2^-254 for hashed inputs; the
    // branch is the only one on the value): the complete projective addition handles P0 = ±P1.
    ProjectivePoint q0, q1;
    MapTwoToCurveAffine(u0, u1, &q0.x, &q0.y, &q1.x, &q1.y);
    q0.z = q1.z = FeOne();
    return ToAffine(Add(q0, q1), x, y);
  }
  FeSqr(&d2, prod);
  ScaleRatio(&s[0], d2);
  const Fe base[2] = {s[0].base, s[1].base};
  Fe w[2], x0, y0, x1, y1, inv_d2, inv_prod, o0, o1, o, inv_dx, lambda, t;
  FePowC1x2(w, base);
  const uint64_t q0 = MapEnd(s[0], w[0], &x0, &y0, &inv_d2);
  const uint64_t q1 = MapEnd(s[1], w[1], &x1, &y1, nullptr);
  FeMul(&inv_prod, prod, inv_d2);  // 1/P = P / P^2
  FeSelect(&o0, MaskFromBit(q1), other[0][1], other[0][0]);
  FeSelect(&o1, MaskFromBit(q1), other[1][1], other[1][0]);
  FeSelect(&o, MaskFromBit(q0), o1, o0);
  FeMul(&inv_dx, o, inv_prod);  // 1/N
  FeMul(&inv_dx, inv_dx, s[0].tv4);
  FeMul(&inv_dx, inv_dx, s[1].tv4);  // 1/(x1 - x0)
  // Affine addition (x0 != x1): lambda = (y1 - y0)/(x1 - x0), x = lambda^2 - x0 - x1,
  // y = lambda·(x0 - x) - y0.
  FeSub(&t, y1, y0);
  FeMul(&lambda, t, inv_dx);
  FeSqr(&t, lambda);
  FeSub(&t, t, x0);
  FeSub(x, t, x1);
  FeSub(&t, x0, *x);
  FeMul(&t, lambda, t);
  FeSub(y, t, y0);
  return true;
}

bool IsOnCurve(const Fe& x, const Fe& y) {
  const Constants& k = C();
  Fe rhs, lhs;
  FeSqr(&rhs, x);
  FeAdd(&rhs, rhs, k.a);
  FeMul(&rhs, rhs, x);  // x^3 - 3x
  FeAdd(&rhs, rhs, k.b);
  FeSqr(&lhs, y);
  return FeEqual(lhs, rhs) == 1;
}

bool DecompressPoint(const uint8_t in[33], Fe* x, Fe* y) {
  if (in[0] != 0x02 && in[0] != 0x03) return false;
  Fe fx;
  if (!FeFromBytes(&fx, in + 1)) return false;
  const Constants& k = C();
  Fe rhs, root, neg;
  FeSqr(&rhs, fx);
  FeAdd(&rhs, rhs, k.a);
  FeMul(&rhs, rhs, fx);
  FeAdd(&rhs, rhs, k.b);
  if (FeSqrt(&root, rhs) == 0) return false;
  FeNeg(&neg, root);
  const uint64_t want_odd = in[0] & 1;
  FeSelect(y, MaskFromBit(FeSgn0(root) ^ want_odd), neg, root);
  *x = fx;
  return true;
}

}  // namespace fedanon::crypto::p256
