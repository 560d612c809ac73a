#include "common/randomization/random_source.h"

#include <algorithm>
#include <array>

#include "absl/types/span.h"
#include "crypto/secret_bytes.h"

namespace fedanon::randomization {
namespace {

constexpr size_t kBufferWords = 512;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256** (Blackman & Vigna), state seeded through splitmix64.
class SeededSource final : public RandomSource {
 public:
  explicit SeededSource(uint64_t seed) {
    for (uint64_t& word : s_) word = SplitMix64(seed);
  }
  bool reproducible() const override { return true; }

 protected:
  void Fill(std::vector<uint64_t>& words) override {
    for (uint64_t& w : words) {
      w = Rotl(s_[1] * 5, 7) * 9;
      const uint64_t t = s_[1] << 17;
      s_[2] ^= s_[0];
      s_[3] ^= s_[1];
      s_[1] ^= s_[2];
      s_[0] ^= s_[3];
      s_[2] ^= t;
      s_[3] = Rotl(s_[3], 45);
    }
  }

 private:
  std::array<uint64_t, 4> s_;
};

class CsprngSource final : public RandomSource {
 public:
  bool reproducible() const override { return false; }

 protected:
  void Fill(std::vector<uint64_t>& words) override {
    absl::Span<uint8_t> bytes(reinterpret_cast<uint8_t*>(words.data()),
                              words.size() * sizeof(uint64_t));
    if (absl::Status st = crypto::FillRandom(bytes); !st.ok()) Fail(std::move(st));
  }
};

}  // namespace

RandomSource::RandomSource() : buffer_(kBufferWords), next_(kBufferWords) {}

std::unique_ptr<RandomSource> RandomSource::Seeded(uint64_t seed) {
  return std::make_unique<SeededSource>(seed);
}

std::unique_ptr<RandomSource> RandomSource::Unpredictable() {
  return std::make_unique<CsprngSource>();
}

void RandomSource::Refill() {
  if (status_.ok()) Fill(buffer_);
  if (!status_.ok()) std::fill(buffer_.begin(), buffer_.end(), 0);
  next_ = 0;
}

uint64_t RandomSource::Below(uint64_t n) {
  if (n == 0) return 0;
  // Lemire, "Fast random integer generation in an interval" (2019): the high word of x * n is
  // uniform once the low words below 2^64 mod n are rejected.
  unsigned __int128 product = static_cast<unsigned __int128>(NextWord()) * n;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      if (!status_.ok()) return 0;  // a failed CSPRNG yields zeros forever
      product = static_cast<unsigned __int128>(NextWord()) * n;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

}  // namespace fedanon::randomization
