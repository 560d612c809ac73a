// P-256 point operations on crypto/p256_field for RFC 9380 hash-to-curve (suite
// P256_XMD:SHA-256_SSWU_RO_) and for decoding compressed points. Internal to crypto/; the public
// API is in crypto/ec_commutative_cipher.h.
//
// The simplified SWU map uses RFC 9380's straight-line form (Appendix F.2) with the combined
// sqrt_ratio for q = 3 mod 4: one exponentiation per map, which also yields the inverse of the
// map's denominator (so no inversion per map: affine output for a few multiplications). The two
// maps' exponentiations run side by side, and the inverse the affine addition of the two points
// needs is folded into one of them, so hash_to_curve takes no inversion at all. The complete
// projective formula of Renes, Costello and Batina (2016, Algorithm 4, a = -3) is the fallback for
// equal x coordinates. Every step is constant time (masked selections, fixed addition chains)
// except that fallback's branch, taken with probability about 2^-254. DecompressPoint works on a
// public (received) value and returns early on invalid input.
#pragma once

#include <cstdint>

#include "crypto/p256_field.h"

namespace fedanon::crypto::p256 {

// Homogeneous projective point: x = X/Z, y = Y/Z; Z = 0 is the point at infinity.
struct ProjectivePoint {
  Fe x, y, z;
};

// RFC 9380 §6.6.2 map_to_curve_simple_swu for P-256 (Z = -10): affine (x, y).
void MapToCurveSswu(const Fe& u, Fe* x, Fe* y);
// The maps of u0 and u1 with their exponentiations interleaved (same results as two calls).
void MapTwoToCurveAffine(const Fe& u0, const Fe& u1, Fe* x0, Fe* y0, Fe* x1, Fe* y1);
// Complete addition (any inputs, including equal points and infinity).
ProjectivePoint Add(const ProjectivePoint& p, const ProjectivePoint& q);
// Affine coordinates; false for the point at infinity.
bool ToAffine(const ProjectivePoint& p, Fe* x, Fe* y);
// hash_to_curve's map and add of hash_to_field's u0, u1 (clear_cofactor is the identity for
// P-256), affine, with no inversion at all: the inverse the affine addition needs is folded into
// one of the maps' exponentiations. False only for the point at infinity (probability about
// 2^-256).
bool MapTwoToCurve(const Fe& u0, const Fe& u1, Fe* x, Fe* y);
// y^2 == x^3 - 3x + b.
bool IsOnCurve(const Fe& x, const Fe& y);
// 33-byte SEC1 compressed point (0x02 / 0x03 || x): false unless the prefix is 0x02 or 0x03,
// x < p and x^3 - 3x + b is a square.
bool DecompressPoint(const uint8_t in[33], Fe* x, Fe* y);

}  // namespace fedanon::crypto::p256
