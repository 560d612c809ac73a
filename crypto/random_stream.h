// The randomness of one secure comparison (crypto/secure_comparison.h) as a stream derived from a
// 32-byte seed: the garbling delta and labels, the base OTs' scalars and choice, the OT
// extension's padding rows. A party that keeps the seed (in its 0600 state file) can run the
// same comparison steps again after a restart and obtain the same messages and state; without a
// kept seed the stream is seeded from OpenSSL's DRBG. Internal to crypto/.
//
// Fill(n) takes the next n bytes: draw i is AES-128-CTR (counter block zero) under the key
// SHA-256("fedanon comparison randomness v1" || label || seed || i)[0..16), so a stream never
// reuses a keystream, and two streams of one seed with different labels are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::crypto::mpc {

inline constexpr size_t kRandomSeedBytes = 32;

class RandomStream {
 public:
  // `seed`: kRandomSeedBytes; `label` separates the streams one seed feeds.
  static absl::StatusOr<RandomStream> FromSeed(std::string_view seed, std::string_view label);
  // A stream seeded from OpenSSL's DRBG.
  static absl::StatusOr<RandomStream> Fresh(std::string_view label);
  ~RandomStream();
  RandomStream(RandomStream&& other) noexcept;
  RandomStream& operator=(RandomStream&& other) noexcept;
  RandomStream(const RandomStream&) = delete;
  RandomStream& operator=(const RandomStream&) = delete;

  absl::Status Fill(uint8_t* out, size_t n);

 private:
  RandomStream() = default;
  std::string prefix_;  // domain || label || seed
  uint64_t draws_ = 0;
};

}  // namespace fedanon::crypto::mpc
