// Property tests of the dedicated P-256 field and point code (crypto/p256_field.*,
// crypto/p256_point.*) against OpenSSL BIGNUM / EC_POINT on seeded random values and the edge
// values 0, 1, 2, p-2, p-1.
#include "crypto/p256_field.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "crypto/p256_point.h"
#include "gtest/gtest.h"

namespace fedanon::crypto::p256 {
namespace {

constexpr char kPrimeHex[] = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";
constexpr int kRandomCases = 2000;

struct BnDeleter {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using Bn = std::unique_ptr<BIGNUM, BnDeleter>;

class P256FieldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = BN_CTX_new();
    BIGNUM* p = nullptr;
    ASSERT_GT(BN_hex2bn(&p, kPrimeHex), 0);
    p_.reset(p);
  }
  void TearDown() override { BN_CTX_free(ctx_); }

  Bn NewBn() { return Bn(BN_new()); }
  Bn ToBn(const Fe& a) {
    uint8_t bytes[32];
    FeToBytes(bytes, a);
    return Bn(BN_bin2bn(bytes, 32, nullptr));
  }
  Fe FromBn(const BIGNUM* b) {
    uint8_t bytes[32];
    EXPECT_EQ(BN_bn2binpad(b, bytes, 32), 32);
    Fe r;
    EXPECT_TRUE(FeFromBytes(&r, bytes));
    return r;
  }
  // Seeded random elements followed by the edge values.
  std::vector<Bn> Values(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Bn> out;
    for (int i = 0; i < kRandomCases; ++i) {
      uint8_t bytes[32];
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      Bn v(BN_bin2bn(bytes, 32, nullptr));
      BN_nnmod(v.get(), v.get(), p_.get(), ctx_);
      out.push_back(std::move(v));
    }
    for (int small = 0; small <= 2; ++small) {
      Bn v = NewBn();
      BN_set_word(v.get(), small);
      out.push_back(std::move(v));
    }
    for (int below = 1; below <= 2; ++below) {
      Bn v(BN_dup(p_.get()));
      BN_sub_word(v.get(), below);
      out.push_back(std::move(v));
    }
    return out;
  }
  bool Same(const Fe& a, const BIGNUM* b) { return BN_cmp(ToBn(a).get(), b) == 0; }

  BN_CTX* ctx_ = nullptr;
  Bn p_;
};

TEST_F(P256FieldTest, BytesRoundTripAndRangeCheck) {
  for (const Bn& v : Values(1)) {
    uint8_t in[32], out[32];
    BN_bn2binpad(v.get(), in, 32);
    Fe a;
    ASSERT_TRUE(FeFromBytes(&a, in));
    FeToBytes(out, a);
    EXPECT_EQ(std::string(in, in + 32), std::string(out, out + 32));
  }
  const std::string p = absl::HexStringToBytes(kPrimeHex);
  const std::string p_plus_1 =
      absl::HexStringToBytes("ffffffff00000001000000000000000000000001000000000000000000000000");
  const std::string all_ones(32, '\xff');
  Fe a;
  for (const std::string& bad : {p, p_plus_1, all_ones}) {
    EXPECT_FALSE(FeFromBytes(&a, reinterpret_cast<const uint8_t*>(bad.data())))
        << absl::BytesToHexString(bad);
  }
}

TEST_F(P256FieldTest, MulSqrAddSubNegMatchBignum) {
  const std::vector<Bn> xs = Values(2);
  const std::vector<Bn> ys = Values(3);
  Bn want = NewBn();
  for (size_t i = 0; i < xs.size(); ++i) {
    const BIGNUM* x = xs[i].get();
    const BIGNUM* y = ys[(i * 7 + 3) % ys.size()].get();
    const Fe a = FromBn(x), b = FromBn(y);
    Fe r;
    FeMul(&r, a, b);
    BN_mod_mul(want.get(), x, y, p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << "mul " << i;
    FeSqr(&r, a);
    BN_mod_sqr(want.get(), x, p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << "sqr " << i;
    FeAdd(&r, a, b);
    BN_mod_add(want.get(), x, y, p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << "add " << i;
    FeSub(&r, a, b);
    BN_mod_sub(want.get(), x, y, p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << "sub " << i;
    FeNeg(&r, a);
    BN_mod_sub(want.get(), BN_value_one(), BN_value_one(), p_.get(), ctx_);  // 0
    BN_mod_sub(want.get(), want.get(), x, p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << "neg " << i;
    // Squaring of the edge values against each other (both operands edges).
    FeMul(&r, a, a);
    Fe s;
    FeSqr(&s, a);
    EXPECT_EQ(FeEqual(r, s), 1u);
  }
}

// The assembly (when the CPU has BMI2 and ADX) against the portable C on random values, the edge
// values, and products whose reductions hit the final correction and its carries: operands near p
// and near 2^255, powers of two and values with long runs of ones.
TEST_F(P256FieldTest, AsmMulSqrMatchPortable) {
  if (!FeUsesAsm()) GTEST_SKIP() << "no BMI2/ADX assembly on this CPU";
  std::vector<Bn> xs = Values(21);
  const char* kHex[] = {
      "ffffffff00000001000000000000000000000000fffffffffffffffffffffffe",  // p - 1
      "ffffffff00000001000000000000000000000000fffffffffffffffffffffff0",
      "ffffffff00000000ffffffffffffffffffffffffffffffffffffffffffffffff",  // p - 2^192 - ...
      "8000000000000000000000000000000000000000000000000000000000000000",
      "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
      "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
      "fffffffeffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
      "0000000000000000000000000000000000000000000000010000000000000000",
      "ffffffff000000000000000000000000000000000000000000000000ffffffff",
  };
  for (const char* hex : kHex) {
    BIGNUM* v = nullptr;
    ASSERT_GT(BN_hex2bn(&v, hex), 0);
    xs.emplace_back(v);
  }
  Bn want = NewBn();
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = i; j < xs.size(); j += 1 + (j >= xs.size() - 20 ? 0 : 97)) {
      const Fe a = FromBn(xs[i].get()), b = FromBn(xs[j].get());
      Fe fast, slow;
      FeMul(&fast, a, b);
      FeMulPortable(&slow, a, b);
      ASSERT_EQ(FeEqual(fast, slow), 1u) << "mul " << i << " " << j;
      BN_mod_mul(want.get(), xs[i].get(), xs[j].get(), p_.get(), ctx_);
      ASSERT_TRUE(Same(fast, want.get())) << "mul " << i << " " << j;
    }
    const Fe a = FromBn(xs[i].get());
    Fe fast, slow;
    FeSqr(&fast, a);
    FeSqrPortable(&slow, a);
    ASSERT_EQ(FeEqual(fast, slow), 1u) << "sqr " << i;
    // In-place use (r aliasing an operand), as the exponentiations do.
    Fe in_place = a;
    FeSqr(&in_place, in_place);
    EXPECT_EQ(FeEqual(in_place, slow), 1u) << "sqr in place " << i;
    in_place = a;
    FeMul(&in_place, in_place, in_place);
    EXPECT_EQ(FeEqual(in_place, slow), 1u) << "mul in place " << i;
  }
  // Raw Montgomery representations at the top of the range (the asm sees these limbs directly).
  Fe top{{0xfffffffffffffffeULL, 0x00000000ffffffffULL, 0, 0xffffffff00000001ULL}};  // p - 1
  Fe x = top, y = top;
  for (int k = 0; k < 200; ++k) {  // a long squaring chain agrees step by step
    FeSqr(&x, x);
    FeSqrPortable(&y, y);
    ASSERT_EQ(FeEqual(x, y), 1u) << k;
  }
}

TEST_F(P256FieldTest, InverseMatchesBignum) {
  Bn want = NewBn();
  for (const Bn& v : Values(4)) {
    Fe r;
    FeInv(&r, FromBn(v.get()));
    if (BN_is_zero(v.get())) {
      EXPECT_EQ(FeIsZero(r), 1u);  // 0^(p-2) = 0
      continue;
    }
    ASSERT_NE(BN_mod_inverse(want.get(), v.get(), p_.get(), ctx_), nullptr);
    EXPECT_TRUE(Same(r, want.get()));
  }
}

// Everything built on FeMul/FeSqr (exponentiation chains, inversions, batch inversion, square
// roots, the maps and their sum, decompression) gives the same results on the portable C and on
// the assembly.
TEST_F(P256FieldTest, PortableAndAsmPathsAgreeEndToEnd) {
  if (!FeUsesAsm()) GTEST_SKIP() << "no BMI2/ADX assembly on this CPU";
  const std::vector<Bn> vs = Values(31);
  std::vector<Fe> a;
  for (const Bn& v : vs) a.push_back(FromBn(v.get()));
  struct Results {
    std::vector<Fe> inv, pow, sqrt, batch, mx, my;
    std::vector<uint64_t> is_square;
    std::vector<bool> finite;
  };
  auto run = [&]() {
    Results r;
    for (size_t i = 0; i < a.size(); ++i) {
      Fe x, y;
      FeInv(&x, a[i]);
      r.inv.push_back(x);
      const Fe in[2] = {a[i], a[(i + 1) % a.size()]};
      Fe out[2];
      FePowC1x2(out, in);
      r.pow.push_back(out[0]);
      r.pow.push_back(out[1]);
      r.is_square.push_back(FeSqrt(&x, a[i]));
      r.sqrt.push_back(x);
      if (i % 8 == 0) {
        r.finite.push_back(MapTwoToCurve(a[i], a[(i + 3) % a.size()], &x, &y));
        r.mx.push_back(x);
        r.my.push_back(y);
      }
    }
    r.batch.resize(a.size());
    std::vector<Fe> scratch(a.size());
    FeBatchInv(r.batch.data(), a.data(), a.size(), scratch.data());
    return r;
  };
  const Results fast = run();
  FeSetAsmForTesting(false);
  ASSERT_FALSE(FeUsesAsm());
  const Results slow = run();
  FeSetAsmForTesting(true);
  ASSERT_TRUE(FeUsesAsm());
  auto same = [](const std::vector<Fe>& x, const std::vector<Fe>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (FeEqual(x[i], y[i]) != 1) return false;
    }
    return true;
  };
  EXPECT_TRUE(same(fast.inv, slow.inv));
  EXPECT_TRUE(same(fast.pow, slow.pow));
  EXPECT_TRUE(same(fast.sqrt, slow.sqrt));
  EXPECT_EQ(fast.is_square, slow.is_square);
  EXPECT_TRUE(same(fast.batch, slow.batch));
  EXPECT_TRUE(same(fast.batch, fast.inv));
  EXPECT_EQ(fast.finite, slow.finite);
  EXPECT_TRUE(same(fast.mx, slow.mx));
  EXPECT_TRUE(same(fast.my, slow.my));
}

TEST_F(P256FieldTest, BatchInverseEqualsSingleInverses) {
  const std::vector<Bn> vs = Values(12);  // random, then 0, 1, 2, p-1, p-2
  std::vector<Fe> a;
  for (const Bn& v : vs) a.push_back(FromBn(v.get()));
  // Zeros in the middle and at both ends as well.
  a.insert(a.begin(), FeZero());
  a.insert(a.begin() + 100, FeZero());
  a.push_back(FeZero());
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, a.size()}) {
    std::vector<Fe> r(n), scratch(n);
    FeBatchInv(r.data(), a.data(), n, scratch.data());
    for (size_t i = 0; i < n; ++i) {
      Fe want;
      FeInv(&want, a[i]);
      ASSERT_EQ(FeEqual(r[i], want), 1u) << "n " << n << " i " << i;
    }
  }
  // In place.
  std::vector<Fe> r = a, scratch(a.size());
  FeBatchInv(r.data(), r.data(), r.size(), scratch.data());
  for (size_t i = 0; i < a.size(); ++i) {
    Fe check;
    FeMul(&check, r[i], a[i]);
    EXPECT_EQ(FeEqual(check, FeIsZero(a[i]) ? FeZero() : FeOne()), 1u) << i;
  }
}

TEST_F(P256FieldTest, SqrtAndPowC1MatchBignum) {
  Bn c1(BN_dup(p_.get()));
  BN_sub_word(c1.get(), 3);
  BN_rshift(c1.get(), c1.get(), 2);
  Bn want = NewBn();
  Bn neg = NewBn();
  int squares = 0;
  for (const Bn& v : Values(5)) {
    const Fe a = FromBn(v.get());
    Fe r;
    FePowC1(&r, a);
    BN_mod_exp(want.get(), v.get(), c1.get(), p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get()));
    const uint64_t is_square = FeSqrt(&r, a);
    const bool bn_square = BN_mod_sqrt(want.get(), v.get(), p_.get(), ctx_) != nullptr;
    EXPECT_EQ(is_square == 1, bn_square);
    if (bn_square) {
      ++squares;
      BN_sub(neg.get(), p_.get(), want.get());
      BN_nnmod(neg.get(), neg.get(), p_.get(), ctx_);
      EXPECT_TRUE(Same(r, want.get()) || Same(r, neg.get()));
    }
  }
  // The two-lane exponentiation equals two single ones.
  const std::vector<Bn> xs = Values(9);
  for (size_t i = 0; i + 1 < xs.size(); i += 2) {
    const Fe in[2] = {FromBn(xs[i].get()), FromBn(xs[i + 1].get())};
    Fe out[2], one0, one1;
    FePowC1x2(out, in);
    FePowC1(&one0, in[0]);
    FePowC1(&one1, in[1]);
    EXPECT_EQ(FeEqual(out[0], one0) & FeEqual(out[1], one1), 1u) << i;
  }
  // About half of the random values are squares.
  EXPECT_GT(squares, kRandomCases / 3);
  EXPECT_LT(squares, 2 * kRandomCases / 3 + 5);
  Fe r;
  EXPECT_EQ(FeSqrt(&r, FeFromUint64(10)), 1u);  // sqrt(-Z) of the SSWU map exists
  Fe minus_one;
  FeNeg(&minus_one, FeOne());
  EXPECT_EQ(FeSqrt(&r, minus_one), 0u);  // p = 3 mod 4
}

TEST_F(P256FieldTest, WideReductionMatchesBignum) {
  std::mt19937_64 rng(6);
  Bn want = NewBn();
  std::vector<std::string> inputs = {std::string(48, '\0'), std::string(48, '\xff')};
  for (int i = 0; i < kRandomCases; ++i) {
    std::string s(48, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    inputs.push_back(s);
  }
  // hi = 0, lo = p (the 32-byte part needs its own reduction).
  inputs.push_back(std::string(16, '\0') + absl::HexStringToBytes(kPrimeHex));
  for (const std::string& in : inputs) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(in.data());
    Fe r;
    FeFromWideBytes(&r, bytes);
    Bn v(BN_bin2bn(bytes, 48, nullptr));
    BN_nnmod(want.get(), v.get(), p_.get(), ctx_);
    EXPECT_TRUE(Same(r, want.get())) << absl::BytesToHexString(in);
  }
}

TEST_F(P256FieldTest, SelectEqualZeroAndSgn0) {
  const Fe zero = FeZero(), one = FeOne(), two = FeFromUint64(2);
  Fe r;
  FeSelect(&r, MaskFromBit(1), one, two);
  EXPECT_EQ(FeEqual(r, one), 1u);
  FeSelect(&r, MaskFromBit(0), one, two);
  EXPECT_EQ(FeEqual(r, two), 1u);
  EXPECT_EQ(FeIsZero(zero), 1u);
  EXPECT_EQ(FeIsZero(one), 0u);
  EXPECT_EQ(FeEqual(one, two), 0u);
  EXPECT_EQ(FeSgn0(zero), 0u);
  EXPECT_EQ(FeSgn0(one), 1u);
  EXPECT_EQ(FeSgn0(two), 0u);
  Fe minus_one;
  FeNeg(&minus_one, one);
  EXPECT_EQ(FeSgn0(minus_one), 0u);  // p - 1 is even
}

// Points: the complete addition and the decompression against OpenSSL.
class P256PointTest : public P256FieldTest {
 protected:
  void SetUp() override {
    P256FieldTest::SetUp();
    group_ = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    ASSERT_NE(group_, nullptr);
  }
  void TearDown() override {
    EC_GROUP_free(group_);
    P256FieldTest::TearDown();
  }
  // A random multiple of the generator, as an OpenSSL point and as our affine coordinates.
  EC_POINT* RandomPoint(std::mt19937_64& rng, Fe* x, Fe* y) {
    uint8_t kb[32];
    for (uint8_t& b : kb) b = static_cast<uint8_t>(rng());
    Bn k(BN_bin2bn(kb, 32, nullptr));
    EC_POINT* pt = EC_POINT_new(group_);
    EXPECT_EQ(EC_POINT_mul(group_, pt, k.get(), nullptr, nullptr, ctx_), 1);
    Bn bx = NewBn(), by = NewBn();
    EXPECT_EQ(EC_POINT_get_affine_coordinates(group_, pt, bx.get(), by.get(), ctx_), 1);
    *x = FromBn(bx.get());
    *y = FromBn(by.get());
    return pt;
  }
  void ExpectAffine(const EC_POINT* pt, const Fe& x, const Fe& y) {
    Bn bx = NewBn(), by = NewBn();
    ASSERT_EQ(EC_POINT_get_affine_coordinates(group_, pt, bx.get(), by.get(), ctx_), 1);
    EXPECT_TRUE(Same(x, bx.get()));
    EXPECT_TRUE(Same(y, by.get()));
  }
  EC_GROUP* group_ = nullptr;
};

TEST_F(P256PointTest, CompleteAdditionMatchesOpenSsl) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    Fe x0, y0, x1, y1, x, y;
    EC_POINT* p0 = RandomPoint(rng, &x0, &y0);
    EC_POINT* p1 = RandomPoint(rng, &x1, &y1);
    EXPECT_TRUE(IsOnCurve(x0, y0));
    const ProjectivePoint q0{x0, y0, FeOne()};
    // Scale the second point's projective coordinates by a random factor.
    Fe lambda = FeFromUint64(rng() | 1), x1s, y1s;
    FeMul(&x1s, x1, lambda);
    FeMul(&y1s, y1, lambda);
    const ProjectivePoint q1{x1s, y1s, lambda};
    EC_POINT* sum = EC_POINT_new(group_);
    ASSERT_EQ(EC_POINT_add(group_, sum, p0, p1, ctx_), 1);
    ASSERT_TRUE(ToAffine(Add(q0, q1), &x, &y));
    ExpectAffine(sum, x, y);
    // Doubling through the same formula.
    ASSERT_EQ(EC_POINT_dbl(group_, sum, p0, ctx_), 1);
    ASSERT_TRUE(ToAffine(Add(q0, q0), &x, &y));
    ExpectAffine(sum, x, y);
    // P + (-P) is the point at infinity; P + infinity is P.
    Fe neg_y;
    FeNeg(&neg_y, y0);
    EXPECT_FALSE(ToAffine(Add(q0, ProjectivePoint{x0, neg_y, FeOne()}), &x, &y));
    ASSERT_TRUE(ToAffine(Add(q0, ProjectivePoint{FeZero(), FeOne(), FeZero()}), &x, &y));
    EXPECT_EQ(FeEqual(x, x0) & FeEqual(y, y0), 1u);
    EC_POINT_free(p0);
    EC_POINT_free(p1);
    EC_POINT_free(sum);
  }
}

// MapTwoToCurve's affine sum (inverse folded into an exponentiation) against OpenSSL's addition of
// the two single maps, and its fallback for equal x: u1 = u0 (doubling) and u1 = -u0 (infinity).
TEST_F(P256PointTest, MapTwoToCurveMatchesOpenSslSumIncludingEqualX) {
  auto to_point = [&](const Fe& x, const Fe& y) {
    EC_POINT* pt = EC_POINT_new(group_);
    EXPECT_EQ(EC_POINT_set_affine_coordinates(group_, pt, ToBn(x).get(), ToBn(y).get(), ctx_), 1);
    return pt;
  };
  const std::vector<Bn> us = Values(11);
  for (size_t i = 0; i + 1 < us.size(); i += 2) {
    const Fe u0 = FromBn(us[i].get());
    for (int kind = 0; kind < 3; ++kind) {
      Fe u1 = FromBn(us[i + 1].get());
      if (kind == 1) u1 = u0;
      if (kind == 2) FeNeg(&u1, u0);
      Fe x0, y0, x1, y1, x, y;
      MapToCurveSswu(u0, &x0, &y0);
      MapToCurveSswu(u1, &x1, &y1);
      EC_POINT* p0 = to_point(x0, y0);
      EC_POINT* p1 = to_point(x1, y1);
      EC_POINT* sum = EC_POINT_new(group_);
      ASSERT_EQ(EC_POINT_add(group_, sum, p0, p1, ctx_), 1);
      const bool finite = MapTwoToCurve(u0, u1, &x, &y);
      // u and -u give the same x and opposite y (sgn0), unless u = 0.
      ASSERT_EQ(finite, EC_POINT_is_at_infinity(group_, sum) == 0) << i << " kind " << kind;
      if (finite) ExpectAffine(sum, x, y);
      EC_POINT_free(p0);
      EC_POINT_free(p1);
      EC_POINT_free(sum);
    }
    if (i > 600) break;  // the three kinds on 300 pairs plus the edge values below
  }
  for (uint64_t small : {0, 1, 2}) {
    Fe x, y, neg;
    ASSERT_TRUE(MapTwoToCurve(FeFromUint64(small), FeFromUint64(small), &x, &y));
    EXPECT_TRUE(IsOnCurve(x, y));
    FeNeg(&neg, FeFromUint64(small));
    EXPECT_EQ(MapTwoToCurve(FeFromUint64(small), neg, &x, &y), small == 0);
  }
}

TEST_F(P256PointTest, DecompressionMatchesOpenSsl) {
  std::mt19937_64 rng(8);
  for (int i = 0; i < 300; ++i) {
    Fe x0, y0, x, y;
    EC_POINT* pt = RandomPoint(rng, &x0, &y0);
    uint8_t enc[33];
    ASSERT_EQ(EC_POINT_point2oct(group_, pt, POINT_CONVERSION_COMPRESSED, enc, 33, ctx_), 33u);
    ASSERT_TRUE(DecompressPoint(enc, &x, &y));
    EXPECT_EQ(FeEqual(x, x0) & FeEqual(y, y0), 1u);
    EC_POINT_free(pt);
  }
  // Random x: accepted exactly when OpenSSL accepts it, with OpenSSL's y.
  int accepted = 0;
  EC_POINT* pt = EC_POINT_new(group_);
  for (int i = 0; i < kRandomCases; ++i) {
    uint8_t enc[33];
    for (uint8_t& b : enc) b = static_cast<uint8_t>(rng());
    enc[0] = static_cast<uint8_t>(0x02 | (enc[0] & 1));
    if (i % 50 == 0) std::fill(enc + 1, enc + 33, 0xff);  // x >= p
    Fe x, y;
    const bool ours = DecompressPoint(enc, &x, &y);
    const bool theirs = EC_POINT_oct2point(group_, pt, enc, 33, ctx_) == 1;
    ASSERT_EQ(ours, theirs) << absl::BytesToHexString(std::string(enc, enc + 33));
    if (ours) {
      ++accepted;
      ExpectAffine(pt, x, y);
    }
  }
  EC_POINT_free(pt);
  EXPECT_GT(accepted, kRandomCases / 3);
  uint8_t bad_prefix[33] = {0x04};
  Fe x, y;
  EXPECT_FALSE(DecompressPoint(bad_prefix, &x, &y));
}

}  // namespace
}  // namespace fedanon::crypto::p256
