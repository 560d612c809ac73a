// Garbling and evaluating a Boolean circuit (crypto/boolean_circuit.h) with free XOR (Kolesnikov
// and Schneider, ICALP 2008), point-and-permute and half gates (Zahur, Rosulek and Evans,
// EUROCRYPT 2015: two ciphertexts per AND gate), hashing with FixedKeyHash. Internal to crypto/.
//
// One circuit is garbled for `batch` instances in lockstep, gate by gate, so that each gate's
// hashes for all instances go to AES in one call. Labels are laid out [wire * batch + instance];
// the label of value 1 on a wire is its label of value 0 XOR delta, and delta's lowest bit is 1.
// The garbled tables of a batch are gate-major: for AND gate k (in gate order) and instance i,
// tables[2 * (k * batch + i)] and the Block after it. The AND gate k of instance i hashes with the
// tweaks 2g and 2g + 1, g = *and_index + k * batch + i (in the garbling domain), and *and_index
// grows by and_count * batch: the caller keeps one counter per session, so no tweak repeats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "crypto/block.h"
#include "crypto/boolean_circuit.h"
#include "crypto/fixed_key_hash.h"

namespace fedanon::crypto::mpc {

// The high word of every garbling tweak (the OT extension uses another).
inline constexpr uint64_t kGarblingTweakDomain = 0x6761726231000000ULL;  // "garb1"

// Fills the zero-labels of every gate's output wire; the input wires and the zero wire must be
// set in `labels` (size wire_count * batch). Writes 2 * and_count * batch Blocks to `tables`.
absl::Status GarbleBatch(FixedKeyHash& hash, const Circuit& circuit, Block delta, size_t batch,
                         uint64_t* and_index, std::vector<Block>& labels, Block* tables);

// The evaluator's side: `labels` holds the active label of each input wire and of the zero wire;
// fills every gate's output wire with its active label.
absl::Status EvaluateBatch(FixedKeyHash& hash, const Circuit& circuit, size_t batch,
                           uint64_t* and_index, std::vector<Block>& labels, const Block* tables);

}  // namespace fedanon::crypto::mpc
