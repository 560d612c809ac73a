#include "crypto/boolean_circuit.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fedanon::crypto::mpc {

CircuitBuilder::CircuitBuilder(uint32_t garbler_inputs, uint32_t evaluator_inputs) {
  circuit_.garbler_inputs = garbler_inputs;
  circuit_.evaluator_inputs = evaluator_inputs;
  circuit_.wire_count = garbler_inputs + evaluator_inputs + 1;  // + the zero wire
}

Word CircuitBuilder::GarblerWord(uint32_t first, uint32_t width) const {
  Word w(width);
  for (uint32_t k = 0; k < width; ++k) w[k] = GarblerInput(first + k);
  return w;
}

Word CircuitBuilder::EvaluatorWord(uint32_t first, uint32_t width) const {
  Word w(width);
  for (uint32_t k = 0; k < width; ++k) w[k] = EvaluatorInput(first + k);
  return w;
}

Word CircuitBuilder::ConstWord(uint64_t value, uint32_t width) {
  Word w(width);
  for (uint32_t k = 0; k < width; ++k) w[k] = Bit::Const(k < 64 && ((value >> k) & 1) != 0);
  return w;
}

Wire CircuitBuilder::NewGate(GateKind kind, Wire a, Wire b) {
  const Wire out = circuit_.wire_count++;
  circuit_.gates.push_back(Gate{kind, a, b, out});
  if (kind == GateKind::kAnd) ++circuit_.and_count;
  return out;
}

Bit CircuitBuilder::Not(Bit a) {
  if (a.is_constant()) return Bit::Const(a.constant == 0);
  return Bit{NewGate(GateKind::kNot, a.wire, 0), -1};
}

Bit CircuitBuilder::Xor(Bit a, Bit b) {
  if (a.is_constant() && b.is_constant()) return Bit::Const(a.constant != b.constant);
  if (a.is_constant()) return a.constant == 0 ? b : Not(b);
  if (b.is_constant()) return b.constant == 0 ? a : Not(a);
  if (a.wire == b.wire) return Bit::Const(false);
  return Bit{NewGate(GateKind::kXor, a.wire, b.wire), -1};
}

Bit CircuitBuilder::And(Bit a, Bit b) {
  if (a.is_constant()) return a.constant == 0 ? Bit::Const(false) : b;
  if (b.is_constant()) return b.constant == 0 ? Bit::Const(false) : a;
  if (a.wire == b.wire) return a;
  return Bit{NewGate(GateKind::kAnd, a.wire, b.wire), -1};
}

Word CircuitBuilder::Add(const Word& a, const Word& b) {
  Word sum(a.size());
  Bit carry = Bit::Const(false);
  for (size_t k = 0; k < a.size(); ++k) {
    const Bit a_xor_c = Xor(a[k], carry);
    sum[k] = Xor(a_xor_c, b[k]);
    if (k + 1 < a.size()) carry = Xor(carry, And(a_xor_c, Xor(b[k], carry)));
  }
  return sum;
}

Bit CircuitBuilder::GreaterThan(const Word& a, const Word& b) {
  // The carry out of a + NOT b is [a + 2^n - 1 - b >= 2^n] = [a > b].
  Bit carry = Bit::Const(false);
  for (size_t k = 0; k < a.size(); ++k) {
    const Bit not_b = Not(b[k]);
    carry = Xor(carry, And(Xor(a[k], carry), Xor(not_b, carry)));
  }
  return carry;
}

Bit CircuitBuilder::AtLeast(const Word& a, uint64_t c) {
  if (c == 0) return Bit::Const(true);
  // The carry out of a + (2^n - c): [a >= c]. A constant addend bit makes the majority an OR
  // (bit 1) or an AND (bit 0) of a's bit and the carry.
  // 2^n - c: its low 64 bits are those of 2^64 - c (or 2^n - c below 64 bits), every bit above
  // them is 1.
  const size_t n = a.size();
  const uint64_t low = n >= 64 ? (0 - c) : ((uint64_t{1} << n) - c);
  Bit carry = Bit::Const(false);
  for (size_t k = 0; k < n; ++k) {
    const bool bit = k >= 64 || ((low >> k) & 1) != 0;
    carry = bit ? Or(a[k], carry) : And(a[k], carry);
  }
  return carry;
}

Word CircuitBuilder::Mux(Bit s, const Word& a, const Word& b) {
  Word out(a.size());
  for (size_t k = 0; k < a.size(); ++k) out[k] = Xor(b[k], And(s, Xor(a[k], b[k])));
  return out;
}

void CircuitBuilder::Output(Bit bit) {
  if (bit.is_constant()) {
    const Wire zero = circuit_.zero_wire();
    circuit_.outputs.push_back(bit.constant == 0 ? NewGate(GateKind::kXor, zero, zero)
                                                 : NewGate(GateKind::kNot, zero, 0));
    return;
  }
  circuit_.outputs.push_back(bit.wire);
}

Circuit CircuitBuilder::Finish() && { return std::move(circuit_); }

absl::StatusOr<std::vector<uint8_t>> EvaluatePlain(const Circuit& circuit,
                                                   absl::Span<const uint8_t> garbler_bits,
                                                   absl::Span<const uint8_t> evaluator_bits) {
  if (garbler_bits.size() != circuit.garbler_inputs ||
      evaluator_bits.size() != circuit.evaluator_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("circuit takes ", circuit.garbler_inputs, " + ", circuit.evaluator_inputs,
                     " input bits, given ", garbler_bits.size(), " + ", evaluator_bits.size()));
  }
  std::vector<uint8_t> v(circuit.wire_count, 0);
  for (size_t k = 0; k < garbler_bits.size(); ++k) v[k] = garbler_bits[k] & 1;
  for (size_t k = 0; k < evaluator_bits.size(); ++k) {
    v[circuit.garbler_inputs + k] = evaluator_bits[k] & 1;
  }
  for (const Gate& g : circuit.gates) {
    switch (g.kind) {
      case GateKind::kXor:
        v[g.out] = v[g.a] ^ v[g.b];
        break;
      case GateKind::kAnd:
        v[g.out] = v[g.a] & v[g.b];
        break;
      case GateKind::kNot:
        v[g.out] = v[g.a] ^ 1;
        break;
    }
  }
  std::vector<uint8_t> out;
  out.reserve(circuit.outputs.size());
  for (Wire w : circuit.outputs) out.push_back(v[w]);
  return out;
}

}  // namespace fedanon::crypto::mpc
