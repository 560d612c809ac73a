// Arithmetic in the P-256 base field GF(p), p = 2^256 - 2^224 + 2^192 + 2^96 - 1, for RFC 9380
// hash-to-curve and point decompression (crypto/p256_hash_to_curve.*). Internal to crypto/.
//
// Elements are 4 x 64-bit little-endian limbs in Montgomery form (a·2^256 mod p), always fully
// reduced (< p). Multiplication and squaring are MULX/ADCX/ADOX assembly on x86-64 CPUs with BMI2
// and ADX (CPUID at startup), else portable Montgomery reduction with unsigned __int128;
// inversion and square roots are fixed addition chains (Fermat), so every function here runs in
// time independent of the values (no branches or memory indices depending on them), except
// FeFromBytes's range check, whose result is public in every caller (a received point or an RFC
// test input). Selection is by masks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fedanon::crypto::p256 {

struct Fe {
  uint64_t v[4];
};

// All-ones if `bit` (0 or 1) is 1, zero otherwise.
inline uint64_t MaskFromBit(uint64_t bit) { return 0 - bit; }

void FeMul(Fe* r, const Fe& a, const Fe& b);
void FeSqr(Fe* r, const Fe& a);
// On x86-64 CPUs with BMI2 and ADX (checked once at startup), FeMul, FeSqr and the exponentiations
// run on MULX/ADCX/ADOX assembly; elsewhere on the portable C below. FeUsesAsm says which.
bool FeUsesAsm();
// Tests only: turns the assembly off (false) or back on where the CPU has it (true), so that the
// portable path is exercised end to end on any machine. Not for concurrent use with other calls.
void FeSetAsmForTesting(bool on);
void FeMulPortable(Fe* r, const Fe& a, const Fe& b);
void FeSqrPortable(Fe* r, const Fe& a);
void FeAdd(Fe* r, const Fe& a, const Fe& b);
void FeSub(Fe* r, const Fe& a, const Fe& b);
void FeNeg(Fe* r, const Fe& a);
// r = mask ? a : b for mask all-ones / zero (constant time). r may alias a or b.
void FeSelect(Fe* r, uint64_t mask, const Fe& a, const Fe& b);
// 1 if a == 0 / a == b, else 0 (constant time).
uint64_t FeIsZero(const Fe& a);
uint64_t FeEqual(const Fe& a, const Fe& b);
// r = a^-1 (a^(p-2); 0 maps to 0).
void FeInv(Fe* r, const Fe& a);
// r[i] = a[i]^-1 for i < n with one inversion in all (Montgomery's trick: 3 multiplications per
// element); zeros map to zero like FeInv, selected by masks. `scratch` holds n elements; r may
// alias a.
void FeBatchInv(Fe* r, const Fe* a, size_t n, Fe* scratch);
// r = a^((p-3)/4), the exponentiation of RFC 9380's sqrt_ratio for p = 3 mod 4.
void FePowC1(Fe* r, const Fe& a);
// r[i] = a[i]^((p-3)/4) for two independent elements, interleaved (faster than two calls).
void FePowC1x2(Fe r[2], const Fe a[2]);
// r = a^((p+1)/4); returns 1 if r^2 == a (a is a square), else 0.
uint64_t FeSqrt(Fe* r, const Fe& a);
// sgn0 of RFC 9380 §4.1: the parity of the canonical (non-Montgomery) value.
uint64_t FeSgn0(const Fe& a);

// The constants 0 and 1 (Montgomery form).
Fe FeZero();
Fe FeOne();
// 32 big-endian bytes -> element; false (r untouched) if the value is >= p.
bool FeFromBytes(Fe* r, const uint8_t in[32]);
// Any 48 big-endian bytes, reduced mod p (RFC 9380 hash_to_field's OS2IP(tv) mod p).
void FeFromWideBytes(Fe* r, const uint8_t in[48]);
void FeToBytes(uint8_t out[32], const Fe& a);
// Small non-negative integer -> element.
Fe FeFromUint64(uint64_t x);

}  // namespace fedanon::crypto::p256
