#include "common/engine/scores.h"

#include <cmath>

namespace fedanon::engine {

double Entropy(absl::Span<const uint64_t> class_counts) {
  uint64_t total = 0;
  for (uint64_t c : class_counts) total += c;
  if (total == 0) return 0;
  double h = 0;
  for (uint64_t c : class_counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(total);
    h -= p * std::log2(p);
  }
  return h;
}

double InfoGain(absl::Span<const uint64_t> parent,
                const std::vector<std::vector<uint64_t>>& children) {
  uint64_t total = 0;
  for (uint64_t c : parent) total += c;
  if (total == 0) return 0;
  double remainder = 0;
  for (const auto& child : children) {
    uint64_t n = 0;
    for (uint64_t c : child) n += c;
    if (n == 0) continue;
    remainder += static_cast<double>(n) / static_cast<double>(total) * Entropy(child);
  }
  const double gain = Entropy(parent) - remainder;
  return gain < 0 ? 0 : gain;  // guard against rounding below zero
}

double SplitInfo(absl::Span<const uint64_t> part_sizes) { return Entropy(part_sizes); }

}  // namespace fedanon::engine
