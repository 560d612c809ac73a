#include "crypto/p256_field.h"

#include <atomic>

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
#define FEDANON_P256_ADX 1
#include <cpuid.h>
#else
#define FEDANON_P256_ADX 0
#endif

// ---- x86-64 BMI2 + ADX: MULX / ADCX / ADOX Montgomery multiplication and squaring ------------
//
// Straight-line SysV functions in a top-level asm block: no branch or memory index depends on a
// value (the final correction is a CMOV; sqr_n's loop counts a public n). Each computes the 512-bit
// product t = a·b (or a²) in r8..r15, Montgomery-reduces its low half,
// R = (t_low + M·p) / 2^256 <= p (M: the reduction's four multipliers, each the lowest limb at
// its round, since -p^-1 = 1 mod 2^64), adds the high half (< p when a, b < p) and subtracts p once
// if that sum (< 2p) is >= p. A round with m = the lowest limb adds
// m·p = m·2^256 - m·2^224 + m·2^192 + m·2^96 - m: the lowest limb becomes 0 with a carry of m, so
// the round adds m<<32 and m>>32 to the next two limbs and one MULX of m by p's top limb to the two
// after that (the last into a fresh limb, which takes the register of the limb just cleared).
#if FEDANON_P256_ADX
// clang-format off
extern "C" {
void fedanon_p256_mul_mont_adx(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]);
void fedanon_p256_sqr_mont_adx(uint64_t r[4], const uint64_t a[4]);
// n >= 1 squarings in a row: r = a^(2^n).
void fedanon_p256_sqr_n_mont_adx(uint64_t r[4], const uint64_t a[4], uint64_t n);
}

// One reduction round: m (cleared limb, then the fresh limb), l1..l3 the next three limbs.
#define FEDANON_P256_ROUND(m, l1, l2, l3)    \
  "  movq " m ", %rdx\n"                     \
  "  mulxq .Lfedanon_p256_p3(%rip), %rax, %rbx\n" \
  "  movq " m ", %rbp\n"                     \
  "  shlq $32, %rbp\n"                       \
  "  shrq $32, " m "\n"                      \
  "  addq %rbp, " l1 "\n"                    \
  "  adcq " m ", " l2 "\n"                   \
  "  adcq %rax, " l3 "\n"                    \
  "  adcq $0, %rbx\n"                        \
  "  movq %rbx, " m "\n"

// t = r8..r15 -> reduced result stored at (%rdi). Clobbers everything but rdi, rsi, rsp.
#define FEDANON_P256_REDUCE_AND_STORE                     \
  FEDANON_P256_ROUND("%r8", "%r9", "%r10", "%r11")        \
  FEDANON_P256_ROUND("%r9", "%r10", "%r11", "%r8")        \
  FEDANON_P256_ROUND("%r10", "%r11", "%r8", "%r9")        \
  FEDANON_P256_ROUND("%r11", "%r8", "%r9", "%r10")        \
  /* R = r8..r11; + t_high (r12..r15), carry in rbp */    \
  "  xorl %ebp, %ebp\n"                                   \
  "  addq %r12, %r8\n"                                    \
  "  adcq %r13, %r9\n"                                    \
  "  adcq %r14, %r10\n"                                   \
  "  adcq %r15, %r11\n"                                   \
  "  adcq $0, %rbp\n"                                     \
  /* sum - p; keep the sum if that borrows */             \
  "  movq %r8, %rax\n"                                    \
  "  movq %r9, %rbx\n"                                    \
  "  movq %r10, %rcx\n"                                   \
  "  movq %r11, %rdx\n"                                   \
  "  subq $-1, %rax\n"                                    \
  "  sbbq .Lfedanon_p256_p1(%rip), %rbx\n"                \
  "  sbbq $0, %rcx\n"                                     \
  "  sbbq .Lfedanon_p256_p3(%rip), %rdx\n"                \
  "  sbbq $0, %rbp\n"                                     \
  "  cmovncq %rax, %r8\n"                                 \
  "  cmovncq %rbx, %r9\n"                                 \
  "  cmovncq %rcx, %r10\n"                                \
  "  cmovncq %rdx, %r11\n"                                \
  "  movq %r8, 0(%rdi)\n"                                 \
  "  movq %r9, 8(%rdi)\n"                                 \
  "  movq %r10, 16(%rdi)\n"                               \
  "  movq %r11, 24(%rdi)\n"

// a² of (%rsi) into r8..r15: the six cross products once (MULX with two carry chains), doubled,
// plus the four squares.
#define FEDANON_P256_SQUARE                  \
  "  movq 0(%rsi), %rdx\n"                   \
  "  mulxq 8(%rsi), %r9, %r10\n"             \
  "  mulxq 16(%rsi), %rax, %r11\n"           \
  "  mulxq 24(%rsi), %rbx, %r12\n"           \
  "  addq %rax, %r10\n"                      \
  "  adcq %rbx, %r11\n"                      \
  "  adcq $0, %r12\n"                        \
  "  movq 8(%rsi), %rdx\n"                   \
  "  xorl %r13d, %r13d\n"                    \
  "  mulxq 16(%rsi), %rax, %rbx\n"           \
  "  adcxq %rax, %r11\n"                     \
  "  adoxq %rbx, %r12\n"                     \
  "  mulxq 24(%rsi), %rax, %rbx\n"           \
  "  adcxq %rax, %r12\n"                     \
  "  adoxq %rbx, %r13\n"                     \
  "  movl $0, %eax\n"                        \
  "  adcxq %rax, %r13\n"                     \
  "  movq 16(%rsi), %rdx\n"                  \
  "  mulxq 24(%rsi), %rax, %r14\n"           \
  "  addq %rax, %r13\n"                      \
  "  adcq $0, %r14\n"                        \
  "  xorl %r15d, %r15d\n"                    \
  "  addq %r9, %r9\n"                        \
  "  adcq %r10, %r10\n"                      \
  "  adcq %r11, %r11\n"                      \
  "  adcq %r12, %r12\n"                      \
  "  adcq %r13, %r13\n"                      \
  "  adcq %r14, %r14\n"                      \
  "  adcq %r15, %r15\n"                      \
  "  movq 0(%rsi), %rdx\n"                   \
  "  mulxq %rdx, %r8, %rax\n"                \
  "  addq %rax, %r9\n"                       \
  "  movq 8(%rsi), %rdx\n"                   \
  "  mulxq %rdx, %rax, %rbx\n"               \
  "  adcq %rax, %r10\n"                      \
  "  adcq %rbx, %r11\n"                      \
  "  movq 16(%rsi), %rdx\n"                  \
  "  mulxq %rdx, %rax, %rbx\n"               \
  "  adcq %rax, %r12\n"                      \
  "  adcq %rbx, %r13\n"                      \
  "  movq 24(%rsi), %rdx\n"                  \
  "  mulxq %rdx, %rax, %rbx\n"               \
  "  adcq %rax, %r14\n"                      \
  "  adcq %rbx, %r15\n"

// Row i >= 1 of the product a·b: (%rsi)·(8i(%rcx)) added into t_i..t_{i+4}, t_{i+4} fresh.
#define FEDANON_P256_ROW(off, t0, t1, t2, t3, t4) \
  "  movq " off "(%rcx), %rdx\n"                  \
  "  xorl " t4 "d, " t4 "d\n"                     \
  "  mulxq 0(%rsi), %rax, %rbx\n"                 \
  "  adcxq %rax, " t0 "\n"                        \
  "  adoxq %rbx, " t1 "\n"                        \
  "  mulxq 8(%rsi), %rax, %rbx\n"                 \
  "  adcxq %rax, " t1 "\n"                        \
  "  adoxq %rbx, " t2 "\n"                        \
  "  mulxq 16(%rsi), %rax, %rbx\n"                \
  "  adcxq %rax, " t2 "\n"                        \
  "  adoxq %rbx, " t3 "\n"                        \
  "  mulxq 24(%rsi), %rax, %rbx\n"                \
  "  adcxq %rax, " t3 "\n"                        \
  "  adoxq %rbx, " t4 "\n"                        \
  "  movl $0, %eax\n"                             \
  "  adcxq %rax, " t4 "\n"

#define FEDANON_P256_PUSH \
  "  pushq %rbx\n"        \
  "  pushq %rbp\n"        \
  "  pushq %r12\n"        \
  "  pushq %r13\n"        \
  "  pushq %r14\n"        \
  "  pushq %r15\n"
#define FEDANON_P256_POP_RET \
  "  popq %r15\n"            \
  "  popq %r14\n"            \
  "  popq %r13\n"            \
  "  popq %r12\n"            \
  "  popq %rbp\n"            \
  "  popq %rbx\n"            \
  "  ret\n"

__asm__(
    "  .pushsection .rodata\n"
    "  .p2align 3\n"
    ".Lfedanon_p256_p1:\n"
    "  .quad 0x00000000ffffffff\n"
    ".Lfedanon_p256_p3:\n"
    "  .quad 0xffffffff00000001\n"
    "  .popsection\n"
    "  .pushsection .text\n"
    "  .p2align 4\n"
    "  .globl fedanon_p256_mul_mont_adx\n"
    "  .hidden fedanon_p256_mul_mont_adx\n"
    "  .type fedanon_p256_mul_mont_adx, @function\n"
    "fedanon_p256_mul_mont_adx:\n"
    FEDANON_P256_PUSH
    "  movq %rdx, %rcx\n"
    // Row 0: a·b[0] into r8..r12.
    "  movq 0(%rcx), %rdx\n"
    "  mulxq 0(%rsi), %r8, %r9\n"
    "  mulxq 8(%rsi), %rax, %r10\n"
    "  addq %rax, %r9\n"
    "  mulxq 16(%rsi), %rax, %r11\n"
    "  adcq %rax, %r10\n"
    "  mulxq 24(%rsi), %rax, %r12\n"
    "  adcq %rax, %r11\n"
    "  adcq $0, %r12\n"
    FEDANON_P256_ROW("8", "%r9", "%r10", "%r11", "%r12", "%r13")
    FEDANON_P256_ROW("16", "%r10", "%r11", "%r12", "%r13", "%r14")
    FEDANON_P256_ROW("24", "%r11", "%r12", "%r13", "%r14", "%r15")
    FEDANON_P256_REDUCE_AND_STORE
    FEDANON_P256_POP_RET
    "  .size fedanon_p256_mul_mont_adx, .-fedanon_p256_mul_mont_adx\n"

    "  .p2align 4\n"
    "  .globl fedanon_p256_sqr_mont_adx\n"
    "  .hidden fedanon_p256_sqr_mont_adx\n"
    "  .type fedanon_p256_sqr_mont_adx, @function\n"
    "fedanon_p256_sqr_mont_adx:\n"
    FEDANON_P256_PUSH
    FEDANON_P256_SQUARE
    FEDANON_P256_REDUCE_AND_STORE
    FEDANON_P256_POP_RET
    "  .size fedanon_p256_sqr_mont_adx, .-fedanon_p256_sqr_mont_adx\n"

    "  .p2align 4\n"
    "  .globl fedanon_p256_sqr_n_mont_adx\n"
    "  .hidden fedanon_p256_sqr_n_mont_adx\n"
    "  .type fedanon_p256_sqr_n_mont_adx, @function\n"
    "fedanon_p256_sqr_n_mont_adx:\n"
    FEDANON_P256_PUSH
    "  pushq %rdx\n"  // the count
    ".Lfedanon_p256_sqr_n_loop:\n"
    FEDANON_P256_SQUARE
    FEDANON_P256_REDUCE_AND_STORE
    "  movq %rdi, %rsi\n"
    "  decq (%rsp)\n"
    "  jnz .Lfedanon_p256_sqr_n_loop\n"
    "  popq %rdx\n"
    FEDANON_P256_POP_RET
    "  .size fedanon_p256_sqr_n_mont_adx, .-fedanon_p256_sqr_n_mont_adx\n"
    "  .popsection\n");

#undef FEDANON_P256_ROUND
#undef FEDANON_P256_REDUCE_AND_STORE
#undef FEDANON_P256_SQUARE
#undef FEDANON_P256_ROW
#undef FEDANON_P256_PUSH
#undef FEDANON_P256_POP_RET
// clang-format on
#endif  // FEDANON_P256_ADX

namespace fedanon::crypto::p256 {
namespace {

using u128 = unsigned __int128;

// p, little-endian limbs. p ≡ -1 mod 2^64, so the Montgomery factor -p^-1 mod 2^64 is 1.
constexpr uint64_t kP[4] = {0xffffffffffffffffULL, 0x00000000ffffffffULL, 0x0000000000000000ULL,
                            0xffffffff00000001ULL};
// R = 2^256 mod p (the Montgomery form of 1) and R^2 mod p.
constexpr Fe kOne = {
    {0x0000000000000001ULL, 0xffffffff00000000ULL, 0xffffffffffffffffULL, 0x00000000fffffffeULL}};
constexpr Fe kR2 = {
    {0x0000000000000003ULL, 0xfffffffbffffffffULL, 0xfffffffffffffffeULL, 0x00000004fffffffdULL}};

// Hides a mask from the optimiser so that selections stay branch-free.
inline uint64_t Barrier(uint64_t x) {
  __asm__("" : "+r"(x));
  return x;
}

inline uint64_t AddCarry(uint64_t a, uint64_t b, uint64_t carry_in, uint64_t* carry_out) {
  const u128 s = static_cast<u128>(a) + b + carry_in;
  *carry_out = static_cast<uint64_t>(s >> 64);
  return static_cast<uint64_t>(s);
}

inline uint64_t SubBorrow(uint64_t a, uint64_t b, uint64_t borrow_in, uint64_t* borrow_out) {
  const u128 d = static_cast<u128>(a) - b - borrow_in;
  *borrow_out = static_cast<uint64_t>(d >> 64) & 1;
  return static_cast<uint64_t>(d);
}

// r = t mod p for t = (t4 t3 t2 t1 t0) < 2p.
inline void ReduceOnce(uint64_t r[4], const uint64_t t[4], uint64_t t4) {
  uint64_t s[4];
  uint64_t b = 0;
  for (int i = 0; i < 4; ++i) s[i] = SubBorrow(t[i], kP[i], b, &b);
  SubBorrow(t4, 0, b, &b);               // b = 1 iff t < p: keep t
  const uint64_t keep = Barrier(0 - b);  // all-ones: t, zero: t - p
  for (int i = 0; i < 4; ++i) r[i] = (t[i] & keep) | (s[i] & ~keep);
}

// Montgomery reduction of the 512-bit t = (t7 ... t0) < 2^256·p: r = t·2^-256 mod p. Each of the
// four rounds adds m·p with m = the lowest limb, using p's form (m·p = m·2^256 - m·2^224 + m·2^192
// + m·2^96 - m): the lowest limb cancels into a carry of m, so a round costs one multiplication.
__attribute__((always_inline)) inline void MontReduce(uint64_t r[4], uint64_t t0, uint64_t t1,
                                                      uint64_t t2, uint64_t t3, uint64_t t4,
                                                      uint64_t t5, uint64_t t6, uint64_t t7) {
  uint64_t top = 0;  // carry out of the highest limb touched so far
  auto round = [&top](uint64_t m, uint64_t& l1, uint64_t& l2, uint64_t& l3, uint64_t& l4) {
    u128 y = static_cast<u128>(l1) + (m << 32);
    l1 = static_cast<uint64_t>(y);
    y = static_cast<u128>(l2) + (m >> 32) + static_cast<uint64_t>(y >> 64);
    l2 = static_cast<uint64_t>(y);
    y = static_cast<u128>(m) * kP[3] + l3 + static_cast<uint64_t>(y >> 64);
    l3 = static_cast<uint64_t>(y);
    y = static_cast<u128>(l4) + static_cast<uint64_t>(y >> 64) + top;
    l4 = static_cast<uint64_t>(y);
    top = static_cast<uint64_t>(y >> 64);
  };
  round(t0, t1, t2, t3, t4);
  round(t1, t2, t3, t4, t5);
  round(t2, t3, t4, t5, t6);
  round(t3, t4, t5, t6, t7);
  const uint64_t t[4] = {t4, t5, t6, t7};  // + top·2^256, < 2p
  ReduceOnce(r, t, top);
}

// Montgomery multiplication a·b·2^-256 mod p; a < 2^256, b < p. Schoolbook product, then
// MontReduce.
inline void MontMulC(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
  // Row i adds a[i]·b at limb i; written out so that every limb stays in a register.
  uint64_t t0, t1, t2, t3, t4, t5, t6, t7;
  u128 x = static_cast<u128>(a[0]) * b[0];
  t0 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[0]) * b[1] + static_cast<uint64_t>(x >> 64);
  t1 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[0]) * b[2] + static_cast<uint64_t>(x >> 64);
  t2 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[0]) * b[3] + static_cast<uint64_t>(x >> 64);
  t3 = static_cast<uint64_t>(x);
  t4 = static_cast<uint64_t>(x >> 64);
  x = static_cast<u128>(a[1]) * b[0] + t1;
  t1 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[1]) * b[1] + t2 + static_cast<uint64_t>(x >> 64);
  t2 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[1]) * b[2] + t3 + static_cast<uint64_t>(x >> 64);
  t3 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[1]) * b[3] + t4 + static_cast<uint64_t>(x >> 64);
  t4 = static_cast<uint64_t>(x);
  t5 = static_cast<uint64_t>(x >> 64);
  x = static_cast<u128>(a[2]) * b[0] + t2;
  t2 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[2]) * b[1] + t3 + static_cast<uint64_t>(x >> 64);
  t3 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[2]) * b[2] + t4 + static_cast<uint64_t>(x >> 64);
  t4 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[2]) * b[3] + t5 + static_cast<uint64_t>(x >> 64);
  t5 = static_cast<uint64_t>(x);
  t6 = static_cast<uint64_t>(x >> 64);
  x = static_cast<u128>(a[3]) * b[0] + t3;
  t3 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[3]) * b[1] + t4 + static_cast<uint64_t>(x >> 64);
  t4 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[3]) * b[2] + t5 + static_cast<uint64_t>(x >> 64);
  t5 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[3]) * b[3] + t6 + static_cast<uint64_t>(x >> 64);
  t6 = static_cast<uint64_t>(x);
  t7 = static_cast<uint64_t>(x >> 64);
  MontReduce(r, t0, t1, t2, t3, t4, t5, t6, t7);
}

// Montgomery squaring: the 6 cross products once, doubled, plus the 4 squares.
inline void MontSqrC(uint64_t r[4], const uint64_t a[4]) {
  uint64_t t0, t1, t2, t3, t4, t5, t6, t7, c;
  u128 x = static_cast<u128>(a[0]) * a[1];
  t1 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[0]) * a[2] + static_cast<uint64_t>(x >> 64);
  t2 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[0]) * a[3] + static_cast<uint64_t>(x >> 64);
  t3 = static_cast<uint64_t>(x);
  t4 = static_cast<uint64_t>(x >> 64);
  x = static_cast<u128>(a[1]) * a[2] + t3;
  t3 = static_cast<uint64_t>(x);
  x = static_cast<u128>(a[1]) * a[3] + t4 + static_cast<uint64_t>(x >> 64);
  t4 = static_cast<uint64_t>(x);
  t5 = static_cast<uint64_t>(x >> 64);
  x = static_cast<u128>(a[2]) * a[3] + t5;
  t5 = static_cast<uint64_t>(x);
  t6 = static_cast<uint64_t>(x >> 64);
  t7 = t6 >> 63;
  t6 = (t6 << 1) | (t5 >> 63);
  t5 = (t5 << 1) | (t4 >> 63);
  t4 = (t4 << 1) | (t3 >> 63);
  t3 = (t3 << 1) | (t2 >> 63);
  t2 = (t2 << 1) | (t1 >> 63);
  t1 = t1 << 1;
  u128 sq = static_cast<u128>(a[0]) * a[0];
  t0 = static_cast<uint64_t>(sq);
  t1 = AddCarry(t1, static_cast<uint64_t>(sq >> 64), 0, &c);
  sq = static_cast<u128>(a[1]) * a[1];
  t2 = AddCarry(t2, static_cast<uint64_t>(sq), c, &c);
  t3 = AddCarry(t3, static_cast<uint64_t>(sq >> 64), c, &c);
  sq = static_cast<u128>(a[2]) * a[2];
  t4 = AddCarry(t4, static_cast<uint64_t>(sq), c, &c);
  t5 = AddCarry(t5, static_cast<uint64_t>(sq >> 64), c, &c);
  sq = static_cast<u128>(a[3]) * a[3];
  t6 = AddCarry(t6, static_cast<uint64_t>(sq), c, &c);
  t7 = AddCarry(t7, static_cast<uint64_t>(sq >> 64), c, &c);
  MontReduce(r, t0, t1, t2, t3, t4, t5, t6, t7);
}

// The assembly needs BMI2 (MULX) and ADX (ADCX/ADOX): CPUID at startup, read-only afterwards.
// Until this initializer has run (other static initializers), the portable code is used; both
// give the same results.
bool DetectAdx() {
#if FEDANON_P256_ADX
  // CPUID leaf 7, subleaf 0: EBX bit 8 = BMI2, bit 19 = ADX (cpuid.h works in GCC and clang;
  // clang's __builtin_cpu_supports does not know "adx").
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((ebx >> 8) & 1) != 0 && ((ebx >> 19) & 1) != 0;
#else
  return false;
#endif
}
const bool kHaveAdx = DetectAdx();
// Whether FeMul/FeSqr use the assembly: kHaveAdx, unless a test turned it off
// (FeSetAsmForTesting). Relaxed loads: a plain load on x86-64.
std::atomic<bool> g_use_adx{kHaveAdx};
inline bool UseAdx() { return g_use_adx.load(std::memory_order_relaxed); }

inline void MontMul(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
#if FEDANON_P256_ADX
  if (UseAdx()) return fedanon_p256_mul_mont_adx(r, a, b);
#endif
  MontMulC(r, a, b);
}

inline void MontSqr(uint64_t r[4], const uint64_t a[4]) {
#if FEDANON_P256_ADX
  if (UseAdx()) return fedanon_p256_sqr_mont_adx(r, a);
#endif
  MontSqrC(r, a);
}

// Exponentiations of N independent elements in lock step ("lanes"): the loops over the lanes put
// N independent multiplication chains side by side, which the processor overlaps.
template <int N>
inline void SqrNLanes(Fe* r, int n) {
#if FEDANON_P256_ADX
  if (n > 0 && UseAdx()) {
    for (int l = 0; l < N; ++l) fedanon_p256_sqr_n_mont_adx(r[l].v, r[l].v, n);
    return;
  }
#endif
  for (int i = 0; i < n; ++i) {
    for (int l = 0; l < N; ++l) MontSqr(r[l].v, r[l].v);
  }
}

void SqrN(Fe* r, const Fe& a, int n) {
  *r = a;
  SqrNLanes<1>(r, n);
}

template <int N>
inline void MulLanes(Fe* r, const Fe* a, const Fe* b) {
  for (int l = 0; l < N; ++l) MontMul(r[l].v, a[l].v, b[l].v);
}

// a^(2^k - 1) for the k the chains below need.
template <int N>
struct Powers {
  Fe x2[N], x30[N], x32[N];
};

template <int N>
void OnesPowers(const Fe* a, Powers<N>* pw) {
  Fe x3[N], x6[N], x12[N], x15[N], t[N];
  for (int l = 0; l < N; ++l) t[l] = a[l];
  SqrNLanes<N>(t, 1);
  MulLanes<N>(pw->x2, t, a);  // 2 ones
  for (int l = 0; l < N; ++l) t[l] = pw->x2[l];
  SqrNLanes<N>(t, 1);
  MulLanes<N>(x3, t, a);  // 3
  for (int l = 0; l < N; ++l) t[l] = x3[l];
  SqrNLanes<N>(t, 3);
  MulLanes<N>(x6, t, x3);  // 6
  for (int l = 0; l < N; ++l) t[l] = x6[l];
  SqrNLanes<N>(t, 6);
  MulLanes<N>(x12, t, x6);  // 12
  for (int l = 0; l < N; ++l) t[l] = x12[l];
  SqrNLanes<N>(t, 3);
  MulLanes<N>(x15, t, x3);  // 15
  for (int l = 0; l < N; ++l) t[l] = x15[l];
  SqrNLanes<N>(t, 15);
  MulLanes<N>(pw->x30, t, x15);  // 30
  for (int l = 0; l < N; ++l) t[l] = pw->x30[l];
  SqrNLanes<N>(t, 2);
  MulLanes<N>(pw->x32, t, pw->x2);  // 32
}

template <int N>
void PowC1Lanes(Fe* r, const Fe* a) {
  // (p - 3) / 4, 254 bits: 32 ones, 31 zeros, a one, 96 zeros, 94 ones.
  Powers<N> pw;
  OnesPowers<N>(a, &pw);
  Fe t[N];
  for (int l = 0; l < N; ++l) t[l] = pw.x32[l];
  SqrNLanes<N>(t, 32);
  MulLanes<N>(t, t, a);
  SqrNLanes<N>(t, 96 + 32);
  MulLanes<N>(t, t, pw.x32);
  SqrNLanes<N>(t, 32);
  MulLanes<N>(t, t, pw.x32);
  SqrNLanes<N>(t, 30);
  MulLanes<N>(r, t, pw.x30);
}

}  // namespace

void FeMul(Fe* r, const Fe& a, const Fe& b) { MontMul(r->v, a.v, b.v); }
void FeSqr(Fe* r, const Fe& a) { MontSqr(r->v, a.v); }
void FeMulPortable(Fe* r, const Fe& a, const Fe& b) { MontMulC(r->v, a.v, b.v); }
void FeSqrPortable(Fe* r, const Fe& a) { MontSqrC(r->v, a.v); }
bool FeUsesAsm() { return UseAdx(); }
void FeSetAsmForTesting(bool on) { g_use_adx.store(on && kHaveAdx, std::memory_order_relaxed); }

void FeAdd(Fe* r, const Fe& a, const Fe& b) {
  uint64_t t[4];
  uint64_t c = 0;
  for (int i = 0; i < 4; ++i) t[i] = AddCarry(a.v[i], b.v[i], c, &c);
  ReduceOnce(r->v, t, c);
}

void FeSub(Fe* r, const Fe& a, const Fe& b) {
  uint64_t t[4];
  uint64_t bw = 0;
  for (int i = 0; i < 4; ++i) t[i] = SubBorrow(a.v[i], b.v[i], bw, &bw);
  const uint64_t add_p = Barrier(0 - bw);  // a < b: add p back
  uint64_t c = 0;
  for (int i = 0; i < 4; ++i) r->v[i] = AddCarry(t[i], kP[i] & add_p, c, &c);
}

void FeNeg(Fe* r, const Fe& a) { FeSub(r, FeZero(), a); }

void FeSelect(Fe* r, uint64_t mask, const Fe& a, const Fe& b) {
  const uint64_t m = Barrier(mask);
  for (int i = 0; i < 4; ++i) r->v[i] = (a.v[i] & m) | (b.v[i] & ~m);
}

uint64_t FeIsZero(const Fe& a) {
  const uint64_t x = a.v[0] | a.v[1] | a.v[2] | a.v[3];
  return ((x | (0 - x)) >> 63) ^ 1;
}

uint64_t FeEqual(const Fe& a, const Fe& b) {
  Fe d;
  for (int i = 0; i < 4; ++i) d.v[i] = a.v[i] ^ b.v[i];
  return FeIsZero(d);
}

void FeInv(Fe* r, const Fe& a) {
  // p - 2 = ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff fffffffd (32-bit words).
  Powers<1> pw;
  OnesPowers<1>(&a, &pw);
  Fe t;
  SqrN(&t, pw.x32[0], 32);
  FeMul(&t, t, a);  // ffffffff 00000001
  SqrN(&t, t, 128);
  FeMul(&t, t, pw.x32[0]);  // 00000000 00000000 00000000 ffffffff
  SqrN(&t, t, 32);
  FeMul(&t, t, pw.x32[0]);  // ffffffff
  SqrN(&t, t, 30);
  FeMul(&t, t, pw.x30[0]);
  SqrN(&t, t, 2);
  FeMul(r, t, a);  // fffffffd
}

void FeBatchInv(Fe* r, const Fe* a, size_t n, Fe* scratch) {
  if (n == 0) return;
  // scratch[i] = a'[0]·...·a'[i], with a' = a but 1 for 0 (so one zero does not zero the rest).
  const Fe one = kOne;
  Fe acc = one;
  for (size_t i = 0; i < n; ++i) {
    Fe x;
    FeSelect(&x, MaskFromBit(FeIsZero(a[i])), one, a[i]);
    FeMul(&acc, acc, x);
    scratch[i] = acc;
  }
  Fe inv;
  FeInv(&inv, acc);  // 1 / (a'[0]·...·a'[n-1])
  for (size_t i = n; i-- > 0;) {
    // inv = 1 / (a'[0]·...·a'[i]): a'[i]^-1 = inv·scratch[i-1]; then drop a'[i] from inv.
    Fe x, ri;
    const uint64_t zero = MaskFromBit(FeIsZero(a[i]));
    FeSelect(&x, zero, one, a[i]);
    if (i > 0) {
      FeMul(&ri, inv, scratch[i - 1]);
    } else {
      ri = inv;
    }
    FeMul(&inv, inv, x);
    FeSelect(&r[i], zero, FeZero(), ri);
  }
}

void FePowC1(Fe* r, const Fe& a) { PowC1Lanes<1>(r, &a); }

void FePowC1x2(Fe r[2], const Fe a[2]) { PowC1Lanes<2>(r, a); }

uint64_t FeSqrt(Fe* r, const Fe& a) {
  Fe t, check;
  FePowC1(&t, a);
  FeMul(&t, t, a);  // a^((p-3)/4 + 1) = a^((p+1)/4)
  FeSqr(&check, t);
  *r = t;
  return FeEqual(check, a);
}

uint64_t FeSgn0(const Fe& a) {
  constexpr uint64_t kPlainOne[4] = {1, 0, 0, 0};
  uint64_t t[4];
  MontMul(t, a.v, kPlainOne);
  return t[0] & 1;
}

Fe FeZero() { return Fe{{0, 0, 0, 0}}; }
Fe FeOne() { return kOne; }

bool FeFromBytes(Fe* r, const uint8_t in[32]) {
  uint64_t t[4];
  for (int i = 0; i < 4; ++i) {
    uint64_t w = 0;
    for (int j = 0; j < 8; ++j) w = (w << 8) | in[(3 - i) * 8 + j];
    t[i] = w;
  }
  uint64_t b = 0;
  for (int i = 0; i < 4; ++i) SubBorrow(t[i], kP[i], b, &b);
  if (b == 0) return false;  // t >= p (public: see the header)
  MontMul(r->v, t, kR2.v);
  return true;
}

void FeFromWideBytes(Fe* r, const uint8_t in[48]) {
  // in = hi·2^256 + lo with hi < 2^128: r = lo·R + hi·2^256·R = Mont(lo, R^2) + Mont(hi, R^3).
  static const Fe r3 = [] {
    Fe x;
    FeMul(&x, kR2, kR2);
    return x;
  }();
  uint64_t hi[4] = {0, 0, 0, 0};
  uint64_t lo[4];
  for (int i = 0; i < 2; ++i) {
    uint64_t w = 0;
    for (int j = 0; j < 8; ++j) w = (w << 8) | in[(1 - i) * 8 + j];
    hi[i] = w;
  }
  for (int i = 0; i < 4; ++i) {
    uint64_t w = 0;
    for (int j = 0; j < 8; ++j) w = (w << 8) | in[16 + (3 - i) * 8 + j];
    lo[i] = w;
  }
  Fe a, b;
  MontMul(a.v, lo, kR2.v);  // lo < 2^256 is fine as the first operand
  MontMul(b.v, hi, r3.v);
  FeAdd(r, a, b);
}

void FeToBytes(uint8_t out[32], const Fe& a) {
  constexpr uint64_t kPlainOne[4] = {1, 0, 0, 0};
  uint64_t t[4];
  MontMul(t, a.v, kPlainOne);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) out[(3 - i) * 8 + j] = static_cast<uint8_t>(t[i] >> (56 - 8 * j));
  }
}

Fe FeFromUint64(uint64_t x) {
  const uint64_t t[4] = {x, 0, 0, 0};
  Fe r;
  MontMul(r.v, t, kR2.v);
  return r;
}

}  // namespace fedanon::crypto::p256
