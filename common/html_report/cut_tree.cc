#include "common/html_report/cut_tree.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/html_report/html_text.h"

namespace fedanon::html_report {
namespace {

// From the taxonomy: the cut's nodes and their ancestors; nullopt if a cut value is not a node.
std::optional<CutTree> FromTaxonomy(const fedanon::v1::AttributeCut& cut,
                                    const table::Taxonomy& t) {
  std::vector<bool> is_cut(t.size(), false), needed(t.size(), false);
  for (const std::string& value : cut.values()) {
    const std::optional<table::Taxonomy::NodeId> node = t.Find(value);
    if (!node.has_value()) return std::nullopt;
    is_cut[*node] = true;
    for (table::Taxonomy::NodeId n = *node; n != table::Taxonomy::kNoNode && !needed[n];
         n = t.parent(n)) {
      needed[n] = true;
    }
  }
  std::vector<uint64_t> leaves(t.size(), 0);
  for (table::Taxonomy::NodeId n = static_cast<table::Taxonomy::NodeId>(t.size()) - 1; n >= 0;
       --n) {
    if (t.is_leaf(n)) leaves[n] += 1;
    if (n != t.root()) leaves[t.parent(n)] += leaves[n];
  }
  CutTree tree;
  tree.from_taxonomy = true;
  std::function<int(table::Taxonomy::NodeId)> add = [&](table::Taxonomy::NodeId n) {
    const int index = static_cast<int>(tree.nodes.size());
    tree.nodes.push_back({.label = t.label(n),
                          .children = {},
                          .cut = is_cut[n],
                          .values_below = is_cut[n] && !t.is_leaf(n) ? leaves[n] : 0});
    if (!is_cut[n]) {
      for (table::Taxonomy::NodeId c : t.children(n)) {
        if (needed[c]) {
          const int child = add(c);
          tree.nodes[index].children.push_back(child);
        }
      }
    }
    return index;
  };
  add(t.root());
  return tree;
}

CutTree FromSteps(const fedanon::v1::AttributeCut& cut,
                  const std::vector<const fedanon::v1::SpecializationStep*>& steps) {
  const std::set<std::string> cut_values(cut.values().begin(), cut.values().end());
  std::map<std::string, std::vector<std::string>> children_of;
  for (const auto* s : steps) {
    children_of.try_emplace(s->value(), s->children().begin(), s->children().end());
  }
  CutTree tree;
  std::string root;
  if (!steps.empty()) {
    root = steps.front()->value();
  } else if (cut.values_size() == 1) {
    root = cut.values(0);
  } else {
    root = "(released values)";
  }
  std::set<std::string> placed;
  std::function<int(const std::string&)> add = [&](const std::string& label) {
    const int index = static_cast<int>(tree.nodes.size());
    placed.insert(label);
    tree.nodes.push_back(
        {.label = label, .children = {}, .cut = cut_values.contains(label), .values_below = 0});
    auto it = children_of.find(label);
    if (it != children_of.end() && !cut_values.contains(label)) {
      for (const std::string& c : it->second) {
        if (placed.contains(c)) continue;
        const int child = add(c);
        tree.nodes[index].children.push_back(child);
      }
    }
    return index;
  };
  add(root);
  // Cut values the steps do not reach (e.g. a suppression attribute's kept values).
  for (const std::string& value : cut.values()) {
    if (placed.contains(value)) continue;
    placed.insert(value);
    tree.nodes.push_back({.label = value, .children = {}, .cut = true, .values_below = 0});
    tree.nodes[0].children.push_back(static_cast<int>(tree.nodes.size()) - 1);
  }
  return tree;
}

std::string Shorten(const std::string& label, size_t max_chars = 26) {
  if (label.size() <= max_chars) return label;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return label.substr(0, cut) + "\u2026";
}

}  // namespace

CutTree BuildCutTree(const fedanon::v1::AttributeCut& cut,
                     const std::vector<const fedanon::v1::SpecializationStep*>& steps,
                     const table::Taxonomy* taxonomy) {
  if (taxonomy != nullptr) {
    if (std::optional<CutTree> tree = FromTaxonomy(cut, *taxonomy)) return *std::move(tree);
  }
  return FromSteps(cut, steps);
}

std::string CutTreeSvg(const CutTree& tree, size_t max_rows) {
  if (tree.nodes.empty()) return "";
  // Rows: drawn leaves in depth-first order; inner nodes centred on their children.
  std::vector<double> row(tree.nodes.size(), 0);
  std::vector<int> depth(tree.nodes.size(), 0);
  int rows = 0, max_depth = 0;
  std::function<void(int, int)> place = [&](int n, int d) {
    depth[n] = d;
    max_depth = std::max(max_depth, d);
    const auto& children = tree.nodes[n].children;
    if (children.empty()) {
      row[n] = rows++;
      return;
    }
    for (int c : children) place(c, d + 1);
    row[n] = (row[children.front()] + row[children.back()]) / 2;
  };
  place(0, 0);
  if (static_cast<size_t>(rows) > max_rows) return "";
  constexpr double kColumn = 190, kRow = 22, kMargin = 8;
  const double width = kMargin * 2 + (max_depth + 1) * kColumn;
  const double height = kMargin * 2 + rows * kRow;
  auto x = [&](int n) { return kMargin + depth[n] * kColumn; };
  auto y = [&](int n) { return kMargin + row[n] * kRow + kRow / 2; };
  std::string svg = absl::StrFormat(
      "<svg class=\"tree\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" role=\"img\">",
      width, height, width, height);
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    for (int c : tree.nodes[n].children) {
      const double xm = x(static_cast<int>(n)) + kColumn - 26;
      absl::StrAppendFormat(&svg, "<path class=\"edge\" d=\"M%.1f %.1f H%.1f V%.1f H%.1f\"/>",
                            x(static_cast<int>(n)) + kColumn - 34, y(static_cast<int>(n)), xm, y(c),
                            x(c));
    }
  }
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const CutTree::Node& node = tree.nodes[n];
    const int i = static_cast<int>(n);
    std::string label = Shorten(node.label);
    if (node.values_below > 0) absl::StrAppend(&label, " (", node.values_below, ")");
    absl::StrAppendFormat(
        &svg,
        "<g class=\"%s\"><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\" rx=\"3\"/><text x=\"%.1f\" y=\"%.1f\">%s</text></g>",
        node.cut ? "node cut" : "node", HtmlEscape(node.label), x(i), y(i) - kRow / 2 + 2,
        kColumn - 34, kRow - 4, x(i) + 4, y(i) + 4, HtmlEscape(label));
  }
  svg += "</svg>";
  return svg;
}

}  // namespace fedanon::html_report
