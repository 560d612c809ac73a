// The building blocks of the secure comparison: the fixed-key hash (known answers computed with
// the `openssl enc` command), the bit-matrix transpose and carryless product (against bit-by-bit
// computations), the circuit builder's arithmetic (against plain integers at every width) and
// half-gates garbling (garbled evaluation against plain evaluation).
#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "crypto/bit_matrix.h"
#include "crypto/block.h"
#include "crypto/boolean_circuit.h"
#include "crypto/fixed_key_hash.h"
#include "crypto/half_gates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto::mpc {
namespace {

uint64_t Mask(uint32_t n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// The fixed key is the first half of SHA-256("fedanon fixed-key AES for garbling and OT extension
// v1") = d9f665aad2316cefb7aeaf2b60d1c1b2; the expected values below are
//   printf <16 bytes> | openssl enc -aes-128-ecb -K d9f665aad2316cefb7aeaf2b60d1c1b2 -nopad
TEST(FixedKeyHashTest, PermutationIsAes128UnderTheFixedKey) {
  const Block key = FixedAesKey();
  EXPECT_EQ(key.lo, 0xef6c31d2aa65f6d9ULL);
  EXPECT_EQ(key.hi, 0xb2c1d1602bafaeb7ULL);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  const Block in[2] = {Block{0, 0}, Block{1, 2}};
  Block out[2];
  ASSERT_OK(hash->Permute(in, out, 2));
  EXPECT_EQ(out[0].lo, 0xe371ca73ad9aac0dULL);  // 0dac9aad73ca71e3 ...
  EXPECT_EQ(out[0].hi, 0x477c989e405c0b00ULL);  // ... 000b5c409e987c47
  EXPECT_EQ(out[1].lo, 0xc673ff0fd4cff5abULL);  // abf5cfd40fff73c6 ...
  EXPECT_EQ(out[1].hi, 0x013d9ecbdc66f62fULL);  // ... 2ff666dccb9e3d01
}

TEST(FixedKeyHashTest, TweakableHashKnownAnswerAndTweakSeparation) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  // H(x, i) = pi(pi(x) ^ i) ^ pi(x) for x = (1, 2), i = (5, "garb1" domain), from openssl enc.
  const Block x{1, 2};
  const Block tweak{5, 0x6761726231000000ULL};
  Block h;
  ASSERT_OK(hash->Hash(&x, &tweak, &h, 1));
  EXPECT_EQ(h.lo, 4676274468720038848ULL);
  EXPECT_EQ(h.hi, 9281779036884737664ULL);
  // Batches of any size agree with one-by-one hashing; another tweak gives another value.
  std::mt19937_64 rng(7);
  std::vector<Block> xs(1500), tw(1500), batch(1500);
  for (size_t k = 0; k < xs.size(); ++k) {
    xs[k] = Block{rng(), rng()};
    tw[k] = Block{k, 9};
  }
  ASSERT_OK(hash->Hash(xs.data(), tw.data(), batch.data(), xs.size()));
  for (size_t k = 0; k < xs.size(); k += 97) {
    Block one;
    ASSERT_OK(hash->Hash(&xs[k], &tw[k], &one, 1));
    EXPECT_EQ(one, batch[k]);
    const Block other_tweak{k + 1, 9};
    Block other;
    ASSERT_OK(hash->Hash(&xs[k], &other_tweak, &other, 1));
    EXPECT_NE(other, one);
  }
}

TEST(FixedKeyHashTest, PrgIsAes128CtrUnderTheSeed) {
  const Block seed{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  std::vector<uint8_t> out(48);
  ASSERT_OK(PrgExpand(seed, out.data(), out.size()));
  // The same keystream from OpenSSL directly.
  std::vector<uint8_t> expected(48, 0);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  const unsigned char iv[16] = {};
  int len = 0;
  ASSERT_EQ(EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nullptr,
                               reinterpret_cast<const unsigned char*>(&seed), iv),
            1);
  ASSERT_EQ(EVP_EncryptUpdate(ctx, expected.data(), &len, expected.data(), 48), 1);
  EVP_CIPHER_CTX_free(ctx);
  EXPECT_EQ(out, expected);
  // FIPS-197's key 000102..0f encrypts the zero counter block to c6a13b37878f5b826f4f8162a1c8d879
  // (AES-128 of 00..00 under that key).
  EXPECT_EQ(out[0], 0xc6);
  EXPECT_EQ(out[15], 0x79);
}

TEST(BitMatrixTest, Transpose64AgainstBitByBit) {
  std::mt19937_64 rng(11);
  uint64_t a[64];
  for (uint64_t& w : a) w = rng();
  uint64_t t[64];
  std::copy(a, a + 64, t);
  Transpose64(t);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) ASSERT_EQ((t[j] >> i) & 1, (a[i] >> j) & 1) << i << "," << j;
  }
}

TEST(BitMatrixTest, TransposeColumnsAgainstBitByBit) {
  std::mt19937_64 rng(12);
  for (size_t rows : {size_t{64}, size_t{192}, size_t{1088}}) {
    std::vector<uint8_t> columns(128 * rows / 8);
    for (uint8_t& b : columns) b = static_cast<uint8_t>(rng());
    std::vector<Block> out(rows);
    TransposeColumns(columns.data(), rows, out.data());
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < 128; ++j) {
        const bool column_bit = ((columns[j * rows / 8 + i / 8] >> (i % 8)) & 1) != 0;
        const bool row_bit = (((j < 64 ? out[i].lo : out[i].hi) >> (j % 64)) & 1) != 0;
        ASSERT_EQ(row_bit, column_bit) << rows << ": " << i << "," << j;
      }
    }
  }
}

// Bit k of a 256-bit value held as four words.
bool Coefficient(const Block256& p, int k) {
  const uint64_t words[4] = {p.low.lo, p.low.hi, p.high.lo, p.high.hi};
  return ((words[k / 64] >> (k % 64)) & 1) != 0;
}
bool BlockBit(Block b, int k) { return (((k < 64 ? b.lo : b.hi) >> (k % 64)) & 1) != 0; }

TEST(BitMatrixTest, CarrylessMultiplyAgainstSchoolbook) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 40; ++trial) {
    const Block a{rng(), rng()};
    const Block b = trial == 0 ? Block{1, 0} : Block{rng(), rng()};
    const Block256 p = CarrylessMultiply(a, b);
    for (int k = 0; k < 256; ++k) {
      bool c = false;
      for (int i = std::max(0, k - 127); i <= std::min(k, 127); ++i) {
        c ^= BlockBit(a, i) && BlockBit(b, k - i);
      }
      ASSERT_EQ(Coefficient(p, k), c) << trial << ": x^" << k;
    }
    EXPECT_EQ(p, CarrylessMultiply(b, a));
    EXPECT_EQ(p, CarrylessMultiplyPortable(a, b));  // both paths, whichever this CPU takes
  }
  // x^127 * x^127 = x^254.
  const Block256 top = CarrylessMultiply(Block{0, uint64_t{1} << 63}, Block{0, uint64_t{1} << 63});
  EXPECT_EQ(top.high.hi, uint64_t{1} << 62);
  EXPECT_EQ(top.low, (Block{0, 0}));
}

std::vector<uint8_t> Bits(uint64_t v, uint32_t n) {
  std::vector<uint8_t> out(n);
  for (uint32_t k = 0; k < n; ++k) out[k] = (v >> k) & 1;
  return out;
}
uint64_t Value(const std::vector<uint8_t>& bits) {
  uint64_t v = 0;
  for (size_t k = 0; k < bits.size(); ++k) v |= uint64_t{bits[k]} << k;
  return v;
}

TEST(CircuitBuilderTest, ArithmeticAgainstIntegersAtEveryWidth) {
  std::mt19937_64 rng(14);
  for (uint32_t n = 1; n <= 64; ++n) {
    const uint64_t c = rng() & Mask(n);
    CircuitBuilder b(n, n);
    const Word x = b.GarblerWord(0, n);
    const Word y = b.EvaluatorWord(0, n);
    for (const Bit& bit : b.Add(x, y)) b.Output(bit);
    b.Output(b.GreaterThan(x, y));
    b.Output(b.AtLeast(x, c));
    const Bit sel = x[0];
    for (const Bit& bit : b.Mux(sel, x, y)) b.Output(bit);
    const Circuit circuit = std::move(b).Finish();
    // One AND per bit: n - 1 for the sum, n for the comparison, at most n for the constant
    // comparison, n for the multiplexer.
    EXPECT_LE(circuit.and_count, 4 * n) << n;
    for (int trial = 0; trial < 30; ++trial) {
      uint64_t xv = rng() & Mask(n);
      uint64_t yv = rng() & Mask(n);
      if (trial == 0) yv = xv;                 // equal
      if (trial == 1) xv = c;                  // at the constant
      if (trial == 2) xv = (c - 1) & Mask(n);  // just below it
      if (trial == 3) {                        // extremes
        xv = Mask(n);
        yv = 0;
      }
      ASSERT_OK_AND_ASSIGN(const std::vector<uint8_t> out,
                           EvaluatePlain(circuit, Bits(xv, n), Bits(yv, n)));
      const std::vector<uint8_t> sum(out.begin(), out.begin() + n);
      EXPECT_EQ(Value(sum), (xv + yv) & Mask(n)) << n;
      EXPECT_EQ(out[n], xv > yv ? 1 : 0) << n << ": " << xv << " > " << yv;
      EXPECT_EQ(out[n + 1], xv >= c ? 1 : 0) << n << ": " << xv << " >= " << c;
      const std::vector<uint8_t> mux(out.begin() + n + 2, out.end());
      EXPECT_EQ(Value(mux), (xv & 1) != 0 ? xv : yv) << n;
    }
  }
}

TEST(CircuitBuilderTest, ConstantsFoldAndConstantOutputsStillEvaluate) {
  CircuitBuilder b(1, 1);
  const Bit x = b.GarblerInput(0);
  EXPECT_TRUE(b.And(x, Bit::Const(false)).is_constant());
  EXPECT_EQ(b.Xor(x, Bit::Const(false)).wire, x.wire);
  b.Output(Bit::Const(true));
  b.Output(Bit::Const(false));
  b.Output(b.AtLeast(CircuitBuilder::ConstWord(0, 4), 0));
  const Circuit c = std::move(b).Finish();
  EXPECT_EQ(c.and_count, 0u);
  ASSERT_OK_AND_ASSIGN(const std::vector<uint8_t> out, EvaluatePlain(c, {0}, {1}));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_FALSE(EvaluatePlain(c, {0, 1}, {1}).ok());
}

// Garbles a circuit for a batch, evaluates it with the labels of random inputs, and compares the
// decoded outputs with plain evaluation.
TEST(HalfGatesTest, GarbledEvaluationEqualsPlainEvaluation) {
  std::mt19937_64 rng(15);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  const uint32_t n = 16;
  CircuitBuilder b(n, n);
  const Word x = b.GarblerWord(0, n);
  const Word y = b.EvaluatorWord(0, n);
  const Word s = b.Add(x, y);
  b.Output(b.GreaterThan(s, y));
  for (const Bit& bit : b.Mux(b.Not(s[3]), s, x)) b.Output(bit);
  b.Output(Bit::Const(true));
  const Circuit c = std::move(b).Finish();
  for (size_t batch : {size_t{1}, size_t{3}, size_t{64}}) {
    Block delta{rng(), rng()};
    delta.lo |= 1;
    std::vector<Block> zero(size_t{c.wire_count} * batch);
    std::vector<Block> active(zero.size());
    std::vector<std::vector<uint8_t>> g_bits(batch), e_bits(batch);
    for (size_t i = 0; i < batch; ++i) {
      g_bits[i] = Bits(rng() & 0xffff, n);
      e_bits[i] = Bits(rng() & 0xffff, n);
      for (uint32_t w = 0; w <= c.zero_wire(); ++w) {
        zero[w * batch + i] = Block{rng(), rng()};
        const bool v = w < n ? g_bits[i][w] : w < 2 * n ? e_bits[i][w - n] : false;
        active[w * batch + i] = zero[w * batch + i] ^ SelectIf(v, delta);
      }
    }
    std::vector<Block> tables(2 * size_t{c.and_count} * batch);
    uint64_t g_index = 100;
    uint64_t e_index = 100;
    ASSERT_OK(GarbleBatch(*hash, c, delta, batch, &g_index, zero, tables.data()));
    ASSERT_OK(EvaluateBatch(*hash, c, batch, &e_index, active, tables.data()));
    EXPECT_EQ(g_index, 100 + c.and_count * batch);
    EXPECT_EQ(e_index, g_index);
    for (size_t i = 0; i < batch; ++i) {
      ASSERT_OK_AND_ASSIGN(const std::vector<uint8_t> plain,
                           EvaluatePlain(c, g_bits[i], e_bits[i]));
      for (size_t k = 0; k < c.outputs.size(); ++k) {
        const Block z = zero[size_t{c.outputs[k]} * batch + i];
        const Block a = active[size_t{c.outputs[k]} * batch + i];
        ASSERT_TRUE(a == z || a == (z ^ delta)) << "an output label outside the pair";
        EXPECT_EQ(a == z ? 0 : 1, plain[k]) << batch << ": instance " << i << " output " << k;
      }
    }
    // A table from another gate numbering (a replayed garbling) decodes to labels outside the
    // pairs: the evaluator's labels cannot be checked against the garbler's, so the garbler
    // refuses them (ComparisonGarbler::Finish).
    std::vector<Block> again = active;
    uint64_t shifted = 101;
    ASSERT_OK(EvaluateBatch(*hash, c, batch, &shifted, again, tables.data()));
    size_t outside = 0;
    for (size_t i = 0; i < batch; ++i) {
      const Block z = zero[size_t{c.outputs[0]} * batch + i];
      const Block a = again[size_t{c.outputs[0]} * batch + i];
      outside += (a != z && a != (z ^ delta)) ? 1 : 0;
    }
    EXPECT_EQ(outside, batch);
  }
}

}  // namespace
}  // namespace fedanon::crypto::mpc
