// Bit-level helpers of the OT extension (crypto/ot_extension.h). Internal to crypto/.
//
// TransposeColumns turns the IKNP matrix, held as 128 columns of `rows` bits each, into its
// `rows` rows of 128 bits (one Block each): bit j of row i is bit i of column j. It works on
// 64 x 64 tiles with the recursive block swap (Warren, Hacker's Delight §7-3).
//
// CarrylessMultiply is the product of two polynomials of degree < 128 over GF(2), unreduced (256
// bits): the OT extension's consistency check (Keller, Orsini and Scholl, CRYPTO 2015) is a
// linear relation that holds in GF(2)[x] whenever it holds in GF(2^128), and checking it before
// reduction is at least as strict. Constant time in both operands (no branch or index on a bit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "crypto/block.h"

namespace fedanon::crypto::mpc {

// `columns` holds 128 columns, column j at columns + j * (rows / 8) bytes, bit i of a column at
// byte i / 8, bit i % 8. `rows` is a multiple of 64. `out` receives `rows` Blocks: bit j of
// out[i] (bit j % 64 of word lo for j < 64, of hi otherwise) is bit i of column j.
void TransposeColumns(const uint8_t* columns, size_t rows, Block* out);

// Transposes a 64 x 64 bit matrix in place: bit j of a[i] becomes bit i of a[j].
void Transpose64(uint64_t a[64]);

// The 256-bit product a * b over GF(2)[x] (bit k of a Block is the coefficient of x^k).
struct Block256 {
  Block low;
  Block high;
  friend Block256 operator^(const Block256& a, const Block256& b) {
    return {a.low ^ b.low, a.high ^ b.high};
  }
  friend bool operator==(const Block256& a, const Block256& b) = default;
};
// With PCLMULQDQ where the CPU has it, else CarrylessMultiplyPortable (64 masked shifts per
// 64 x 64 product).
Block256 CarrylessMultiply(Block a, Block b);
Block256 CarrylessMultiplyPortable(Block a, Block b);

}  // namespace fedanon::crypto::mpc
