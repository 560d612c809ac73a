#include "crypto/shuffle.h"

#include <openssl/rand.h>

#include <numeric>

namespace fedanon::crypto {
namespace {

// Uniform in [0, bound) by rejection sampling on 64-bit draws (drawn in batches).
class UniformDraws {
 public:
  absl::StatusOr<uint64_t> Below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    while (true) {
      if (pos_ == buf_.size()) {
        if (RAND_bytes(reinterpret_cast<unsigned char*>(buf_.data()),
                       static_cast<int>(buf_.size() * sizeof(uint64_t))) != 1) {
          return absl::InternalError("the random generator failed");
        }
        pos_ = 0;
      }
      const uint64_t x = buf_[pos_++];
      if (x < limit) return x % bound;
    }
  }

 private:
  std::vector<uint64_t> buf_ = std::vector<uint64_t>(512);
  size_t pos_ = 512;
};

}  // namespace

absl::StatusOr<std::vector<size_t>> SecurePermutation(size_t n) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  UniformDraws draws;
  for (size_t i = n; i > 1; --i) {
    auto j = draws.Below(i);
    if (!j.ok()) return j.status();
    std::swap(p[i - 1], p[*j]);
  }
  return p;
}

}  // namespace fedanon::crypto
