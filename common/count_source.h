// Where the engine's count statistics come from — the seam between the top-down specialization
// loop and the data holders. The centralized run uses LocalCountSource (one TIPS in process);
// the federated protocols implement the same interface with secure sums (horizontal) or the
// instruction exchange (vertical), so every mode runs the same loop and makes the same choices.
//
// Group statistics layout for a group with key K (one node per QID attribute), as uint64 words,
// with m = number of tracked sensitive values and stride = 1 + m:
//   [count, sensitive_1..m]                                   the group itself
//   then for each attribute a, for each fine child f of K[a]: [count, sensitive_1..m]
// where attributes whose node cannot be refined contribute nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/hierarchy.h"
#include "common/tips.h"

namespace fedanon::common {

class CountSource {
 public:
  virtual ~CountSource() = default;

  // Every holder refines T[node] by candidate `c` of (attr, node); the shared public hierarchy
  // already holds the new children.
  virtual absl::Status Specialize(int attr, NodeIndex node, int c) = 0;
  // Summed class counts per rank of a continuous node (to choose its split).
  virtual absl::StatusOr<std::vector<uint64_t>> RankClassHistogram(int attr, NodeIndex node) = 0;
  // Summed class counts per fine child of a refinable node.
  virtual absl::StatusOr<std::vector<uint64_t>> NodeClassCounts(int attr, NodeIndex node) = 0;
  // Summed group statistics for each key, concatenated in order.
  virtual absl::StatusOr<std::vector<uint64_t>> GroupStats(
      const std::vector<std::vector<NodeIndex>>& keys) = 0;
};

// In-process source over one TIPS (centralized anonymization).
class LocalCountSource : public CountSource {
 public:
  explicit LocalCountSource(Tips* tips) : tips_(tips) {}  // not owned
  absl::Status Specialize(int attr, NodeIndex node, int c) override;
  absl::StatusOr<std::vector<uint64_t>> RankClassHistogram(int attr, NodeIndex node) override;
  absl::StatusOr<std::vector<uint64_t>> NodeClassCounts(int attr, NodeIndex node) override;
  absl::StatusOr<std::vector<uint64_t>> GroupStats(
      const std::vector<std::vector<NodeIndex>>& keys) override;

 private:
  Tips* tips_;
};

}  // namespace fedanon::common
