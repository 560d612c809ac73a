#include "crypto/bit_matrix.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fedanon::crypto::mpc {

void Transpose64(uint64_t a[64]) {
  uint64_t mask = 0x00000000FFFFFFFFULL;
  for (unsigned j = 32; j != 0; j >>= 1, mask ^= (mask << j)) {
    for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
      const uint64_t t = ((a[k] >> j) ^ a[k | j]) & mask;
      a[k] ^= t << j;
      a[k | j] ^= t;
    }
  }
}

void TransposeColumns(const uint8_t* columns, size_t rows, Block* out) {
  const size_t column_bytes = rows / 8;
  uint64_t tile[64];
  for (size_t r0 = 0; r0 < rows; r0 += 64) {
    for (size_t half = 0; half < 2; ++half) {
      // tile[c] holds rows r0..r0+63 of column 64 * half + c.
      for (size_t c = 0; c < 64; ++c) {
        std::memcpy(&tile[c], columns + (64 * half + c) * column_bytes + r0 / 8, 8);
      }
      Transpose64(tile);  // now tile[i] holds columns 64 * half .. + 63 of row r0 + i
      for (size_t i = 0; i < 64; ++i) {
        if (half == 0) {
          out[r0 + i].lo = tile[i];
        } else {
          out[r0 + i].hi = tile[i];
        }
      }
    }
  }
}

namespace {

// 64 x 64 -> 128-bit carryless product, branch-free.
void Mul64(uint64_t a, uint64_t b, uint64_t* lo, uint64_t* hi) {
  uint64_t l = 0;
  uint64_t h = 0;
  for (unsigned k = 0; k < 64; ++k) {
    const uint64_t mask = 0 - ((b >> k) & 1);
    l ^= (a << k) & mask;
    h ^= (k == 0 ? 0 : (a >> (64 - k))) & mask;
  }
  *lo = l;
  *hi = h;
}

}  // namespace

#if defined(__x86_64__)
namespace {

// The same product with PCLMULQDQ (four 64 x 64 products).
__attribute__((target("pclmul,sse2"))) Block256 CarrylessMultiplyPclmul(Block a, Block b) {
  const __m128i x = _mm_set_epi64x(static_cast<int64_t>(a.hi), static_cast<int64_t>(a.lo));
  const __m128i y = _mm_set_epi64x(static_cast<int64_t>(b.hi), static_cast<int64_t>(b.lo));
  const __m128i low = _mm_clmulepi64_si128(x, y, 0x00);
  const __m128i high = _mm_clmulepi64_si128(x, y, 0x11);
  const __m128i mid =
      _mm_xor_si128(_mm_clmulepi64_si128(x, y, 0x01), _mm_clmulepi64_si128(x, y, 0x10));
  Block256 r;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&r.low), _mm_xor_si128(low, _mm_slli_si128(mid, 8)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&r.high),
                   _mm_xor_si128(high, _mm_srli_si128(mid, 8)));
  return r;
}

bool HavePclmul() {
  static const bool have = __builtin_cpu_supports("pclmul") != 0;
  return have;
}

}  // namespace
#endif

Block256 CarrylessMultiply(Block a, Block b) {
#if defined(__x86_64__)
  if (HavePclmul()) return CarrylessMultiplyPclmul(a, b);
#endif
  return CarrylessMultiplyPortable(a, b);
}

Block256 CarrylessMultiplyPortable(Block a, Block b) {
  uint64_t p0l, p0h, p1l, p1h, p2l, p2h, p3l, p3h;
  Mul64(a.lo, b.lo, &p0l, &p0h);  // x^0
  Mul64(a.lo, b.hi, &p1l, &p1h);  // x^64
  Mul64(a.hi, b.lo, &p2l, &p2h);  // x^64
  Mul64(a.hi, b.hi, &p3l, &p3h);  // x^128
  Block256 r;
  r.low.lo = p0l;
  r.low.hi = p0h ^ p1l ^ p2l;
  r.high.lo = p1h ^ p2h ^ p3l;
  r.high.hi = p3h;
  return r;
}

}  // namespace fedanon::crypto::mpc
