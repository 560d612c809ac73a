#include "crypto/ec_commutative_cipher.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "crypto/secret_bytes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::fedanon::testing::StatusIs;
using Cipher = std::unique_ptr<EcCommutativeCipher>;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr char kOrderHex[] = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";
constexpr char kPrimeHex[] = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";

Cipher NewCipher() {
  auto c = EcCommutativeCipher::CreateWithNewKey();
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

Cipher CipherFromHex(const std::string& hex) {
  auto c = EcCommutativeCipher::CreateFromKey(SecretBytes::CopyFrom(absl::HexStringToBytes(hex)));
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

// Random identifiers of varying length (including empty and binary ones).
std::vector<std::string> RandomIds(size_t n) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) {
    auto len = RandomBytes(1);
    auto id = RandomBytes((*len).data()[0] % 40);
    ids.emplace_back(id->AsStringView());
  }
  ids[0] = "";
  return ids;
}

// Compressed encoding of a 65-byte uncompressed point (computed with OpenSSL directly).
std::string Compress(const std::string& uncompressed) {
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  std::string out(33, '\0');
  EXPECT_EQ(
      EC_POINT_oct2point(group, pt, reinterpret_cast<const unsigned char*>(uncompressed.data()),
                         uncompressed.size(), nullptr),
      1);
  EXPECT_EQ(EC_POINT_point2oct(group, pt, POINT_CONVERSION_COMPRESSED,
                               reinterpret_cast<unsigned char*>(out.data()), out.size(), nullptr),
            33u);
  EC_POINT_free(pt);
  EC_GROUP_free(group);
  return out;
}

bool CompressedXOnCurve(const std::string& x32) {
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  const std::string enc = std::string("\x02", 1) + x32;
  const bool ok = EC_POINT_oct2point(group, pt, reinterpret_cast<const unsigned char*>(enc.data()),
                                     enc.size(), nullptr) == 1;
  EC_POINT_free(pt);
  EC_GROUP_free(group);
  return ok;
}

TEST(EcCommutativeCipherTest, CiphertextFormatAndDeterminism) {
  const Cipher a = NewCipher();
  ASSERT_OK_AND_ASSIGN(const std::string c1, a->Encrypt("alice@example.org"));
  ASSERT_OK_AND_ASSIGN(const std::string c2, a->Encrypt("alice@example.org"));
  ASSERT_EQ(c1.size(), kCompressedPointSize);
  EXPECT_TRUE(c1[0] == 0x02 || c1[0] == 0x03);
  EXPECT_EQ(c1, c2);
}

TEST(EcCommutativeCipherTest, TwoPartyCommutation) {
  for (int keys = 0; keys < 4; ++keys) {
    const Cipher a = NewCipher();
    const Cipher b = NewCipher();
    for (const std::string& id : RandomIds(50)) {
      ASSERT_OK_AND_ASSIGN(const std::string ea, a->Encrypt(id));
      ASSERT_OK_AND_ASSIGN(const std::string eb, b->Encrypt(id));
      ASSERT_OK_AND_ASSIGN(const std::string eba, b->ReEncrypt(ea));
      ASSERT_OK_AND_ASSIGN(const std::string eab, a->ReEncrypt(eb));
      EXPECT_EQ(eab, eba) << absl::BytesToHexString(id);
      EXPECT_NE(ea, eb);
    }
  }
}

TEST(EcCommutativeCipherTest, ThreePartyCommutationInEveryOrder) {
  std::vector<Cipher> parties;
  for (int i = 0; i < 3; ++i) parties.push_back(NewCipher());
  for (const std::string& id : RandomIds(20)) {
    std::set<std::string> results;
    std::vector<int> order = {0, 1, 2};
    do {
      ASSERT_OK_AND_ASSIGN(std::string c, parties[order[0]]->Encrypt(id));
      ASSERT_OK_AND_ASSIGN(c, parties[order[1]]->ReEncrypt(c));
      ASSERT_OK_AND_ASSIGN(c, parties[order[2]]->ReEncrypt(c));
      results.insert(c);
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(results.size(), 1u);
  }
}

TEST(EcCommutativeCipherTest, DecryptInvertsEncryptAndReEncrypt) {
  const Cipher a = NewCipher();
  const Cipher b = NewCipher();
  for (const std::string& id : RandomIds(30)) {
    ASSERT_OK_AND_ASSIGN(const std::string h, HashToCurve(id, kIdHashDst));
    ASSERT_OK_AND_ASSIGN(const std::string ea, a->Encrypt(id));
    ASSERT_OK_AND_ASSIGN(const std::string da, a->Decrypt(ea));
    EXPECT_EQ(da, Compress(h));
    // Peeling the layers in the other order: D_a(E_b(E_a(x))) == E_b(x).
    ASSERT_OK_AND_ASSIGN(const std::string eab, b->ReEncrypt(ea));
    ASSERT_OK_AND_ASSIGN(const std::string eb_only, a->Decrypt(eab));
    ASSERT_OK_AND_ASSIGN(const std::string eb, b->Encrypt(id));
    EXPECT_EQ(eb_only, eb);
    ASSERT_OK_AND_ASSIGN(const std::string back, b->ReEncrypt(*a->Decrypt(*a->ReEncrypt(eb))));
    EXPECT_EQ(back, *b->ReEncrypt(eb));
  }
}

// The owner's unblinding layer: a list blinded with r, re-encrypted by the others, then
// unblinded with Unblinding(k, r) equals the list under k and the others' keys; and with known
// scalars (k = 6, r = 3: k * r^-1 = 2) it is plain multiplication by 2.
TEST(EcCommutativeCipherTest, UnblindingTurnsABlindedPointIntoTheKeyedOne) {
  const Cipher k = NewCipher();
  const Cipher r = NewCipher();
  const Cipher other = NewCipher();
  ASSERT_OK_AND_ASSIGN(const Cipher unblind, EcCommutativeCipher::Unblinding(*k, *r));
  for (const std::string& id : RandomIds(20)) {
    ASSERT_OK_AND_ASSIGN(const std::string blinded, r->Encrypt(id));
    ASSERT_OK_AND_ASSIGN(const std::string hop, other->ReEncrypt(blinded));
    ASSERT_OK_AND_ASSIGN(const std::string full, unblind->ReEncrypt(hop));
    ASSERT_OK_AND_ASSIGN(const std::string expected, other->ReEncrypt(*k->Encrypt(id)));
    EXPECT_EQ(full, expected);
    EXPECT_NE(blinded, *k->Encrypt(id));
  }
  const Cipher six = CipherFromHex(std::string(63, '0') + "6");
  const Cipher three = CipherFromHex(std::string(63, '0') + "3");
  const Cipher two = CipherFromHex(std::string(63, '0') + "2");
  ASSERT_OK_AND_ASSIGN(const Cipher six_over_three, EcCommutativeCipher::Unblinding(*six, *three));
  EXPECT_EQ(six_over_three->GetPrivateKeyBytes().AsStringView(),
            two->GetPrivateKeyBytes().AsStringView());
}

TEST(EcCommutativeCipherTest, DifferentKeysAndIdsGiveDifferentCiphertexts) {
  std::vector<Cipher> keys;
  for (int i = 0; i < 5; ++i) keys.push_back(NewCipher());
  std::set<std::string> seen;
  const std::vector<std::string> ids = {"", "a", "b", "alice", "alice ", "Alice", "bob", "0"};
  for (const Cipher& k : keys) {
    for (const std::string& id : ids) {
      ASSERT_OK_AND_ASSIGN(const std::string c, k->Encrypt(id));
      EXPECT_TRUE(seen.insert(c).second) << "collision for id '" << id << "'";
    }
  }
}

TEST(EcCommutativeCipherTest, KnownKeysGiveKnownPoints) {
  // k = 1: Encrypt is the compressed hash_to_curve output with the fedanon DST.
  const Cipher one = CipherFromHex(std::string(63, '0') + "1");
  // k = n - 1 = -1: the negated point (same x, other y parity).
  std::string n_minus_1 = kOrderHex;
  n_minus_1.back() = '0';
  const Cipher minus_one = CipherFromHex(n_minus_1);
  for (const std::string id : {"", "abc", "12345678"}) {
    ASSERT_OK_AND_ASSIGN(const std::string h, HashToCurve(id, kIdHashDst));
    ASSERT_OK_AND_ASSIGN(const std::string e1, one->Encrypt(id));
    EXPECT_EQ(e1, Compress(h));
    ASSERT_OK_AND_ASSIGN(const std::string em1, minus_one->Encrypt(id));
    EXPECT_EQ(em1.substr(1), e1.substr(1));
    EXPECT_EQ(em1[0] ^ e1[0], 0x02 ^ 0x03);
    ASSERT_OK_AND_ASSIGN(const std::string dm1, minus_one->Decrypt(em1));
    EXPECT_EQ(dm1, e1);
  }
}

TEST(EcCommutativeCipherTest, KeyExportAndImport) {
  const Cipher a = NewCipher();
  const SecretBytes key = a->GetPrivateKeyBytes();
  ASSERT_EQ(key.size(), kP256ScalarSize);
  ASSERT_OK_AND_ASSIGN(const Cipher a2, EcCommutativeCipher::CreateFromKey(key));
  EXPECT_EQ(*a->Encrypt("x"), *a2->Encrypt("x"));
  EXPECT_EQ(a2->GetPrivateKeyBytes(), key);
  EXPECT_NE(NewCipher()->GetPrivateKeyBytes(), key);
}

TEST(EcCommutativeCipherTest, KeysOutOfRangeAreRejected) {
  const std::string n = absl::HexStringToBytes(kOrderHex);
  std::string n_plus_1 = n;
  n_plus_1.back() = static_cast<char>(n_plus_1.back() + 1);
  for (const std::string& bad : {std::string(32, '\0'), n, n_plus_1, std::string(32, '\xff'),
                                 std::string(31, '\x01'), std::string(33, '\x01'), std::string()}) {
    EXPECT_THAT(EcCommutativeCipher::CreateFromKey(SecretBytes::CopyFrom(bad)),
                StatusIs(kInvalid, ""))
        << absl::BytesToHexString(bad);
  }
}

TEST(EcCommutativeCipherTest, InvalidPointEncodingsAreRejected) {
  const Cipher a = NewCipher();
  ASSERT_OK_AND_ASSIGN(const std::string good, a->Encrypt("valid"));
  ASSERT_OK_AND_ASSIGN(const std::string uncompressed, HashToCurve("valid", kIdHashDst));

  // An x with no point on the curve (x^3 - 3x + b a non-square), found with OpenSSL.
  std::string off_x;
  for (int i = 0; i < 64 && off_x.empty(); ++i) {
    std::string x(32, '\0');
    x[31] = static_cast<char>(i);
    if (!CompressedXOnCurve(x)) off_x = x;
  }
  ASSERT_FALSE(off_x.empty());

  std::vector<std::string> bad = {
      "",
      std::string(1, '\0'),                                // SEC1 encoding of the point at infinity
      std::string(33, '\0'),                               // zero prefix
      good.substr(0, 32),                                  // truncated
      good + '\0',                                         // too long
      uncompressed.substr(0, 33) + std::string(32, '\0'),  // uncompressed, y = 0: off the curve
      std::string("\x06", 1) + uncompressed.substr(1),     // hybrid prefix: not accepted
      std::string("\x04", 1) + good.substr(1),             // uncompressed prefix on 33 bytes
      std::string("\x05", 1) + good.substr(1),             // unknown prefix
      std::string("\x02", 1) + off_x,                      // x not on the curve
      std::string("\x03", 1) + off_x,
      std::string("\x02", 1) + absl::HexStringToBytes(kPrimeHex),  // x = p
      std::string("\x02", 1) + std::string(32, '\xff'),            // x > p
  };
  for (const std::string& b : bad) {
    EXPECT_THAT(a->ReEncrypt(b), StatusIs(kInvalid, "")) << absl::BytesToHexString(b);
    EXPECT_THAT(a->Decrypt(b), StatusIs(kInvalid, "")) << absl::BytesToHexString(b);
  }
  // Both parities of a valid x are valid points, and the 65-byte uncompressed form is accepted.
  std::string flipped = good;
  flipped[0] = static_cast<char>(flipped[0] ^ 0x01);
  ASSERT_OK(a->ReEncrypt(flipped));
  ASSERT_OK(a->ReEncrypt(uncompressed));
}

TEST(EcCommutativeCipherTest, BatchesMatchSequentialResults) {
  const Cipher a = NewCipher();
  const Cipher b = NewCipher();
  const std::vector<std::string> ids = RandomIds(101);
  std::vector<std::string> expected;
  for (const std::string& id : ids) expected.push_back(*a->Encrypt(id));
  for (int threads : {0, 1, 2, 3, 200}) {
    ASSERT_OK_AND_ASSIGN(const std::vector<std::string> got, a->EncryptBatch(ids, threads));
    EXPECT_EQ(got, expected) << threads;
  }
  std::vector<std::string> expected_re;
  for (const std::string& c : expected) expected_re.push_back(*b->ReEncrypt(c));
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> got_re, b->ReEncryptBatch(expected, 2));
  EXPECT_EQ(got_re, expected_re);
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> empty, a->EncryptBatch({}, 2));
  EXPECT_TRUE(empty.empty());
}

TEST(EcCommutativeCipherTest, BatchReportsInvalidElement) {
  const Cipher a = NewCipher();
  std::vector<std::string> points;
  for (int i = 0; i < 10; ++i) points.push_back(*a->Encrypt(std::to_string(i)));
  points[7] = "garbage";
  EXPECT_THAT(a->ReEncryptBatch(points, 2), StatusIs(kInvalid, "item 7"));
}

// Batches longer than one piece of work (1024 items): every thread count gives the sequential
// results, and the reported error is the lowest failing index even when a later piece fails too.
TEST(EcCommutativeCipherTest, BatchesOverSeveralPiecesKeepOrderAndFirstError) {
  const Cipher a = NewCipher();
  const std::vector<std::string> ids = RandomIds(2600);
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> one, a->EncryptBatch(ids, 1));
  for (size_t i : {size_t{0}, size_t{1023}, size_t{1024}, size_t{2599}}) {
    ASSERT_OK_AND_ASSIGN(const std::string single, a->Encrypt(ids[i]));
    EXPECT_EQ(one[i], single) << i;
  }
  for (int threads : {2, 3}) {
    ASSERT_OK_AND_ASSIGN(const std::vector<std::string> got, a->EncryptBatch(ids, threads));
    EXPECT_EQ(got, one) << threads;
  }
  std::vector<std::string> bad = one;
  bad[2500] = "garbage";
  bad[1100] = std::string(65, '\x04');
  EXPECT_THAT(a->ReEncryptBatch(bad, 3), StatusIs(kInvalid, "item 1100"));
}

// The uncompressed encoding (the cheaper one on the hops between parties): the same points as the
// compressed one, accepted as input with the same results, and validated (prefix, range, curve).
TEST(EcCommutativeCipherTest, UncompressedPointsEncodeTheSamePoints) {
  const Cipher a = NewCipher();
  const Cipher b = NewCipher();
  const std::vector<std::string> ids = RandomIds(300);
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> comp, a->EncryptBatch(ids, 2));
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> unc,
                       a->EncryptBatch(ids, 2, crypto::PointEncoding::kUncompressed));
  ASSERT_EQ(unc.size(), comp.size());
  for (size_t i = 0; i < unc.size(); ++i) {
    ASSERT_EQ(unc[i].size(), crypto::kUncompressedPointSize);
    EXPECT_EQ(unc[i][0], '\x04');
    EXPECT_EQ(unc[i].substr(1, 32), comp[i].substr(1)) << i;  // same x
    // sgn0(y) is the parity of y's last byte.
    EXPECT_EQ(static_cast<uint8_t>(comp[i][0]), 0x02 | (static_cast<uint8_t>(unc[i][64]) & 1));
  }
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> from_comp, b->ReEncryptBatch(comp, 2));
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> from_unc, b->ReEncryptBatch(unc, 2));
  EXPECT_EQ(from_unc, from_comp);
  ASSERT_OK_AND_ASSIGN(const std::string single, b->ReEncrypt(unc[0]));
  EXPECT_EQ(single, from_comp[0]);
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> unc_out,
                       b->ReEncryptBatch(comp, 1, crypto::PointEncoding::kUncompressed));
  EXPECT_EQ(unc_out[0].substr(1, 32), from_comp[0].substr(1));

  std::string off_curve = unc[0];
  off_curve[64] = static_cast<char>(off_curve[64] ^ 0x01);
  std::string wrong_prefix = unc[0];
  wrong_prefix[0] = '\x02';
  std::string x_too_big = unc[0];
  std::fill(x_too_big.begin() + 1, x_too_big.begin() + 33, '\xff');
  for (const std::string& bad : {off_curve, wrong_prefix, x_too_big, unc[0].substr(0, 64)}) {
    EXPECT_THAT(b->ReEncrypt(bad), StatusIs(kInvalid, "")) << bad.size();
  }
}

TEST(EcCommutativeCipherTest, ConcurrentUseOfOneCipher) {
  const Cipher a = NewCipher();
  const std::vector<std::string> ids = RandomIds(40);
  std::vector<std::string> expected;
  for (const std::string& id : ids) expected.push_back(*a->Encrypt(id));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < ids.size(); ++i) {
        auto c = a->Encrypt(ids[i]);
        if (!c.ok() || *c != expected[i]) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace fedanon::crypto
