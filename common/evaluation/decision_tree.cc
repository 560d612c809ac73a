#include "common/evaluation/decision_tree.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fedanon::evaluation {
namespace {

constexpr double kEpsilon = 1e-9;

// Entropy (bits) of a class distribution with `n` records in total.
double Entropy(const std::vector<uint32_t>& counts, uint32_t n) {
  if (n == 0) return 0;
  double h = 0;
  for (uint32_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / n;
    h -= p * std::log2(p);
  }
  return h;
}

// The best split of one feature at one node.
struct Split {
  bool possible = false;
  double gain = 0;
  double split_info = 0;
  double threshold = 0;  // continuous
};

class TreeBuilder {
 public:
  TreeBuilder(const ClassificationTable& table, const DecisionTreeOptions& options,
              std::vector<TreeNode>* nodes)
      : table_(table),
        options_(options),
        nodes_(nodes),
        num_classes_(static_cast<int>(table.class_names.size())) {
    scratch_.resize(table.features.size());
    for (size_t f = 0; f < table.features.size(); ++f) {
      if (!table.features[f].continuous) {
        scratch_[f].assign(table.features[f].value_names.size() * num_classes_, 0);
      }
    }
  }

  // Grows the subtree over `rows`; returns its node index.
  int Grow(std::vector<uint32_t> rows) {
    const int index = static_cast<int>(nodes_->size());
    nodes_->emplace_back();
    std::vector<uint32_t> counts(num_classes_, 0);
    for (uint32_t r : rows) ++counts[table_.labels[r]];
    const uint32_t n = static_cast<uint32_t>(rows.size());
    const int32_t majority =
        static_cast<int32_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    {
      TreeNode& node = (*nodes_)[index];
      node.records = n;
      node.majority = majority;
      node.errors = n - counts[majority];
    }
    const uint32_t leaf_errors = n - counts[majority];
    if (leaf_errors == 0 || n < 2u * static_cast<uint32_t>(options_.min_objects)) return index;

    const double node_entropy = Entropy(counts, n);
    std::vector<Split> splits(table_.features.size());
    double gain_sum = 0;
    int possible = 0;
    for (size_t f = 0; f < table_.features.size(); ++f) {
      splits[f] = table_.features[f].continuous ? ContinuousSplit(f, rows, node_entropy)
                                                : CategoricalSplit(f, rows, node_entropy);
      if (splits[f].possible) {
        gain_sum += splits[f].gain;
        ++possible;
      }
    }
    if (possible == 0) return index;
    const double average_gain = gain_sum / possible;
    int best = -1;
    double best_ratio = kEpsilon;
    for (size_t f = 0; f < splits.size(); ++f) {
      const Split& s = splits[f];
      if (!s.possible || s.gain <= kEpsilon || s.gain < average_gain - kEpsilon ||
          s.split_info <= kEpsilon) {
        continue;
      }
      const double ratio = s.gain / s.split_info;
      if (ratio > best_ratio + kEpsilon) {
        best_ratio = ratio;
        best = static_cast<int>(f);
      }
    }
    if (best < 0) return index;

    // Partition the rows and grow the branches.
    const FeatureColumn& column = table_.features[best];
    std::vector<std::vector<uint32_t>> parts;
    if (column.continuous) {
      parts.resize(2);
      for (uint32_t r : rows) {
        parts[column.numbers[r] <= splits[best].threshold ? 0 : 1].push_back(r);
      }
    } else {
      parts.resize(column.value_names.size());
      for (uint32_t r : rows) parts[column.codes[r]].push_back(r);
    }
    rows.clear();
    rows.shrink_to_fit();
    std::vector<int> children(parts.size(), -1);
    uint32_t subtree_errors = 0;
    for (size_t b = 0; b < parts.size(); ++b) {
      if (parts[b].empty()) continue;
      children[b] = Grow(std::move(parts[b]));
      subtree_errors += TrainingErrors(children[b]);
    }
    TreeNode& node = (*nodes_)[index];
    // A split that does not reduce the training errors is not kept (as C4.5 does).
    if (subtree_errors >= leaf_errors) return index;
    node.feature = best;
    node.threshold = splits[best].threshold;
    node.children = std::move(children);
    node.gain = splits[best].gain;
    node.gain_ratio = best_ratio;
    return index;
  }

 private:
  uint32_t TrainingErrors(int index) const {
    const TreeNode& node = (*nodes_)[index];
    if (node.feature < 0) return node.errors;
    uint32_t sum = 0;
    for (int c : node.children) {
      if (c >= 0) sum += TrainingErrors(c);
    }
    return sum;
  }

  Split CategoricalSplit(size_t f, const std::vector<uint32_t>& rows, double node_entropy) {
    const FeatureColumn& column = table_.features[f];
    std::vector<uint32_t>& counts = scratch_[f];
    std::vector<int32_t> touched;
    std::vector<uint32_t> branch_sizes(column.value_names.size(), 0);
    for (uint32_t r : rows) {
      const int32_t v = column.codes[r];
      if (branch_sizes[v]++ == 0) touched.push_back(v);
      ++counts[static_cast<size_t>(v) * num_classes_ + table_.labels[r]];
    }
    const double n = static_cast<double>(rows.size());
    Split split;
    int big_branches = 0;
    double remainder = 0;
    std::vector<uint32_t> class_counts(num_classes_);
    for (int32_t v : touched) {
      const uint32_t size = branch_sizes[v];
      if (size >= static_cast<uint32_t>(options_.min_objects)) ++big_branches;
      for (int k = 0; k < num_classes_; ++k) {
        uint32_t& c = counts[static_cast<size_t>(v) * num_classes_ + k];
        class_counts[k] = c;
        c = 0;  // leave the scratch clean for the next node
      }
      const double share = size / n;
      remainder += share * Entropy(class_counts, size);
      split.split_info -= share * std::log2(share);
    }
    if (big_branches < 2) return split;
    split.possible = true;
    split.gain = node_entropy - remainder;
    return split;
  }

  Split ContinuousSplit(size_t f, const std::vector<uint32_t>& rows, double node_entropy) {
    const FeatureColumn& column = table_.features[f];
    std::vector<std::pair<double, int32_t>> points;
    points.reserve(rows.size());
    for (uint32_t r : rows) points.emplace_back(column.numbers[r], table_.labels[r]);
    std::sort(points.begin(), points.end());
    const uint32_t n = static_cast<uint32_t>(points.size());
    // C4.5's least branch size for a cut: 10% of the average class size, within [MINOBJS, 25].
    const double min_split =
        std::clamp(0.1 * n / num_classes_, static_cast<double>(options_.min_objects), 25.0);
    std::vector<uint32_t> left(num_classes_, 0), right(num_classes_, 0);
    for (const auto& p : points) ++right[p.second];
    Split split;
    int cuts = 0;
    double best_gain = -1;
    for (uint32_t i = 0; i + 1 < n; ++i) {
      ++left[points[i].second];
      --right[points[i].second];
      if (points[i].first == points[i + 1].first) continue;
      const uint32_t nl = i + 1, nr = n - nl;
      if (nl < min_split || nr < min_split) continue;
      ++cuts;
      const double gain = node_entropy - (static_cast<double>(nl) / n) * Entropy(left, nl) -
                          (static_cast<double>(nr) / n) * Entropy(right, nr);
      if (gain > best_gain + kEpsilon) {
        best_gain = gain;
        split.threshold = points[i].first;
        const double pl = static_cast<double>(nl) / n, pr = static_cast<double>(nr) / n;
        split.split_info = -pl * std::log2(pl) - pr * std::log2(pr);
      }
    }
    if (cuts == 0) return split;
    split.possible = true;
    split.gain = best_gain - std::log2(static_cast<double>(cuts)) / n;
    return split;
  }

  const ClassificationTable& table_;
  const DecisionTreeOptions& options_;
  std::vector<TreeNode>* nodes_;
  int num_classes_;
  std::vector<std::vector<uint32_t>> scratch_;  // per categorical feature: value x class counts
};

// Prunes the subtree at `index` bottom-up (subtree replacement); returns its estimated errors.
double Prune(std::vector<TreeNode>& nodes, int index, double confidence) {
  TreeNode& node = nodes[index];
  const double as_leaf = PessimisticErrors(node.records, node.errors, confidence);
  if (node.feature < 0) return as_leaf;
  double as_subtree = 0;
  const std::vector<int> children = node.children;
  for (int c : children) {
    if (c >= 0) as_subtree += Prune(nodes, c, confidence);
  }
  if (as_leaf <= as_subtree + 0.1) {  // C4.5's tolerance in favour of the simpler tree
    nodes[index].feature = -1;
    nodes[index].children.clear();
    nodes[index].gain = nodes[index].gain_ratio = 0;
    nodes[index].threshold = 0;
    return as_leaf;
  }
  return as_subtree;
}

// Copies the nodes reachable from `index` into `out` in depth-first order; returns the new index.
int Compact(const std::vector<TreeNode>& nodes, int index, std::vector<TreeNode>* out) {
  const int at = static_cast<int>(out->size());
  out->push_back(nodes[index]);
  std::vector<int> children = nodes[index].children;
  for (int& c : children) {
    if (c >= 0) c = Compact(nodes, c, out);
  }
  (*out)[at].children = std::move(children);
  return at;
}

// log P[X <= e] for X ~ Binomial(n, p), 0 < p < 1.
double LogBinomialCdf(uint32_t n, uint32_t e, double p) {
  const double log_ratio = std::log(p) - std::log1p(-p);
  double log_term = n * std::log1p(-p);  // i = 0
  double max_log = log_term;
  std::vector<double> logs = {log_term};
  logs.reserve(e + 1);
  for (uint32_t i = 0; i < e; ++i) {
    log_term +=
        std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1)) + log_ratio;
    logs.push_back(log_term);
    max_log = std::max(max_log, log_term);
  }
  double sum = 0;
  for (double l : logs) sum += std::exp(l - max_log);
  return max_log + std::log(sum);
}

}  // namespace

double PessimisticErrors(uint32_t n, uint32_t errors, double confidence) {
  if (n == 0) return 0;
  if (errors >= n) return n;
  if (errors == 0) return n * (1 - std::pow(confidence, 1.0 / n));
  // P[X <= errors] falls from 1 to 0 as p rises from errors/n to 1: bisect for `confidence`.
  const double target = std::log(confidence);
  double lo = static_cast<double>(errors) / n, hi = 1;
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (LogBinomialCdf(n, errors, mid) > target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return n * 0.5 * (lo + hi);
}

absl::StatusOr<DecisionTree> DecisionTree::Train(const ClassificationTable& table,
                                                 absl::Span<const uint32_t> rows,
                                                 const DecisionTreeOptions& options) {
  if (rows.empty()) return absl::InvalidArgumentError("no training records");
  if (table.class_names.empty()) return absl::InvalidArgumentError("no class labels");
  if (options.min_objects < 1) return absl::InvalidArgumentError("min_objects must be >= 1");
  if (!(options.confidence > 0 && options.confidence < 1)) {
    return absl::InvalidArgumentError("the pruning confidence must be in (0, 1)");
  }
  const size_t n = table.num_records();
  for (const FeatureColumn& f : table.features) {
    const size_t size = f.continuous ? f.numbers.size() : f.codes.size();
    if (size != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", f.name, "' has ", size, " values for ", n, " records"));
    }
  }
  for (uint32_t r : rows) {
    if (r >= n) return absl::InvalidArgumentError(absl::StrCat("row ", r, " out of range"));
  }
  DecisionTree tree;
  std::vector<TreeNode> grown;
  TreeBuilder builder(table, options, &grown);
  builder.Grow(std::vector<uint32_t>(rows.begin(), rows.end()));
  if (options.prune) Prune(grown, 0, options.confidence);
  Compact(grown, 0, &tree.nodes_);
  return tree;
}

int32_t DecisionTree::Classify(const ClassificationTable& table, size_t row) const {
  int index = 0;
  for (;;) {
    const TreeNode& node = nodes_[index];
    if (node.feature < 0) return node.majority;
    const FeatureColumn& column = table.features[node.feature];
    int next = -1;
    if (column.continuous) {
      next = node.children[column.numbers[row] <= node.threshold ? 0 : 1];
    } else {
      const int32_t v = column.codes[row];
      if (v >= 0 && static_cast<size_t>(v) < node.children.size()) next = node.children[v];
    }
    if (next < 0) return node.majority;  // a value no training record had here
    index = next;
  }
}

double DecisionTree::ErrorRate(const ClassificationTable& table,
                               absl::Span<const uint32_t> rows) const {
  if (rows.empty()) return 0;
  size_t wrong = 0;
  for (uint32_t r : rows) wrong += Classify(table, r) != table.labels[r];
  return static_cast<double>(wrong) / rows.size();
}

size_t DecisionTree::num_leaves() const {
  size_t leaves = 0;
  for (const TreeNode& node : nodes_) leaves += node.feature < 0;
  return leaves;
}

std::string DecisionTree::ToString(const ClassificationTable& table) const {
  std::string out;
  auto leaf = [&](const TreeNode& node) {
    return absl::StrCat(table.class_names[node.majority], " (", node.records, "/", node.errors,
                        ")");
  };
  auto visit = [&](auto&& self, int index, int depth) -> void {
    const TreeNode& node = nodes_[index];
    const FeatureColumn& column = table.features[node.feature];
    for (size_t b = 0; b < node.children.size(); ++b) {
      const int c = node.children[b];
      if (c < 0) continue;
      std::string test = column.continuous
                             ? absl::StrCat(column.name, b == 0 ? " <= " : " > ",
                                            absl::StrFormat("%g", node.threshold))
                             : absl::StrCat(column.name, " = ", column.value_names[b]);
      absl::StrAppend(&out, std::string(size_t{4} * static_cast<size_t>(depth), ' '), test);
      if (nodes_[c].feature < 0) {
        absl::StrAppend(&out, ": ", leaf(nodes_[c]), "\n");
      } else {
        absl::StrAppend(&out, "\n");
        self(self, c, depth + 1);
      }
    }
  };
  if (nodes_[0].feature < 0) return absl::StrCat(leaf(nodes_[0]), "\n");
  visit(visit, 0, 0);
  return out;
}

}  // namespace fedanon::evaluation
