// A categorical generalization hierarchy (taxonomy tree), loaded from ARX hierarchy CSV files.
//
// Format: one line per leaf value, `leaf;parent;...;root`, separated by `;` or `,` (detected per
// file), CRLF or LF, optional missing final newline. Consecutive equal labels on a line collapse
// into one node (ARX sometimes repeats a value as its own first generalization). A node is
// identified by its label: the same label under two different parents, a label that is a leaf on
// one line and an inner node on another, or lines ending in different roots are errors naming the
// file, line and labels involved. Children keep the order of first appearance in the file, which
// makes every traversal deterministic.
//
// Bounds: a file of at most 64 MiB with lines of at most 1 MiB (kMaxTaxonomyBytes, kMaxLineBytes),
// at most kMaxTaxonomyDepth levels below the root (every level can cost the engine a round).
// Errors that cross the network (a party reading a file its admin named) are built with
// `quote_labels` false: they name the attribute, the file, the line and the kind of problem, never
// the file's content.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace fedanon::table {

inline constexpr int kMaxTaxonomyDepth = 64;

struct TaxonomyParseOptions {
  // false: error messages quote no label of the file (only the file, line, column and problem).
  bool quote_labels = true;
  int max_depth = kMaxTaxonomyDepth;  // levels below the root
};

class Taxonomy {
 public:
  using NodeId = int32_t;
  static constexpr NodeId kNoNode = -1;

  // Loads an ARX hierarchy file (at most kMaxTaxonomyBytes). `attribute` is used in error messages.
  static absl::StatusOr<Taxonomy> LoadArx(const std::string& path, std::string_view attribute,
                                          const TaxonomyParseOptions& options = {});
  static absl::StatusOr<Taxonomy> ParseArx(std::string_view text, std::string_view source_name,
                                           std::string_view attribute,
                                           const TaxonomyParseOptions& options = {});
  // Builds a taxonomy from (child, parent) label pairs plus the root label; for tests and for
  // taxonomies given inline. Same validation as ParseArx.
  static absl::StatusOr<Taxonomy> FromEdges(
      const std::vector<std::pair<std::string, std::string>>& child_parent,
      std::string_view attribute);

  NodeId root() const { return 0; }
  size_t size() const { return labels_.size(); }
  NodeId parent(NodeId n) const { return parents_[n]; }
  const std::vector<NodeId>& children(NodeId n) const { return children_[n]; }
  const std::string& label(NodeId n) const { return labels_[n]; }
  bool is_leaf(NodeId n) const { return children_[n].empty(); }
  int depth(NodeId n) const { return depths_[n]; }  // root: 0

  // The node with this label (leaf or inner), if any.
  std::optional<NodeId> Find(std::string_view label) const;
  // The leaf with this label, if any.
  std::optional<NodeId> FindLeaf(std::string_view label) const;
  // The child of `ancestor` on the path from `ancestor` down to `node`, or kNoNode if `ancestor`
  // is not a proper ancestor of `node`.
  NodeId ChildToward(NodeId ancestor, NodeId node) const;
  // Whether `ancestor` equals `node` or lies on the path from `node` to the root.
  bool Generalizes(NodeId ancestor, NodeId node) const;
  // Adds a new leaf directly under the root (used for `missing: keep` when the taxonomy does not
  // list the missing token). Fails if the label exists.
  absl::StatusOr<NodeId> AddLeafUnderRoot(std::string_view label);

 private:
  Taxonomy() = default;
  NodeId AddNode(std::string_view label, NodeId parent);

  std::vector<std::string> labels_;
  std::vector<NodeId> parents_;
  std::vector<std::vector<NodeId>> children_;
  std::vector<int> depths_;
  absl::flat_hash_map<std::string, NodeId> by_label_;
};

}  // namespace fedanon::table
