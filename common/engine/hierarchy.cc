#include "common/engine/hierarchy.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fedanon::engine {

std::string FormatNumber(double x) {
  char buf[400];
  const double mag = std::fabs(x);
  // Plain digits for the numbers people write (ages, salaries, weights); the shortest general
  // form only for very large or very small magnitudes. Both read back exactly.
  const auto format = (x == 0 || (mag >= 1e-4 && mag < 1e15)) ? std::chars_format::fixed
                                                              : std::chars_format::general;
  auto res = std::to_chars(buf, buf + sizeof(buf), x, format);
  return std::string(buf, res.ptr);
}

std::string IntervalLabel(double lo, double hi) {
  return absl::StrCat("[", FormatNumber(lo), "-", FormatNumber(hi), ")");
}

AttributeHierarchy::AttributeHierarchy(const table::QidColumn* column) : column_(column) {
  HierarchyNode root;
  switch (column->kind) {
    case table::QidKind::kTaxonomy:
      root.tax = column->taxonomy->root();
      break;
    case table::QidKind::kSuppression:
      root.suppressed = true;
      for (size_t v = 0; v < column->values.size(); ++v) {
        root.hidden.push_back(static_cast<int32_t>(v));
      }
      break;
    case table::QidKind::kContinuous:
      root.rank_lo = 0;
      root.rank_hi = static_cast<int32_t>(column->sorted_values.size());
      root.lo = column->range_lo;
      root.hi = column->range_hi;
      break;
  }
  nodes_.push_back(std::move(root));
  if (column->kind == table::QidKind::kSuppression) IndexHidden(0);
}

void AttributeHierarchy::IndexHidden(NodeIndex bottom) {
  hidden_index_.assign(column_->values.size(), -1);
  const auto& hidden = nodes_[bottom].hidden;
  for (size_t i = 0; i < hidden.size(); ++i) hidden_index_[hidden[i]] = static_cast<int32_t>(i);
}

int AttributeHierarchy::FineChildCount(NodeIndex n) const {
  const HierarchyNode& node = nodes_[n];
  if (!node.children.empty()) return 0;
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      return static_cast<int>(column_->taxonomy->children(node.tax).size());
    case table::QidKind::kSuppression:
      return node.suppressed ? static_cast<int>(node.hidden.size()) : 0;
    case table::QidKind::kContinuous:
      return node.split_rank >= 0 ? 2 : 0;
  }
  return 0;
}

int AttributeHierarchy::FineChildOf(NodeIndex n, int32_t code) const {
  const HierarchyNode& node = nodes_[n];
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      return TaxonomyFineTable(n)[code];
    case table::QidKind::kSuppression:
      return hidden_index_[code];  // n is the current ⊥ node: the only refinable one
    case table::QidKind::kContinuous:
      return code < node.split_rank ? 0 : 1;
  }
  return -1;
}

const std::vector<int32_t>& AttributeHierarchy::TaxonomyFineTable(NodeIndex n) const {
  if (fine_tables_.size() <= static_cast<size_t>(n)) fine_tables_.resize(n + 1);
  std::vector<int32_t>& table = fine_tables_[n];
  if (!table.empty()) return table;
  const table::Taxonomy& tax = *column_->taxonomy;
  table.assign(tax.size(), -1);
  const auto& kids = tax.children(nodes_[n].tax);
  for (size_t t = 0; t < tax.size(); ++t) {
    // Walk up from t until the parent is this node; the node reached is the fine child.
    for (auto x = static_cast<table::Taxonomy::NodeId>(t); x != table::Taxonomy::kNoNode;
         x = tax.parent(x)) {
      if (tax.parent(x) == nodes_[n].tax) {
        table[t] = static_cast<int32_t>(std::find(kids.begin(), kids.end(), x) - kids.begin());
        break;
      }
    }
  }
  return table;
}

int AttributeHierarchy::CandidateCount(NodeIndex n) const {
  const int fine = FineChildCount(n);
  if (fine == 0) return 0;
  return column_->kind == table::QidKind::kSuppression ? fine : 1;
}

int AttributeHierarchy::ChildCount(NodeIndex n, int /*c*/) const {
  return column_->kind == table::QidKind::kSuppression ? 2 : FineChildCount(n);
}

int AttributeHierarchy::ChildOfFine(NodeIndex /*n*/, int c, int f) const {
  if (column_->kind == table::QidKind::kSuppression) return f == c ? 0 : 1;
  return f;
}

int AttributeHierarchy::ChildOfRecord(NodeIndex n, int c, int32_t code) const {
  const HierarchyNode& node = nodes_[n];
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      return FineChildOf(n, code);
    case table::QidKind::kSuppression:
      return code == node.hidden[c] ? 0 : 1;
    case table::QidKind::kContinuous:
      return code < node.split_rank ? 0 : 1;
  }
  return 0;
}

std::vector<NodeIndex> AttributeHierarchy::Specialize(NodeIndex n, int c) {
  std::vector<HierarchyNode> kids;
  const HierarchyNode parent = nodes_[n];
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      for (table::Taxonomy::NodeId t : column_->taxonomy->children(parent.tax)) {
        HierarchyNode k;
        k.tax = t;
        kids.push_back(std::move(k));
      }
      break;
    case table::QidKind::kSuppression: {
      HierarchyNode disclosed;
      disclosed.value = parent.hidden[c];
      HierarchyNode rest;
      rest.suppressed = true;
      rest.hidden = parent.hidden;
      rest.hidden.erase(rest.hidden.begin() + c);
      kids.push_back(std::move(disclosed));
      kids.push_back(std::move(rest));
      break;
    }
    case table::QidKind::kContinuous: {
      HierarchyNode left, right;
      left.rank_lo = parent.rank_lo;
      left.rank_hi = parent.split_rank;
      left.lo = parent.lo;
      left.hi = column_->sorted_values[parent.split_rank];
      right.rank_lo = parent.split_rank;
      right.rank_hi = parent.rank_hi;
      right.lo = left.hi;
      right.hi = parent.hi;
      kids.push_back(std::move(left));
      kids.push_back(std::move(right));
      break;
    }
  }
  std::vector<NodeIndex> ids;
  for (auto& k : kids) {
    k.parent = n;
    ids.push_back(static_cast<NodeIndex>(nodes_.size()));
    nodes_.push_back(std::move(k));
  }
  nodes_[n].children = ids;
  if (column_->kind == table::QidKind::kSuppression) IndexHidden(ids[1]);
  return ids;
}

void AttributeHierarchy::SetSplit(NodeIndex n, int32_t split_rank) {
  nodes_[n].split_rank = split_rank;
}

double AttributeHierarchy::OrderKey(NodeIndex n) const {
  const HierarchyNode& node = nodes_[n];
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      return node.tax;
    case table::QidKind::kSuppression:
      return node.suppressed ? -1 : node.value;
    case table::QidKind::kContinuous:
      return node.lo;
  }
  return 0;
}

std::string AttributeHierarchy::Label(NodeIndex n, const std::string& suppression_token) const {
  const HierarchyNode& node = nodes_[n];
  switch (column_->kind) {
    case table::QidKind::kTaxonomy:
      return column_->taxonomy->label(node.tax);
    case table::QidKind::kSuppression:
      return node.suppressed ? suppression_token : column_->values[node.value];
    case table::QidKind::kContinuous:
      return IntervalLabel(node.lo, node.hi);
  }
  return "";
}

std::string AttributeHierarchy::CandidateLabel(NodeIndex n, int c,
                                               const std::string& suppression_token) const {
  if (column_->kind == table::QidKind::kSuppression) {
    return absl::StrCat(suppression_token, " -> ", column_->values[nodes_[n].hidden[c]]);
  }
  return Label(n, suppression_token);
}

}  // namespace fedanon::engine
