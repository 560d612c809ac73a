// Secure-sum masking over the ring Z/2^64 (unsigned 64-bit arithmetic, wrapping).
//
// Purpose: in the ring secure sum each party adds a fresh uniformly random mask vector to its
// private count vector before handing it on; the initiator removes its own mask at the end. As
// long as the masks are uniform over Z/2^64 and used once, a masked vector is uniformly
// distributed and reveals nothing about the values (one-time pad in the additive group).
//
// Thread-safety: all functions are reentrant; AddInPlace/SubtractInPlace must not race on `acc`.
//
// Security assumptions: semi-honest parties, no collusion between the neighbours of a party in
// the ring; masks come from OpenSSL's CSPRNG and must never be reused (each MaskVector call is
// fresh). Callers must keep the mask secret until the sum is finalised. The additions are plain
// loops whose timing depends only on the lengths (no secret-dependent branches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fedanon::crypto {

// `n` fresh uniform masks from the CSPRNG. kInternal if the DRBG fails.
absl::StatusOr<std::vector<uint64_t>> MaskVector(size_t n);

// A mask vector given by a 32-byte seed, so that the ring's first party can hand its whole mask
// to the leader as one small sealed value: word i is the i-th little-endian 64-bit word of the
// AES-256-CTR keystream under key `seed` with an all-zero initial counter block (a PRG: the
// words are indistinguishable from uniform without the seed). Returns words [offset, offset +
// count). kInvalidArgument unless the seed is kMaskSeedBytes long.
inline constexpr size_t kMaskSeedBytes = 32;
absl::StatusOr<std::vector<uint64_t>> MaskWordsFromSeed(std::string_view seed, uint64_t offset,
                                                        size_t count);

// acc[i] = acc[i] + v[i] mod 2^64. kInvalidArgument (acc untouched) if the sizes differ.
absl::Status AddInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v);

// acc[i] = acc[i] - v[i] mod 2^64. kInvalidArgument (acc untouched) if the sizes differ.
absl::Status SubtractInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v);

}  // namespace fedanon::crypto
