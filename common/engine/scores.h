// Information measures of the selection criteria: entropy, InfoGain (mohammed2010 Eq. 2-3,
// thesis Eq. 4.2-4.3), SplitInfo (mohammed2011 Eq. 4). Counts in, bits out (log base 2).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace fedanon::engine {

// Entropy of a class distribution given by counts; 0 for an empty or pure distribution.
double Entropy(absl::Span<const uint64_t> class_counts);

// InfoGain of splitting the records with class counts `parent` into `children` (each a class
// count vector of the same width); sum(children) must equal parent.
double InfoGain(absl::Span<const uint64_t> parent,
                const std::vector<std::vector<uint64_t>>& children);

// SplitInfo of splitting `total` records into parts with the given sizes.
double SplitInfo(absl::Span<const uint64_t> part_sizes);

}  // namespace fedanon::engine
