// LabelIndex: a fixed set of short strings (a taxonomy's leaves, declared values) -> int32, for the
// lookups of every cell of a table while it is encoded (common/table/dataset.cc).
//
// The load of UCI Adult spent about 145 instructions per taxonomy cell in an absl::flat_hash_map
// lookup (the general hash of a string_view, the probe, the call to memcmp); this open-addressed
// table hashes a label with a few word loads and multiplications and compares it inline, for a
// third of that. Labels are hashed whole (any byte changes the hash), so a table built from many
// labels that share their first and last bytes still spreads them. The keys are the job's own
// (its spec and taxonomy files); the strings looked up may be anything and cost one hash and a
// probe sequence over at most the keys that collide.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fedanon::table {

class LabelIndex {
 public:
  LabelIndex() = default;

  // Adds `label` -> `value`; an existing label keeps its first value.
  void Add(std::string_view label, int32_t value) {
    if (Find(label) != nullptr) return;
    if (2 * (keys_.size() + 1) > slots_.size()) Grow();
    keys_.emplace_back(label);
    values_.push_back(value);
    Place(static_cast<int32_t>(keys_.size() - 1));
  }

  // The value of `label`, or null.
  const int32_t* Find(std::string_view label) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(label) & mask;; i = (i + 1) & mask) {
      const int32_t k = slots_[i];
      if (k < 0) return nullptr;
      const std::string& key = keys_[k];
      if (key.size() == label.size() && std::memcmp(key.data(), label.data(), label.size()) == 0) {
        return &values_[k];
      }
    }
  }

  size_t size() const { return keys_.size(); }

  static uint64_t Hash(std::string_view s) {
    const char* p = s.data();
    const size_t n = s.size();
    uint64_t h = (n + 1) * 0x9E3779B97F4A7C15ull;
    auto mix = [&h](uint64_t w) {
      h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    };
    if (n >= 8) {
      size_t i = 0;
      for (; i + 8 <= n; i += 8) mix(Load64(p + i));
      if (i < n) mix(Load64(p + n - 8));  // the last bytes, overlapping the words before
    } else if (n >= 4) {
      mix(uint64_t{Load32(p)} << 32 | Load32(p + n - 4));
    } else if (n > 0) {
      mix(uint64_t{static_cast<unsigned char>(p[0])} << 16 |
          uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
          static_cast<unsigned char>(p[n - 1]));
    }
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 29);
  }

 private:
  static uint64_t Load64(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  static uint32_t Load32(const char* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w;
  }
  void Place(int32_t k) {
    const size_t mask = slots_.size() - 1;
    size_t i = Hash(keys_[k]) & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = k;
  }
  void Grow() {
    slots_.assign(slots_.empty() ? 16 : 2 * slots_.size(), -1);
    for (size_t k = 0; k < keys_.size(); ++k) Place(static_cast<int32_t>(k));
  }

  std::vector<int32_t> slots_;  // index into keys_ / values_, -1: empty; size a power of two
  std::vector<std::string> keys_;
  std::vector<int32_t> values_;
};

}  // namespace fedanon::table
