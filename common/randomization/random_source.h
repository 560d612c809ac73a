// Random words for the randomized methods (random anonymization): either a reproducible stream
// derived from a seed, for tests and experiments, or an unpredictable stream from OpenSSL's
// CSPRNG, for releases.
//
// Seeded: xoshiro256** seeded through splitmix64 (Blackman & Vigna); integer arithmetic only, so
// the same seed gives the same words, and the same randomized table, on every platform. Not
// cryptographic: anyone who knows the seed can redo the randomization and undo it record by
// record, so a published randomization must never come from a seeded source.
// Unpredictable: words from RAND_bytes (crypto::FillRandom), buffered.
//
// Thread-safety: a RandomSource is not thread-safe; use one per thread.
// Errors: a CSPRNG failure is sticky: status() reports it and every word drawn after it is zero,
// so callers must check status() before using anything they drew.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace fedanon::randomization {

class RandomSource {
 public:
  // A reproducible stream: the same seed gives the same words.
  static std::unique_ptr<RandomSource> Seeded(uint64_t seed);
  // A fresh unpredictable stream from the OpenSSL CSPRNG.
  static std::unique_ptr<RandomSource> Unpredictable();

  virtual ~RandomSource() = default;
  RandomSource(const RandomSource&) = delete;
  RandomSource& operator=(const RandomSource&) = delete;

  // 64 uniformly random bits.
  uint64_t NextWord() {
    if (next_ == buffer_.size()) Refill();
    return buffer_[next_++];
  }
  // Uniform in [0, n) for n > 0, without bias (Lemire's multiply-shift with rejection); 0 if n ==
  // 0.
  uint64_t Below(uint64_t n);
  // Uniform in [0, 1), a multiple of 2^-53.
  double Unit() { return static_cast<double>(NextWord() >> 11) * 0x1.0p-53; }

  // OK unless the CSPRNG failed (then every word drawn since is zero and must not be used).
  const absl::Status& status() const { return status_; }
  // True for Seeded() streams.
  virtual bool reproducible() const = 0;

 protected:
  RandomSource();
  // Overwrites `words` with fresh random words; on failure sets the sticky status (the caller
  // then zeroes the buffer).
  virtual void Fill(std::vector<uint64_t>& words) = 0;
  void Fail(absl::Status status) { status_.Update(std::move(status)); }

 private:
  void Refill();

  std::vector<uint64_t> buffer_;
  size_t next_;
  absl::Status status_;
};

}  // namespace fedanon::randomization
