#include "crypto/half_gates.h"

namespace fedanon::crypto::mpc {

namespace {

Block Tweak(uint64_t n) { return Block{n, kGarblingTweakDomain}; }

// XOR and NOT gates cost nothing: XOR adds the labels, NOT flips the garbler's zero label by
// delta and leaves the evaluator's active label as it is (`delta` null). False for an AND gate.
bool FreeGate(const Gate& g, size_t batch, const Block* delta, std::vector<Block>& labels) {
  const Block* a = &labels[size_t{g.a} * batch];
  Block* out = &labels[size_t{g.out} * batch];
  if (g.kind == GateKind::kNot) {
    for (size_t i = 0; i < batch; ++i) out[i] = delta != nullptr ? a[i] ^ *delta : a[i];
    return true;
  }
  if (g.kind == GateKind::kXor) {
    const Block* b = &labels[size_t{g.b} * batch];
    for (size_t i = 0; i < batch; ++i) out[i] = a[i] ^ b[i];
    return true;
  }
  return false;
}

}  // namespace

absl::Status GarbleBatch(FixedKeyHash& hash, const Circuit& circuit, Block delta, size_t batch,
                         uint64_t* and_index, std::vector<Block>& labels, Block* tables) {
  std::vector<Block> in(4 * batch);
  std::vector<Block> tweaks(4 * batch);
  std::vector<Block> h(4 * batch);
  uint64_t k = 0;  // AND gates so far in this batch
  for (const Gate& g : circuit.gates) {
    if (FreeGate(g, batch, &delta, labels)) continue;
    const Block* a = &labels[size_t{g.a} * batch];
    const Block* b = &labels[size_t{g.b} * batch];
    Block* out = &labels[size_t{g.out} * batch];
    for (size_t i = 0; i < batch; ++i) {
      const uint64_t n = *and_index + k * batch + i;
      in[4 * i] = a[i];
      in[4 * i + 1] = a[i] ^ delta;
      in[4 * i + 2] = b[i];
      in[4 * i + 3] = b[i] ^ delta;
      tweaks[4 * i] = tweaks[4 * i + 1] = Tweak(2 * n);
      tweaks[4 * i + 2] = tweaks[4 * i + 3] = Tweak(2 * n + 1);
    }
    if (absl::Status s = hash.Hash(in.data(), tweaks.data(), h.data(), 4 * batch); !s.ok()) {
      return s;
    }
    Block* table = tables + 2 * k * batch;
    for (size_t i = 0; i < batch; ++i) {
      const bool pa = a[i].Lsb();
      const bool pb = b[i].Lsb();
      const Block tg = h[4 * i] ^ h[4 * i + 1] ^ SelectIf(pb, delta);
      const Block wg0 = h[4 * i] ^ SelectIf(pa, tg);
      const Block te = h[4 * i + 2] ^ h[4 * i + 3] ^ a[i];
      const Block we0 = h[4 * i + 2] ^ SelectIf(pb, te ^ a[i]);
      out[i] = wg0 ^ we0;
      table[2 * i] = tg;
      table[2 * i + 1] = te;
    }
    ++k;
  }
  *and_index += k * batch;
  return absl::OkStatus();
}

absl::Status EvaluateBatch(FixedKeyHash& hash, const Circuit& circuit, size_t batch,
                           uint64_t* and_index, std::vector<Block>& labels, const Block* tables) {
  std::vector<Block> in(2 * batch);
  std::vector<Block> tweaks(2 * batch);
  std::vector<Block> h(2 * batch);
  uint64_t k = 0;
  for (const Gate& g : circuit.gates) {
    if (FreeGate(g, batch, nullptr, labels)) continue;
    const Block* a = &labels[size_t{g.a} * batch];
    const Block* b = &labels[size_t{g.b} * batch];
    Block* out = &labels[size_t{g.out} * batch];
    for (size_t i = 0; i < batch; ++i) {
      const uint64_t n = *and_index + k * batch + i;
      in[2 * i] = a[i];
      in[2 * i + 1] = b[i];
      tweaks[2 * i] = Tweak(2 * n);
      tweaks[2 * i + 1] = Tweak(2 * n + 1);
    }
    if (absl::Status s = hash.Hash(in.data(), tweaks.data(), h.data(), 2 * batch); !s.ok()) {
      return s;
    }
    const Block* table = tables + 2 * k * batch;
    for (size_t i = 0; i < batch; ++i) {
      const Block wg = h[2 * i] ^ SelectIf(a[i].Lsb(), table[2 * i]);
      const Block we = h[2 * i + 1] ^ SelectIf(b[i].Lsb(), table[2 * i + 1] ^ a[i]);
      out[i] = wg ^ we;
    }
    ++k;
  }
  *and_index += k * batch;
  return absl::OkStatus();
}

}  // namespace fedanon::crypto::mpc
