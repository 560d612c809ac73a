// Where the engine's count statistics come from — the seam between the top-down specialization
// loop and the data holders. The centralized run uses LocalCountSource (one TIPS in process);
// the horizontal federation implements the same interface with ring secure sums, so every mode
// runs the same loop and makes the same choices.
//
// A StatsRequest asks for, in this order, with m = number of tracked sensitive values,
// C = number of classes (at least 1) and stride = 1 + m, as uint64 words:
//  1. for each range request on a continuous attribute, over all of the holder's records: for
//     each range [bounds[i], bounds[i+1]) of ranks, the number of records (unlabelled) or the
//     class counts (labelled): (range, class) — numeric split search, numeric_split.h;
//  2. for each continuous node: class counts per rank over [rank_lo, rank_hi): (rank, class) —
//     the exact search only (`numeric_split: exact`);
//  3. for each node: class counts per fine child: (fine child, class);
//  4. for each group key (one node per QID attribute): [count, sensitive_1..m], then for each
//     attribute a, for each fine child f of key[a]: [count, sensitive_1..m];
//  5. for each released group key: the number of records per combination of the declared values
//     of Dataset::value_columns (mixed radix, first column most significant) — the released
//     table as a multiset, for integration by secure sum;
//  6. for each sensitive histogram query (ldiversity, tcloseness): per child of the candidate in
//     the group (child-major; one histogram for the whole group when attr < 0), the number of
//     records holding each declared value of the model's sensitive attribute
//     (Dataset::distribution_column): (child, value), histogram_domain values.
// The layout depends only on public state (the hierarchies and the request), so sums over holders
// line up.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"

namespace fedanon::engine {

// Counts per rank range of continuous attribute `attr`: ranges [bounds[i], bounds[i+1]), bounds
// strictly increasing within [0, number of ranks].
struct RangeCountRequest {
  int attr = 0;
  std::vector<int32_t> bounds;
  bool labelled = false;  // class counts per range; otherwise the number of records
  bool operator==(const RangeCountRequest&) const = default;
};

// The sensitive histogram of the group `key` split by the children of candidate `candidate` of
// key[attr] (attr < 0: the whole group).
struct HistogramQuery {
  std::vector<NodeIndex> key;
  int attr = -1;
  int candidate = 0;
  bool operator==(const HistogramQuery&) const = default;
};

struct StatsRequest {
  std::vector<RangeCountRequest> range_counts;
  std::vector<std::pair<int, NodeIndex>> rank_histograms;
  std::vector<std::pair<int, NodeIndex>> node_class_counts;
  std::vector<std::vector<NodeIndex>> group_keys;
  std::vector<std::vector<NodeIndex>> released_groups;
  uint64_t released_combinations = 0;  // Dataset::ValueCombinations() of the job
  std::vector<HistogramQuery> histograms;
  uint32_t histogram_domain = 0;  // the sensitive attribute's number of declared values
  bool empty() const {
    return range_counts.empty() && rank_histograms.empty() && node_class_counts.empty() &&
           group_keys.empty() && released_groups.empty() && histograms.empty();
  }
};

// The most words of sensitive histograms one request may ask for (the engine splits larger
// batches; a holder refuses more).
inline constexpr size_t kMaxHistogramWords = size_t{1} << 24;

// Words of one histogram query's answer: children (1 for a whole group) times `domain`.
size_t HistogramWords(const std::vector<AttributeHierarchy>& hier, const HistogramQuery& query,
                      uint32_t domain);

// Number of words the answer to `request` has.
size_t StatsLength(const std::vector<AttributeHierarchy>& hier, int num_classes, size_t num_tracked,
                   const StatsRequest& request);
// Appends one holder's answer to `request` computed from its TIPS.
void AppendLocalStats(const Tips& tips, const StatsRequest& request, std::vector<uint64_t>* out);

class CountSource {
 public:
  virtual ~CountSource() = default;

  // Every holder refines T[node] by candidate `c` of (attr, node). The caller's hierarchy
  // already holds the new children; `new_group_sizes` are the sizes of the new global groups
  // (mohammed2010 §5.2 sends them with the Instruction).
  virtual absl::Status Specialize(int attr, NodeIndex node, int c,
                                  const std::vector<uint64_t>& new_group_sizes) = 0;
  // The threshold chosen for a new continuous node (already set in the caller's hierarchy).
  virtual absl::Status Split(int attr, NodeIndex node, int32_t split_rank) = 0;
  // The statistics summed over every holder.
  virtual absl::StatusOr<std::vector<uint64_t>> Collect(const StatsRequest& request) = 0;
  // Whether this source counts one in-process TIPS (the centralized run, a vertical party's
  // replica). The engine then asks it for attribute blocks alone (CollectAttributeBlocks) and
  // takes a new group's statistics from its parent's minus its siblings' (sums over the same
  // records) instead of asking for them. A federated source is asked for every group in whole,
  // so that its requests stay those of the protocol.
  virtual bool CountsInProcess() const { return false; }
  // Only when CountsInProcess(): attribute `attr`'s block of the statistics of each group in
  // `keys` (item 4 above without the group's count and the other attributes' blocks;
  // Tips::AppendAttributeBlocks). Unimplemented otherwise.
  virtual absl::StatusOr<std::vector<uint64_t>> CollectAttributeBlocks(
      int attr, const std::vector<std::vector<NodeIndex>>& keys);

  // Vertical partitioning (mohammed2011 §5): whether this holder knows the values of `attr`.
  // Statistics of attributes it does not own are placeholders; the engine then only proposes
  // owned candidates and learns the others' choices from their owners.
  virtual bool Owns(int /*attr*/) const { return true; }
  // The threshold of a continuous node this holder does not own: the owner's choice when it has
  // been announced, otherwise a placeholder that keeps the node refinable.
  virtual int32_t AnnouncedSplit(int /*attr*/, NodeIndex /*node*/) { return -1; }
  // Whether this holder can answer sensitive histogram queries (a vertical party without the
  // model's sensitive attribute cannot: it leaves that check to the attribute's holder).
  virtual bool HoldsSensitiveDistribution() const { return true; }
};

// In-process source over one TIPS that shares the engine's hierarchies (centralized run).
class LocalCountSource : public CountSource {
 public:
  explicit LocalCountSource(Tips* tips) : tips_(tips) {}  // not owned
  absl::Status Specialize(int attr, NodeIndex node, int c,
                          const std::vector<uint64_t>& new_group_sizes) override;
  absl::Status Split(int, NodeIndex, int32_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<uint64_t>> Collect(const StatsRequest& request) override;
  absl::StatusOr<std::vector<uint64_t>> CollectAttributeBlocks(
      int attr, const std::vector<std::vector<NodeIndex>>& keys) override;
  bool CountsInProcess() const override { return true; }

 private:
  Tips* tips_;
};

}  // namespace fedanon::engine
