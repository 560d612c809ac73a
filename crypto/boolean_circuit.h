// Boolean circuits for the secure comparison (crypto/secure_comparison.h): the gate list the
// garbler garbles and the evaluator evaluates, a builder that folds constants as it goes, the
// arithmetic the comparisons need (addition mod 2^n, comparison, multiplexing), and a plain
// evaluator the tests check garbled results against. Internal to crypto/.
//
// Wires 0 .. garbler_inputs - 1 are the garbler's input bits, the next evaluator_inputs wires the
// evaluator's, then one public wire that always carries 0 (it gives constants a label when
// folding cannot remove them), then one wire per gate in gate order. Numbers are little-endian
// vectors of bits (bit 0 first). XOR and NOT gates are free in the garbled circuit; AND gates
// cost two ciphertexts each, so the builders use the constructions with one AND per bit
// (Kolesnikov, Sadeghi and Schneider, CANS 2009: the carry of a + b + c is
// c XOR ((a XOR c) AND (b XOR c))).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fedanon::crypto::mpc {

using Wire = uint32_t;

enum class GateKind : uint8_t { kXor, kAnd, kNot };

struct Gate {
  GateKind kind;
  Wire a;
  Wire b;  // unused for kNot
  Wire out;
};

struct Circuit {
  uint32_t garbler_inputs = 0;
  uint32_t evaluator_inputs = 0;
  uint32_t wire_count = 0;
  std::vector<Gate> gates;
  std::vector<Wire> outputs;
  uint32_t and_count = 0;

  Wire zero_wire() const { return garbler_inputs + evaluator_inputs; }
};

// A bit while the circuit is built: a wire, or a constant known to both sides.
struct Bit {
  Wire wire = 0;
  int8_t constant = -1;  // -1: carried by `wire`; 0 or 1: a constant

  static Bit Const(bool v) { return Bit{0, static_cast<int8_t>(v ? 1 : 0)}; }
  bool is_constant() const { return constant >= 0; }
};
using Word = std::vector<Bit>;  // little-endian

class CircuitBuilder {
 public:
  CircuitBuilder(uint32_t garbler_inputs, uint32_t evaluator_inputs);

  Bit GarblerInput(uint32_t i) const { return Bit{i, -1}; }
  Bit EvaluatorInput(uint32_t i) const { return Bit{circuit_.garbler_inputs + i, -1}; }
  // Bits [first, first + width) of the garbler's (evaluator's) inputs as a word.
  Word GarblerWord(uint32_t first, uint32_t width) const;
  Word EvaluatorWord(uint32_t first, uint32_t width) const;
  static Word ConstWord(uint64_t value, uint32_t width);

  Bit Xor(Bit a, Bit b);
  Bit And(Bit a, Bit b);
  Bit Not(Bit a);
  Bit Or(Bit a, Bit b) { return Not(And(Not(a), Not(b))); }

  // a + b mod 2^n (n = a.size() = b.size()): n - 1 AND gates.
  Word Add(const Word& a, const Word& b);
  // [a > b] for unsigned a, b of one width: n AND gates.
  Bit GreaterThan(const Word& a, const Word& b);
  // [a >= c] for unsigned a of any width and a public c < 2^n: at most n AND gates.
  Bit AtLeast(const Word& a, uint64_t c);
  // s ? a : b, bit by bit: n AND gates.
  Word Mux(Bit s, const Word& a, const Word& b);

  // Marks `bit` as the next output. A constant gets a wire from the zero wire.
  void Output(Bit bit);
  Circuit Finish() &&;

 private:
  Wire NewGate(GateKind kind, Wire a, Wire b);
  Circuit circuit_;
};

// The circuit's outputs on plain input bits (one byte, 0 or 1, per bit). kInvalidArgument when an
// input vector has the wrong size.
absl::StatusOr<std::vector<uint8_t>> EvaluatePlain(const Circuit& circuit,
                                                   absl::Span<const uint8_t> garbler_bits,
                                                   absl::Span<const uint8_t> evaluator_bits);

}  // namespace fedanon::crypto::mpc
