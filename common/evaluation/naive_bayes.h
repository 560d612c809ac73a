// A naive Bayes classifier, the second classification model of the thesis's experiments
// (fung2007 §4.4.1, Fig. 4.6(b): "Naive Bayesian classifier"), on the same ClassificationTable
// the decision tree reads (decision_tree.h).
//
// P(c | x) ∝ P(c) · Π_f P(x_f | c), compared in log space:
//  * P(c) = (n_c + α) / (n + α·C);
//  * a categorical feature: P(v | c) = (n_{v,c} + α) / (n_c + α·V), V the feature's values
//    (value_names: a value no training record has gets α / (n_c + α·V));
//  * a continuous feature: a normal density with the class's training mean and variance (the
//    variance floored at 1e-9 times the feature's overall variance, and at 1e-12, so a constant
//    column cannot divide by zero).
// α (Laplace smoothing) is 1 by default; α = 0 gives the textbook frequencies (Mitchell 1997
// §6.9's PlayTennis example). Ties go to the lower class index, so training and prediction are
// deterministic. The thesis used Orange's implementation, whose estimators differ in detail
// (m-estimates, its own treatment of continuous attributes): docs/evaluation.md names this.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/evaluation/decision_tree.h"

namespace fedanon::evaluation {

struct NaiveBayesOptions {
  double laplace = 1.0;  // α above; 0 = unsmoothed frequencies
};

class NaiveBayes {
 public:
  // Counts the records `rows` of `table`. InvalidArgument if `rows` is empty, α is negative, or
  // the table's columns disagree in length.
  static absl::StatusOr<NaiveBayes> Train(const ClassificationTable& table,
                                          absl::Span<const uint32_t> rows,
                                          const NaiveBayesOptions& options = {});

  // The unnormalized posterior P(c) · Π_f P(x_f | c) of every class for record `row` (as a
  // probability, not a logarithm: -inf logs become 0).
  std::vector<double> Posteriors(const ClassificationTable& table, size_t row) const;
  int32_t Classify(const ClassificationTable& table, size_t row) const;
  // Fraction of `rows` whose label differs from the prediction (0 for no rows).
  double ErrorRate(const ClassificationTable& table, absl::Span<const uint32_t> rows) const;

 private:
  NaiveBayes() = default;
  std::vector<double> LogPosteriors(const ClassificationTable& table, size_t row) const;

  size_t num_classes_ = 0;
  std::vector<double> log_prior_;  // per class
  // Per feature: categorical, log P(v | c) at [v * C + c]; continuous, mean and variance per c.
  std::vector<std::vector<double>> log_likelihood_;
  std::vector<std::vector<double>> mean_, variance_;
};

}  // namespace fedanon::evaluation
