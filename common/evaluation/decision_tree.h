// A C4.5-style decision tree classifier (Quinlan 1993), used to measure how much anonymization
// costs a classification task (mohammed2010 §6.1: BE, CE, UE; mohammed2011 §7: SE).
//
// Growing: at each node every feature's best split is scored by information gain; categorical
// features split multiway (one branch per value; generalized values and interval labels of an
// anonymized table are just values), continuous ones binary, `x <= t` against `x > t`, with t the
// largest training value below the cut of highest gain; that gain is reduced by
// log2(#candidate cuts)/n (C4.5 release 8). Among the features whose gain is at least the average,
// the one of highest gain ratio wins. A split must put at least `min_objects` training records into
// two branches (continuous: into both sides, at least max(min_objects, min(25, 0.1 n / #classes))).
// Pruning: subtree replacement by pessimistic error with confidence `confidence` (C4.5's 0.25),
// bottom-up; the error bound is the exact one-sided binomial upper limit. C4.5's subtree raising
// and its fractional handling of missing values are not implemented (every value is a value).
// Ties are broken by lower feature index, lower threshold, lower class index: training is
// deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fedanon::evaluation {

// One feature of a classification table, a value per record.
struct FeatureColumn {
  std::string name;
  bool continuous = false;
  std::vector<int32_t> codes;            // categorical: value code in [0, value_names.size())
  std::vector<double> numbers;           // continuous
  std::vector<std::string> value_names;  // categorical: code -> value
};

// Features and class labels of a set of records (all columns have num_records() entries).
struct ClassificationTable {
  std::vector<FeatureColumn> features;
  std::vector<int32_t> labels;  // class index in [0, class_names.size())
  std::vector<std::string> class_names;
  size_t num_records() const { return labels.size(); }
};

struct DecisionTreeOptions {
  double confidence = 0.25;  // pruning confidence level CF (smaller prunes more)
  int min_objects = 2;       // least records in at least two branches of a split
  bool prune = true;
};

struct TreeNode {
  int feature = -1;           // -1: a leaf
  double threshold = 0;       // continuous: value <= threshold goes to children[0], else [1]
  std::vector<int> children;  // node indices; categorical: per value code, -1 if no records
  int32_t majority = 0;       // class predicted at a leaf or for an unseen value
  uint32_t records = 0;       // training records reaching the node
  uint32_t errors = 0;        // of those, not of class `majority`
  double gain = 0;            // internal node: the split's information gain (bits)
  double gain_ratio = 0;      // internal node: gain / split information
};

class DecisionTree {
 public:
  // Grows (and unless disabled prunes) a tree on the records `rows` of `table`.
  // InvalidArgument if `rows` is empty or the table's columns disagree in length.
  static absl::StatusOr<DecisionTree> Train(const ClassificationTable& table,
                                            absl::Span<const uint32_t> rows,
                                            const DecisionTreeOptions& options = {});

  // The class the tree predicts for record `row` of `table` (same features as for training).
  int32_t Classify(const ClassificationTable& table, size_t row) const;
  // Fraction of `rows` whose label differs from the prediction (0 for no rows).
  double ErrorRate(const ClassificationTable& table, absl::Span<const uint32_t> rows) const;

  const std::vector<TreeNode>& nodes() const { return nodes_; }  // nodes()[0] is the root
  size_t num_leaves() const;
  // An indented description ("feature = value: ..." / "feature <= t"), for tests and debugging.
  std::string ToString(const ClassificationTable& table) const;

 private:
  DecisionTree() = default;
  std::vector<TreeNode> nodes_;
};

// C4.5's pessimistic estimate of the errors among `n` records of which `errors` were
// misclassified in training: n * U, where U is the upper limit of the one-sided confidence
// interval at level `confidence` for the binomial error probability (the p with
// P[X <= errors | n, p] = confidence). 0 for n = 0.
double PessimisticErrors(uint32_t n, uint32_t errors, double confidence);

}  // namespace fedanon::evaluation
