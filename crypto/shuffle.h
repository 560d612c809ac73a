// Uniform random permutations (Fisher-Yates with rejection sampling): from the OpenSSL CSPRNG, for
// shuffling the secure set union so that order reveals nothing about origin; and from a shared
// secret seed (AES-256-CTR keystream), so that parties holding the same seed draw the same secret
// permutation (the vertical release order, docs/vertical.md).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fedanon::crypto {

// Bytes of the seed SeededPermutation takes.
inline constexpr size_t kPermutationSeedBytes = 32;

// A uniformly random permutation of 0..n-1.
absl::StatusOr<std::vector<size_t>> SecurePermutation(size_t n);

// The permutation of 0..n-1 determined by `seed` (kPermutationSeedBytes secret bytes): the same
// seed gives the same permutation, and without the seed it is indistinguishable from a uniform one.
absl::StatusOr<std::vector<size_t>> SeededPermutation(std::string_view seed, size_t n);

}  // namespace fedanon::crypto
