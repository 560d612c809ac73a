// Uniform random permutations from the OpenSSL CSPRNG (Fisher-Yates with rejection sampling),
// for shuffling the secure set union so that order reveals nothing about origin.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"

namespace fedanon::crypto {

// A uniformly random permutation of 0..n-1.
absl::StatusOr<std::vector<size_t>> SecurePermutation(size_t n);

}  // namespace fedanon::crypto
