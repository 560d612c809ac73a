// A QID's generalization drawn as its taxonomy with the release's cut marked (the job page's
// "what was generalized"): the nodes from the root down to the cut, the cut's values highlighted,
// and below each generalized cut value how many values it stands for. Built from the taxonomy
// when the page has it, else from the report's specialization steps (the part of the hierarchy
// the run explored: intervals of continuous attributes, or a taxonomy not at hand).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/table/taxonomy.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::html_report {

struct CutTree {
  struct Node {
    std::string label;
    std::vector<int> children;
    bool cut = false;           // a value of the release's cut
    uint64_t values_below = 0;  // cut node: taxonomy leaves under it (0: a leaf or unknown)
  };
  std::vector<Node> nodes;  // nodes[0] is the root
  bool from_taxonomy = false;
};

// The tree of `cut` over `taxonomy` (may be null: the steps are used), with the steps of the
// attribute as a fallback for labels the taxonomy does not know.
CutTree BuildCutTree(const fedanon::v1::AttributeCut& cut,
                     const std::vector<const fedanon::v1::SpecializationStep*>& steps,
                     const table::Taxonomy* taxonomy);

// The tree as inline SVG (left to right, one row per drawn leaf); "" when it has more than
// `max_rows` rows (the page then lists the cut's values only).
std::string CutTreeSvg(const CutTree& tree, size_t max_rows = 400);

}  // namespace fedanon::html_report
