#include "common/table/taxonomy.h"

#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/table/csv.h"

namespace fedanon::table {
namespace {

// Where a label was seen while parsing an ARX file (0: not yet).
struct Seen {
  size_t parent_line = 0;  // line that fixed the node's parent
  size_t leaf_line = 0;    // first line with the label as its leaf
  size_t inner_line = 0;   // first line with the label as a generalization
};

// `;` if the file has more `;` than `,`, else `,`.
char DetectArxSeparator(std::string_view text) {
  size_t semicolons = 0;
  size_t commas = 0;
  for (char c : text) {
    semicolons += c == ';';
    commas += c == ',';
  }
  return semicolons > commas ? ';' : ',';
}

// Splits one non-empty line of an ARX file into its labels, trimmed, with consecutive equal
// labels collapsed: the path from the leaf (first) to the root (last). Returns the 1-based column
// of an empty label, or 0.
size_t SplitArxLine(absl::string_view line, char separator, std::vector<std::string_view>* labels) {
  labels->clear();
  size_t column = 0;
  for (absl::string_view raw_label : absl::StrSplit(line, separator)) {
    ++column;
    const std::string_view label = base::Sv(absl::StripAsciiWhitespace(raw_label));
    if (label.empty()) return column;
    if (labels->empty() || labels->back() != label) labels->push_back(label);
  }
  return 0;
}

}  // namespace

Taxonomy::NodeId Taxonomy::AddNode(std::string_view label, NodeId parent) {
  const NodeId id = static_cast<NodeId>(labels_.size());
  labels_.emplace_back(label);
  parents_.push_back(parent);
  children_.emplace_back();
  depths_.push_back(parent == kNoNode ? 0 : depths_[parent] + 1);
  if (parent != kNoNode) children_[parent].push_back(id);
  by_label_.emplace(labels_.back(), id);
  return id;
}

absl::StatusOr<Taxonomy> Taxonomy::LoadArx(const std::string& path, std::string_view attribute,
                                           const TaxonomyParseOptions& options) {
  auto text = base::ReadFile(path, base::ReadFileOptions{.max_bytes = base::kMaxTaxonomyBytes,
                                                         .max_line_bytes = base::kMaxLineBytes,
                                                         .what = "taxonomy"});
  if (!text.ok()) {
    return absl::Status(text.status().code(), base::Cat("taxonomy for attribute '", attribute,
                                                        "': ", text.status().message()));
  }
  return ParseArx(*text, path, attribute, options);
}

absl::StatusOr<Taxonomy> Taxonomy::ParseArx(std::string_view text, std::string_view source_name,
                                            std::string_view attribute,
                                            const TaxonomyParseOptions& options) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  if (text.size() > base::kMaxTaxonomyBytes) {
    return absl::InvalidArgumentError(base::Cat(source_name, ": taxonomy for attribute '",
                                                attribute, "' is larger than the limit of ",
                                                base::kMaxTaxonomyBytes, " bytes"));
  }
  const char separator = DetectArxSeparator(text);
  // `quoted` names labels of the file; `plain` says the same without them.
  auto error = [&](size_t line, std::string_view quoted, std::string_view plain = {}) {
    const std::string_view what = options.quote_labels || plain.empty() ? quoted : plain;
    return absl::InvalidArgumentError(
        base::Cat(source_name, ":", line, ": taxonomy for attribute '", attribute, "': ", what));
  };
  Taxonomy taxonomy;
  std::vector<Seen> seen;
  size_t root_line = 0;
  std::vector<std::string_view> labels;
  size_t line_number = 0;
  for (absl::string_view raw_line : absl::StrSplit(base::Av(text), '\n')) {
    ++line_number;
    const absl::string_view line = absl::StripAsciiWhitespace(raw_line);  // drops CR of CRLF
    if (line.empty()) continue;
    if (line.size() > base::kMaxLineBytes) {
      return error(line_number, base::Cat("line longer than ", base::kMaxLineBytes, " bytes"));
    }
    if (const size_t column = SplitArxLine(line, separator, &labels); column != 0) {
      return error(line_number, base::Cat("empty label in column ", column));
    }
    if (labels.size() - 1 > static_cast<size_t>(options.max_depth)) {
      return error(line_number,
                   base::Cat("the path from this leaf to the root has ", labels.size() - 1,
                             " levels; at most ", options.max_depth, " are supported"));
    }
    const std::string_view root_label = labels.back();
    if (root_line == 0) {
      taxonomy.AddNode(root_label, kNoNode);
      seen.emplace_back();
      root_line = line_number;
    } else if (root_label != taxonomy.label(0)) {
      return error(line_number,
                   base::Cat("lines end in different roots '", taxonomy.label(0), "' (line ",
                             root_line, ") and '", root_label, "' (line ", line_number, ")"),
                   base::Cat("this line ends in a different root than line ", root_line));
    }
    // Walk from the root down to the leaf, creating or checking each node.
    NodeId parent = 0;
    for (size_t i = labels.size() - 1; i-- > 0;) {
      const std::string_view label = labels[i];
      std::optional<NodeId> node = taxonomy.Find(label);
      if (!node.has_value()) {
        node = taxonomy.AddNode(label, parent);
        seen.emplace_back();
        seen[*node].parent_line = line_number;
      } else if (*node == 0) {
        return error(line_number,
                     base::Cat("root '", label, "' appears below '", taxonomy.label(parent), "'"),
                     "the root appears below another value");
      } else if (taxonomy.parent(*node) != parent) {
        return error(
            line_number,
            base::Cat("value '", label, "' has two parents '",
                      taxonomy.label(taxonomy.parent(*node)), "' (line ", seen[*node].parent_line,
                      ") and '", taxonomy.label(parent), "' (line ", line_number, ")"),
            base::Cat("a value has a different parent than on line ", seen[*node].parent_line));
      }
      parent = *node;
    }
    // Leaf on one line, inner node on another.
    for (size_t i = 0; i < labels.size(); ++i) {
      Seen& s = seen[*taxonomy.Find(labels[i])];
      size_t& mine = i == 0 ? s.leaf_line : s.inner_line;
      if (mine == 0) mine = line_number;
      if (s.leaf_line != 0 && s.inner_line != 0) {
        return error(line_number,
                     base::Cat("value '", labels[i], "' is a leaf on line ", s.leaf_line,
                               " but a generalization on line ", s.inner_line),
                     base::Cat("a value is a leaf on line ", s.leaf_line,
                               " but a generalization on line ", s.inner_line));
      }
    }
  }
  if (root_line == 0) {
    return absl::InvalidArgumentError(
        base::Cat(source_name, ": taxonomy for attribute '", attribute, "' is empty"));
  }
  return taxonomy;
}

absl::StatusOr<Taxonomy> Taxonomy::FromEdges(
    const std::vector<std::pair<std::string, std::string>>& child_parent,
    std::string_view attribute) {
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        base::Cat("taxonomy for attribute '", attribute, "': ", what));
  };
  if (child_parent.empty()) return error("no edges");
  // Parent of each child, labels and children in order of first appearance.
  absl::flat_hash_map<std::string_view, std::string_view> parent_of;
  absl::flat_hash_map<std::string_view, std::vector<std::string_view>> children_of;
  std::vector<std::string_view> labels;
  absl::flat_hash_set<std::string_view> known;
  for (const auto& [child, parent] : child_parent) {
    if (child.empty() || parent.empty()) return error("empty label");
    if (child == parent) return error(base::Cat("cycle: '", child, "' is its own parent"));
    auto [it, inserted] = parent_of.emplace(child, parent);
    if (!inserted && it->second != parent) {
      return error(
          base::Cat("value '", child, "' has two parents '", it->second, "' and '", parent, "'"));
    }
    if (inserted) children_of[parent].push_back(child);
    for (std::string_view label : {std::string_view(child), std::string_view(parent)}) {
      if (known.insert(label).second) labels.push_back(label);
    }
  }
  std::vector<std::string_view> roots;
  for (std::string_view label : labels) {
    if (!parent_of.contains(label)) roots.push_back(label);
  }
  if (roots.empty()) return error("no root (every value has a parent): the edges form a cycle");
  if (roots.size() > 1) {
    return error(base::Cat("more than one root: '",
                           absl::StrJoin(roots, "', '", base::kViewFormatter), "'"));
  }
  // Breadth-first from the root; values not reached lie on a cycle.
  Taxonomy taxonomy;
  taxonomy.AddNode(roots[0], kNoNode);
  for (size_t next = 0; next < taxonomy.size(); ++next) {
    auto it = children_of.find(taxonomy.labels_[next]);
    if (it == children_of.end()) continue;
    for (std::string_view child : it->second) taxonomy.AddNode(child, static_cast<NodeId>(next));
  }
  for (NodeId n = 0; n < static_cast<NodeId>(taxonomy.size()); ++n) {
    if (taxonomy.depth(n) > kMaxTaxonomyDepth) {
      return error(base::Cat("more than ", kMaxTaxonomyDepth, " levels below the root"));
    }
  }
  if (taxonomy.size() != labels.size()) {
    for (std::string_view label : labels) {
      if (!taxonomy.Find(label).has_value()) {
        return error(
            base::Cat("cycle: value '", label, "' is not below the root '", roots[0], "'"));
      }
    }
  }
  return taxonomy;
}

std::optional<Taxonomy::NodeId> Taxonomy::Find(std::string_view label) const {
  auto it = by_label_.find(base::Av(label));
  if (it == by_label_.end()) return std::nullopt;
  return it->second;
}

std::optional<Taxonomy::NodeId> Taxonomy::FindLeaf(std::string_view label) const {
  std::optional<NodeId> node = Find(label);
  if (node.has_value() && !is_leaf(*node)) return std::nullopt;
  return node;
}

Taxonomy::NodeId Taxonomy::ChildToward(NodeId ancestor, NodeId node) const {
  if (depths_[node] <= depths_[ancestor]) return kNoNode;
  while (depths_[node] > depths_[ancestor] + 1) node = parents_[node];
  return parents_[node] == ancestor ? node : kNoNode;
}

bool Taxonomy::Generalizes(NodeId ancestor, NodeId node) const {
  while (depths_[node] > depths_[ancestor]) node = parents_[node];
  return node == ancestor;
}

absl::StatusOr<Taxonomy::NodeId> Taxonomy::AddLeafUnderRoot(std::string_view label) {
  if (label.empty()) return absl::InvalidArgumentError("cannot add an empty label to a taxonomy");
  if (Find(label).has_value()) {
    return absl::AlreadyExistsError(base::Cat("taxonomy already has a value '", label, "'"));
  }
  return AddNode(label, root());
}

}  // namespace fedanon::table
