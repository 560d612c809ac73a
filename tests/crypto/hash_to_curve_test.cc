// Known-answer tests for RFC 9380 (expand_message_xmd, hash_to_field, simplified SWU,
// hash_to_curve for P256_XMD:SHA-256_SSWU_RO_). Vector sources: see the headers of the files in
// tests/testdata/crypto and docs/crypto.md. Differential tests: on seeded random inputs the
// implementation on crypto/p256_field equals the previous BIGNUM one
// (tests/crypto/reference_hash_to_curve.*), and Encrypt equals the reference hash times the key.
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include <random>
#include <string>

#include "absl/strings/escaping.h"
#include "crypto/ec_commutative_cipher.h"
#include "crypto/secret_bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/crypto/reference_hash_to_curve.h"
#include "tests/crypto/test_vectors.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::crypto::testing::ReadVectorFile;
using ::fedanon::crypto::testing::VectorFile;
using ::fedanon::testing::StatusIs;

std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

constexpr char kP256Hex[] = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";

// True if `uncompressed` (65 bytes) decodes to a point on P-256, checked with OpenSSL directly.
bool OnCurve(const std::string& uncompressed) {
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  const bool ok =
      EC_POINT_oct2point(group, pt, reinterpret_cast<const unsigned char*>(uncompressed.data()),
                         uncompressed.size(), nullptr) == 1 &&
      EC_POINT_is_on_curve(group, pt, nullptr) == 1;
  EC_POINT_free(pt);
  EC_GROUP_free(group);
  return ok;
}

void CheckXmdFile(const std::string& file) {
  VectorFile vf;
  ASSERT_TRUE(ReadVectorFile(file, &vf)) << file;
  const std::string dst = vf.header.at("DST");
  ASSERT_EQ(vf.vectors.size(), 10u) << file;
  for (const auto& v : vf.vectors) {
    const std::string& msg = v.at("msg");
    const size_t len = std::stoul(v.at("len_in_bytes"));
    ASSERT_OK_AND_ASSIGN(const std::string out, ExpandMessageXmdSha256(msg, dst, len));
    EXPECT_EQ(Hex(out), v.at("uniform_bytes")) << "msg=" << msg.substr(0, 8) << " len=" << len;
  }
}

TEST(ExpandMessageXmdTest, Rfc9380AppendixK1) {
  CheckXmdFile("rfc9380_k1_expand_message_xmd_sha256.txt");
}

TEST(ExpandMessageXmdTest, Rfc9380AppendixK2LongDst) {
  CheckXmdFile("rfc9380_k2_expand_message_xmd_sha256_long_dst.txt");
}

TEST(ExpandMessageXmdTest, RejectsBadParameters) {
  EXPECT_THAT(ExpandMessageXmdSha256("abc", "", 32),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(ExpandMessageXmdSha256("abc", "DST", 0),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(ExpandMessageXmdSha256("abc", "DST", 255 * 32 + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  ASSERT_OK_AND_ASSIGN(const std::string max, ExpandMessageXmdSha256("abc", "DST", 255 * 32));
  EXPECT_EQ(max.size(), 255u * 32u);
  // len_in_bytes is hashed into b_0, so a shorter output is not a prefix of a longer one.
  ASSERT_OK_AND_ASSIGN(const std::string a, ExpandMessageXmdSha256("abc", "DST", 33));
  ASSERT_OK_AND_ASSIGN(const std::string b, ExpandMessageXmdSha256("abc", "DST", 64));
  EXPECT_NE(a, b.substr(0, 33));
}

class HashToCurveKatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ReadVectorFile("rfc9380_j11_p256_xmd_sha256_sswu_ro.txt", &vf_));
    dst_ = vf_.header.at("DST");
    ASSERT_EQ(dst_, "QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_");
    ASSERT_EQ(vf_.vectors.size(), 5u);
  }
  VectorFile vf_;
  std::string dst_;
};

TEST_F(HashToCurveKatTest, MessagesAreTheRfcOnes) {
  EXPECT_EQ(vf_.vectors[0].at("msg"), "");
  EXPECT_EQ(vf_.vectors[1].at("msg"), "abc");
  EXPECT_EQ(vf_.vectors[2].at("msg"), "abcdef0123456789");
  EXPECT_EQ(vf_.vectors[3].at("msg"), "q128_" + std::string(128, 'q'));
  EXPECT_EQ(vf_.vectors[4].at("msg"), "a512_" + std::string(512, 'a'));
}

TEST_F(HashToCurveKatTest, HashToField) {
  for (const auto& v : vf_.vectors) {
    ASSERT_OK_AND_ASSIGN(const auto u, HashToFieldP256(v.at("msg"), dst_));
    EXPECT_EQ(Hex(u[0]), v.at("u[0]"));
    EXPECT_EQ(Hex(u[1]), v.at("u[1]"));
  }
}

TEST_F(HashToCurveKatTest, MapToCurve) {
  for (const auto& v : vf_.vectors) {
    for (const char* q : {"Q0", "Q1"}) {
      const std::string u = absl::HexStringToBytes(v.at(q == std::string("Q0") ? "u[0]" : "u[1]"));
      ASSERT_OK_AND_ASSIGN(const std::string pt, MapToCurveSswuP256(u));
      ASSERT_EQ(pt.size(), 65u);
      EXPECT_EQ(Hex(pt.substr(1, 32)), v.at(std::string(q) + ".x"));
      EXPECT_EQ(Hex(pt.substr(33, 32)), v.at(std::string(q) + ".y"));
    }
  }
}

TEST_F(HashToCurveKatTest, HashToCurve) {
  for (const auto& v : vf_.vectors) {
    ASSERT_OK_AND_ASSIGN(const std::string pt, HashToCurve(v.at("msg"), dst_));
    ASSERT_EQ(pt.size(), 65u);
    EXPECT_EQ(static_cast<uint8_t>(pt[0]), 0x04);
    EXPECT_EQ(Hex(pt.substr(1, 32)), v.at("P.x")) << "msg=" << v.at("msg").substr(0, 8);
    EXPECT_EQ(Hex(pt.substr(33, 32)), v.at("P.y")) << "msg=" << v.at("msg").substr(0, 8);
    EXPECT_TRUE(OnCurve(pt));
  }
}

TEST(HashToCurveTest, DomainSeparation) {
  ASSERT_OK_AND_ASSIGN(const std::string a, HashToCurve("alice", "DST-A"));
  ASSERT_OK_AND_ASSIGN(const std::string b, HashToCurve("alice", "DST-B"));
  ASSERT_OK_AND_ASSIGN(const std::string c, HashToCurve("alicf", "DST-A"));
  ASSERT_OK_AND_ASSIGN(const std::string a2, HashToCurve("alice", "DST-A"));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a, a2);
  EXPECT_THAT(HashToCurve("alice", ""), StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(MapToCurveTest, ExceptionalAndEdgeInputsGivePointsOnTheCurve) {
  std::string p = absl::HexStringToBytes(kP256Hex);
  std::string p_minus_1 = p;
  p_minus_1.back() = static_cast<char>(p_minus_1.back() - 1);
  std::string zero(32, '\0');
  std::string one(32, '\0');
  one.back() = 1;
  // u = 0 hits the exceptional case tv2 == 0 of the SSWU map.
  for (const std::string& u : {zero, one, p_minus_1}) {
    ASSERT_OK_AND_ASSIGN(const std::string pt, MapToCurveSswuP256(u));
    EXPECT_TRUE(OnCurve(pt)) << Hex(u);
  }
  // -u maps to the same x with the opposite y (sgn0 rule): sgn0(y) == sgn0(u).
  ASSERT_OK_AND_ASSIGN(const std::string q1, MapToCurveSswuP256(one));
  ASSERT_OK_AND_ASSIGN(const std::string qm1, MapToCurveSswuP256(p_minus_1));
  EXPECT_EQ(q1.substr(1, 32), qm1.substr(1, 32));
  EXPECT_NE(q1.substr(33), qm1.substr(33));
  EXPECT_EQ(static_cast<uint8_t>(q1.back()) & 1, 1);
  EXPECT_EQ(static_cast<uint8_t>(qm1.back()) & 1, 0);

  EXPECT_THAT(MapToCurveSswuP256(p), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(MapToCurveSswuP256("short"), StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(HashToCurveTest, ManyMessagesLandOnTheCurve) {
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(const std::string pt, HashToCurve("id-" + std::to_string(i), "T"));
    EXPECT_TRUE(OnCurve(pt));
  }
}

constexpr int kDifferentialCases = 3000;

std::string RandomBytesOf(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(HashToCurveDifferentialTest, MatchesReferenceOnRandomMessages) {
  std::mt19937_64 rng(20261126);
  for (int i = 0; i < kDifferentialCases; ++i) {
    const std::string msg = RandomBytesOf(rng, rng() % 200);
    // Mostly the fedanon DST; sometimes a random one, also over 255 bytes (§5.3.3).
    std::string dst(kIdHashDst);
    if (i % 4 == 1) dst = RandomBytesOf(rng, 1 + rng() % 64);
    if (i % 50 == 3) dst = RandomBytesOf(rng, 256 + rng() % 100);
    ASSERT_OK_AND_ASSIGN(const std::string got, HashToCurve(msg, dst));
    ASSERT_OK_AND_ASSIGN(const std::string want, reference::HashToCurve(msg, dst));
    ASSERT_EQ(Hex(got), Hex(want)) << "case " << i << " msg " << Hex(msg);
  }
}

TEST(HashToCurveDifferentialTest, MapMatchesReferenceOnRandomAndEdgeInputs) {
  std::mt19937_64 rng(30);
  const std::string p = absl::HexStringToBytes(kP256Hex);
  std::vector<std::string> inputs;
  for (int i = 0; i < kDifferentialCases; ++i) {
    std::string u = RandomBytesOf(rng, 32);
    if (u >= p) u[0] = 0x7f;  // keep it below p
    inputs.push_back(u);
  }
  for (uint8_t small = 0; small < 16; ++small)
    inputs.push_back(std::string(31, '\0') + char(small));
  for (uint8_t below = 1; below < 16; ++below) {
    std::string u = p;
    u.back() = static_cast<char>(static_cast<uint8_t>(u.back()) - below);
    inputs.push_back(u);
  }
  for (const std::string& u : inputs) {
    ASSERT_OK_AND_ASSIGN(const std::string got, MapToCurveSswuP256(u));
    ASSERT_OK_AND_ASSIGN(const std::string want, reference::MapToCurveSswuP256(u));
    ASSERT_EQ(Hex(got), Hex(want)) << "u " << Hex(u);
  }
}

// Encrypt hands the two mapped points to OpenSSL's EC_POINT_add and multiplies the Jacobian sum:
// the result must be the reference hash times the key, computed here with plain OpenSSL calls.
TEST(HashToCurveDifferentialTest, EncryptIsReferenceHashTimesKey) {
  std::mt19937_64 rng(40);
  const std::string key_bytes =
      absl::HexStringToBytes("3b1f7c2a9e5d4c6b8a7f6e5d4c3b2a190807060504030201f0e1d2c3b4a59687");
  ASSERT_OK_AND_ASSIGN(const auto cipher,
                       EcCommutativeCipher::CreateFromKey(SecretBytes::CopyFrom(key_bytes)));
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  BIGNUM* k = BN_bin2bn(reinterpret_cast<const unsigned char*>(key_bytes.data()), 32, nullptr);
  ASSERT_NE(k, nullptr);
  for (int i = 0; i < 300; ++i) {
    const std::string id = RandomBytesOf(rng, rng() % 40);
    ASSERT_OK_AND_ASSIGN(const std::string h, reference::HashToCurve(id, kIdHashDst));
    ASSERT_EQ(EC_POINT_oct2point(group, pt, reinterpret_cast<const unsigned char*>(h.data()),
                                 h.size(), nullptr),
              1);
    ASSERT_EQ(EC_POINT_mul(group, pt, nullptr, pt, k, nullptr), 1);
    std::string want(33, '\0');
    ASSERT_EQ(EC_POINT_point2oct(group, pt, POINT_CONVERSION_COMPRESSED,
                                 reinterpret_cast<unsigned char*>(want.data()), 33, nullptr),
              33u);
    ASSERT_OK_AND_ASSIGN(const std::string got, cipher->Encrypt(id));
    ASSERT_EQ(Hex(got), Hex(want)) << "id " << Hex(id);
  }
  BN_free(k);
  EC_POINT_free(pt);
  EC_GROUP_free(group);
}

// The batch paths (blocks of 128 products encoded with one inversion each, several blocks and a
// partial one per thread) against OpenSSL's own multiplication and point2oct, for Encrypt and for
// ReEncrypt under a second key.
TEST(HashToCurveDifferentialTest, BatchesAreReferenceHashTimesKey) {
  std::mt19937_64 rng(41);
  const std::string key_a =
      absl::HexStringToBytes("3b1f7c2a9e5d4c6b8a7f6e5d4c3b2a190807060504030201f0e1d2c3b4a59687");
  const std::string key_b =
      absl::HexStringToBytes("00000000000000000000000000000000000000000000000000000000000000ff");
  ASSERT_OK_AND_ASSIGN(const auto a,
                       EcCommutativeCipher::CreateFromKey(SecretBytes::CopyFrom(key_a)));
  ASSERT_OK_AND_ASSIGN(const auto b,
                       EcCommutativeCipher::CreateFromKey(SecretBytes::CopyFrom(key_b)));
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  BIGNUM* ka = BN_bin2bn(reinterpret_cast<const unsigned char*>(key_a.data()), 32, nullptr);
  BIGNUM* kb = BN_bin2bn(reinterpret_cast<const unsigned char*>(key_b.data()), 32, nullptr);
  ASSERT_NE(ka, nullptr);
  ASSERT_NE(kb, nullptr);
  auto mul_encode = [&](const BIGNUM* k) {
    EXPECT_EQ(EC_POINT_mul(group, pt, nullptr, pt, k, nullptr), 1);
    std::string out(33, '\0');
    EXPECT_EQ(EC_POINT_point2oct(group, pt, POINT_CONVERSION_COMPRESSED,
                                 reinterpret_cast<unsigned char*>(out.data()), 33, nullptr),
              33u);
    return out;
  };
  std::vector<std::string> ids, want_a, want_ab;
  for (int i = 0; i < 301; ++i) {
    ids.push_back(RandomBytesOf(rng, 1 + rng() % 30));
    ASSERT_OK_AND_ASSIGN(const std::string h, reference::HashToCurve(ids.back(), kIdHashDst));
    ASSERT_EQ(EC_POINT_oct2point(group, pt, reinterpret_cast<const unsigned char*>(h.data()),
                                 h.size(), nullptr),
              1);
    want_a.push_back(mul_encode(ka));
    want_ab.push_back(mul_encode(kb));  // pt is now H·ka, so this is H·ka·kb
  }
  for (int threads : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(const std::vector<std::string> got_a, a->EncryptBatch(ids, threads));
    ASSERT_EQ(got_a.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(Hex(got_a[i]), Hex(want_a[i])) << i;
    ASSERT_OK_AND_ASSIGN(const std::vector<std::string> got_ab, b->ReEncryptBatch(got_a, threads));
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(Hex(got_ab[i]), Hex(want_ab[i])) << i;
  }
  BN_free(ka);
  BN_free(kb);
  EC_POINT_free(pt);
  EC_GROUP_free(group);
}

}  // namespace
}  // namespace fedanon::crypto
