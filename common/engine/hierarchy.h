// The value hierarchy of one QID attribute as it grows during top-down specialization: the public
// part of a job's state (the cut), identical at the leader and at every party.
//
// Three kinds of attribute share one interface (fung2007 thesis §3.1-3.2):
//  * taxonomy: nodes mirror the given taxonomy tree; specializing v replaces it by child(v);
//  * suppression (categorical without taxonomy): the suppressed node ⊥ holds the values still
//    hidden; disclosing u is the refinement ⊥ -> {u, ⊥'} — one candidate per hidden value;
//  * continuous: nodes are intervals [lo, hi) over the sorted distinct values; each interval is
//    split once at the threshold that maximizes information gain, decided when it is created.
// A node's count statistics are broken down by its "fine children" (the taxonomy children, the
// hidden values, or the two sides of the split); each candidate maps fine children onto its
// actual children. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/table/dataset.h"

namespace fedanon::engine {

using NodeIndex = int32_t;

struct HierarchyNode {
  NodeIndex parent = -1;
  std::vector<NodeIndex> children;                         // set once the node has been specialized
  table::Taxonomy::NodeId tax = table::Taxonomy::kNoNode;  // taxonomy
  bool suppressed = false;                                 // suppression: this is a ⊥ node
  std::vector<int32_t> hidden;       // suppression ⊥: hidden value codes, code order
  int32_t value = -1;                // suppression: the disclosed value code
  int32_t rank_lo = 0, rank_hi = 0;  // continuous: ranks [rank_lo, rank_hi)
  double lo = 0, hi = 0;             // continuous: interval [lo, hi)
  int32_t split_rank = -1;           // continuous: threshold rank, -1 = not splittable
};

class AttributeHierarchy {
 public:
  explicit AttributeHierarchy(const table::QidColumn* column);  // column not owned

  const table::QidColumn& column() const { return *column_; }
  table::QidKind kind() const { return column_->kind; }
  const HierarchyNode& node(NodeIndex n) const { return nodes_[n]; }
  size_t size() const { return nodes_.size(); }
  NodeIndex root() const { return 0; }

  // Number of fine children of `n` (0 if it cannot be refined).
  int FineChildCount(NodeIndex n) const;
  // Fine child of a record with attribute code `code` (leaf id / value code / rank) under `n`.
  int FineChildOf(NodeIndex n, int32_t code) const;
  // Taxonomy: taxonomy node id -> fine child of `n` (-1 outside `n`). Built on first use and kept
  // (building is not thread-safe; a built table keeps its storage).
  const std::vector<int32_t>& TaxonomyFineTable(NodeIndex n) const;
  // Candidate refinements of `n` (0 if none): 1 for taxonomy/continuous, |hidden| for ⊥.
  int CandidateCount(NodeIndex n) const;
  // Number of actual children of candidate `c` of `n` and the child index of fine child `f`.
  int ChildCount(NodeIndex n, int c) const;
  int ChildOfFine(NodeIndex n, int c, int f) const;
  // Child index that candidate `c` of `n` gives a record with attribute code `code`; valid before
  // and after `n` has been specialized.
  int ChildOfRecord(NodeIndex n, int c, int32_t code) const;
  // Applies candidate `c` of `n`: creates the child nodes (in child order) and returns them.
  // Continuous children still need SetSplit before they can be refined.
  std::vector<NodeIndex> Specialize(NodeIndex n, int c);
  // Continuous: fixes the threshold rank of `n` (-1: not splittable).
  void SetSplit(NodeIndex n, int32_t split_rank);
  // Sort key among nodes of this attribute for deterministic tie-breaking (public information).
  double OrderKey(NodeIndex n) const;

  // The value written to the output for records generalized to `n`.
  std::string Label(NodeIndex n, const std::string& suppression_token) const;
  // Label of the value disclosed by candidate `c` of a ⊥ node / of the candidate in general.
  std::string CandidateLabel(NodeIndex n, int c, const std::string& suppression_token) const;

 private:
  const table::QidColumn* column_;
  std::vector<HierarchyNode> nodes_;
  void IndexHidden(NodeIndex bottom);

  // Suppression: for the current ⊥ node, value code -> fine child index (or -1).
  std::vector<int32_t> hidden_index_;
  // Taxonomy: per node, taxonomy node id -> fine child index (-1 outside), built on first use.
  mutable std::vector<std::vector<int32_t>> fine_tables_;
};

// Formats a number the shortest way that reads back exactly ("37", "1.5", "1490400").
std::string FormatNumber(double x);
// "[lo-hi)"
std::string IntervalLabel(double lo, double hi);

}  // namespace fedanon::engine
