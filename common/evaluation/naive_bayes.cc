#include "common/evaluation/naive_bayes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"

namespace fedanon::evaluation {

absl::StatusOr<NaiveBayes> NaiveBayes::Train(const ClassificationTable& table,
                                             absl::Span<const uint32_t> rows,
                                             const NaiveBayesOptions& options) {
  if (rows.empty()) return absl::InvalidArgumentError("naive Bayes: no training records");
  if (!(options.laplace >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("naive Bayes: smoothing must be at least 0, got ", options.laplace));
  }
  const size_t n = table.num_records();
  for (const FeatureColumn& f : table.features) {
    if ((f.continuous ? f.numbers.size() : f.codes.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("naive Bayes: feature '", f.name, "' has a different number of records"));
    }
  }
  const size_t classes = std::max<size_t>(table.class_names.size(), 1);
  const double alpha = options.laplace;
  NaiveBayes nb;
  nb.num_classes_ = classes;
  std::vector<double> class_count(classes, 0);
  for (uint32_t r : rows) class_count[table.labels[r]] += 1;
  const double total = static_cast<double>(rows.size());
  for (size_t c = 0; c < classes; ++c) {
    const double p = (class_count[c] + alpha) / (total + alpha * static_cast<double>(classes));
    nb.log_prior_.push_back(p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity());
  }
  const size_t features = table.features.size();
  nb.log_likelihood_.resize(features);
  nb.mean_.resize(features);
  nb.variance_.resize(features);
  for (size_t fi = 0; fi < features; ++fi) {
    const FeatureColumn& f = table.features[fi];
    if (!f.continuous) {
      const size_t values = f.value_names.size();
      std::vector<double> counts(values * classes, 0);
      for (uint32_t r : rows)
        counts[static_cast<size_t>(f.codes[r]) * classes + table.labels[r]] += 1;
      std::vector<double>& ll = nb.log_likelihood_[fi];
      ll.resize(values * classes);
      for (size_t v = 0; v < values; ++v) {
        for (size_t c = 0; c < classes; ++c) {
          const double denominator = class_count[c] + alpha * static_cast<double>(values);
          const double p = denominator > 0 ? (counts[v * classes + c] + alpha) / denominator : 0;
          ll[v * classes + c] = p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity();
        }
      }
      continue;
    }
    std::vector<double> sum(classes, 0), squares(classes, 0);
    double all_sum = 0, all_squares = 0;
    for (uint32_t r : rows) {
      const double x = f.numbers[r];
      sum[table.labels[r]] += x;
      squares[table.labels[r]] += x * x;
      all_sum += x;
      all_squares += x * x;
    }
    const double all_mean = all_sum / total;
    const double floor =
        std::max(1e-12, 1e-9 * std::max(0.0, all_squares / total - all_mean * all_mean));
    for (size_t c = 0; c < classes; ++c) {
      const double m = class_count[c] > 0 ? sum[c] / class_count[c] : all_mean;
      const double var = class_count[c] > 0 ? squares[c] / class_count[c] - m * m : 0;
      nb.mean_[fi].push_back(m);
      nb.variance_[fi].push_back(std::max(var, floor));
    }
  }
  return nb;
}

std::vector<double> NaiveBayes::LogPosteriors(const ClassificationTable& table, size_t row) const {
  std::vector<double> score = log_prior_;
  for (size_t fi = 0; fi < table.features.size(); ++fi) {
    const FeatureColumn& f = table.features[fi];
    for (size_t c = 0; c < num_classes_; ++c) {
      if (!f.continuous) {
        const size_t v = static_cast<size_t>(f.codes[row]);
        const std::vector<double>& ll = log_likelihood_[fi];
        // A value the training table's dictionary did not have: no evidence either way.
        if ((v + 1) * num_classes_ <= ll.size()) score[c] += ll[v * num_classes_ + c];
        continue;
      }
      const double var = variance_[fi][c];
      const double d = f.numbers[row] - mean_[fi][c];
      score[c] += -0.5 * std::log(2 * std::numbers::pi * var) - d * d / (2 * var);
    }
  }
  return score;
}

std::vector<double> NaiveBayes::Posteriors(const ClassificationTable& table, size_t row) const {
  std::vector<double> p = LogPosteriors(table, row);
  for (double& x : p) x = std::exp(x);
  return p;
}

int32_t NaiveBayes::Classify(const ClassificationTable& table, size_t row) const {
  const std::vector<double> score = LogPosteriors(table, row);
  size_t best = 0;
  for (size_t c = 1; c < score.size(); ++c) {
    if (score[c] > score[best]) best = c;
  }
  return static_cast<int32_t>(best);
}

double NaiveBayes::ErrorRate(const ClassificationTable& table,
                             absl::Span<const uint32_t> rows) const {
  if (rows.empty()) return 0;
  size_t wrong = 0;
  for (uint32_t r : rows) wrong += Classify(table, r) != table.labels[r] ? 1 : 0;
  return static_cast<double>(wrong) / static_cast<double>(rows.size());
}

}  // namespace fedanon::evaluation
