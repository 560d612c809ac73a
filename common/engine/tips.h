// Taxonomy Indexed PartitionS (TIPS, mohammed2010 Def. 4.1, thesis Def. 4.3.1) over one data
// holder's records: each leaf partition holds the records sharing one generalized record (its
// key: one hierarchy node per QID attribute), and Link[attr][node] lists the partitions whose key
// holds that node, giving direct access to T[v] for the specialization of v.
//
// Specializing is the only operation that touches records; every count statistic the engine
// needs is collected from the records of the partitions it creates (fung2007 §4.3.3). The
// hierarchies are the job's public state and are not owned. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/engine/hierarchy.h"
#include "common/table/dataset.h"

namespace fedanon::engine {

struct RangeCountRequest;  // count_source.h
struct HistogramQuery;     // count_source.h

// Packs a generalized record (one node per QID attribute) into a hashable byte string.
std::string PackKey(const std::vector<NodeIndex>& key);

class Tips {
 public:
  Tips(const table::Dataset* data, const std::vector<AttributeHierarchy>* hierarchies);

  // Partitions the records by the child of (attr, node) under candidate `c`; the hierarchy must
  // already contain the children. Returns the new partitions (in link order, then child order).
  std::vector<int32_t> Specialize(int attr, NodeIndex node, int c);

  // Class counts per rank over [rank_lo, rank_hi) of a continuous node: (rank - rank_lo) *
  // num_classes + class.
  std::vector<uint64_t> RankClassHistogram(int attr, NodeIndex node) const;
  // Appends, over all records, per range [bounds[i], bounds[i+1]) of ranks of continuous `attr`,
  // the class counts (`labelled`: i * num_classes + class) or the number of records.
  void AppendRangeCounts(const RangeCountRequest& request, std::vector<uint64_t>* out) const;
  // Class counts per fine child of a refinable node: fine * num_classes + class.
  std::vector<uint64_t> NodeClassCounts(int attr, NodeIndex node) const;
  // Appends the group statistics of partition `p` (see GroupStatsLayout in count_source.h);
  // appends zeros for a key this holder has no partition for.
  void AppendGroupStats(const std::vector<NodeIndex>& key, std::vector<uint64_t>* out) const;
  // The same for several keys, one after the other; a large request is counted by two threads
  // (each half of every partition's records), with the same result as one.
  void AppendGroupStats(const std::vector<std::vector<NodeIndex>>& keys,
                        std::vector<uint64_t>* out) const;
  // For each key, only attribute `attr`'s block of its group statistics: for each fine child f
  // of key[attr], [count, sensitive_1..m] (nothing for a node without fine children) — what
  // changes when the records of a group learn their child of key[attr].
  void AppendAttributeBlocks(int attr, const std::vector<std::vector<NodeIndex>>& keys,
                             std::vector<uint64_t>* out) const;

  // Appends, for the partition with `key`, its record count per combination of the declared
  // values of Dataset::value_columns (zeros if none).
  void AppendReleasedCounts(const std::vector<NodeIndex>& key, uint64_t combinations,
                            std::vector<uint64_t>* out) const;

  // Appends, for the partition with `query.key`, the counts of each value of the sensitive
  // attribute Dataset::distribution_column per child of the query's candidate (child-major; one
  // histogram when query.attr < 0): `words` words, zeros if this holder has no such partition.
  // Appends nothing when this table has no such column of `domain` values (the caller's length
  // check then fails).
  void AppendSensitiveHistogram(const HistogramQuery& query, uint32_t domain, size_t words,
                                std::vector<uint64_t>* out) const;

  int32_t FindPartition(const std::vector<NodeIndex>& key) const;
  const std::vector<NodeIndex>& key(int32_t p) const { return parts_[p].key; }
  const std::vector<AttributeHierarchy>& hierarchies() const { return *hier_; }
  size_t partition_count() const { return parts_.size(); }
  bool alive(int32_t p) const { return parts_[p].alive; }
  const std::vector<uint32_t>& records(int32_t p) const { return parts_[p].records; }

 private:
  struct Partition {
    std::vector<NodeIndex> key;
    std::vector<uint32_t> records;
    bool alive = true;
  };
  int32_t AddPartition(std::vector<NodeIndex> key, std::vector<uint32_t> records);
  // AppendGroupStats for every attribute (`only_attr` < 0), or the group count and `only_attr`'s
  // block alone.
  void CountGroups(const std::vector<std::vector<NodeIndex>>& keys, int only_attr,
                   std::vector<uint64_t>* out) const;
  std::vector<int32_t>& Link(int attr, NodeIndex node);
  const std::vector<int32_t>* LinkOrNull(int attr, NodeIndex node) const;

  const table::Dataset* data_;
  const std::vector<AttributeHierarchy>* hier_;
  std::vector<Partition> parts_;
  absl::flat_hash_map<std::string, int32_t> by_key_;
  std::vector<std::vector<std::vector<int32_t>>> links_;  // [attr][node] -> partitions
};

}  // namespace fedanon::engine
