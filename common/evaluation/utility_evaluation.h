// What anonymization cost a data holder (mohammed2010 §6.1, mohammed2011 §7), measured on a raw
// table and an anonymized release of it under one job spec:
//
//  * BE (baseline error): a C4.5-style tree (decision_tree.h) on the raw records, trained on a
//    seeded 2/3 of them and tested on the other 1/3, with the QID, sensitive and other attributes
//    as features and the spec's class attribute as the class;
//  * CE (classification error): the same on the anonymized records (same rows in the same
//    order, so the same training and test records); QID values are categorical there;
//  * UE (upper-bound error): the raw records with every QID attribute removed;
//  * SE (source error, vertical jobs whose attributes name a `party`): the raw records with only
//    one party's attributes, per party;
//  * DR (discernibility ratio): sum over the groups of identical QID values of the anonymized
//    table of |T[qid]|^2, divided by |T|^2;
//  * RE (removal error, when attributes to remove are given): the raw records without those
//    attributes (thesis §5.4's RE, §6.4's RJE and RSE).
//
// The classifier is the tree or naive Bayes (naive_bayes.h, thesis §4.4.1); the error is measured
// on the seeded 2/3-1/3 split, or by k-fold cross-validation (thesis §4.4.2, mohammed2011 §7.1.3:
// the records in the same seeded order cut into k contiguous folds of sizes differing by at most
// one; each fold is the test set once; the error is all misclassified test records over all
// records). Every error of one evaluator uses the same split or folds.
//
// Raw records with a missing value are dropped as `fedanon anonymize` drops them (`missing:
// drop`), so the anonymized table must have exactly the kept records, in order; its class column
// must equal the raw one row by row, else the tables do not belong together (an error).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/evaluation/decision_tree.h"
#include "common/evaluation/distortion.h"
#include "common/evaluation/naive_bayes.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::evaluation {

enum class Classifier { kDecisionTree, kNaiveBayes };

struct EvaluationOptions {
  uint64_t seed = 1;  // of the train/test split
  DecisionTreeOptions tree;
  Classifier classifier = Classifier::kDecisionTree;
  NaiveBayesOptions naive_bayes;
  int folds = 0;  // 0: the 2/3-1/3 split; 2 or more: k-fold cross-validation
  // Attributes (names in the spec) removed for RE; empty: no RE.
  std::vector<std::string> removed_attributes;
};

struct SourceError {
  std::string party;
  double error = 0;
};

// The errors that need only the raw table.
struct RawBaselines {
  uint64_t records = 0;  // raw records kept (after dropping missing values)
  uint64_t train_records = 0;
  uint64_t test_records = 0;
  double baseline_error = 0;               // BE
  double upper_bound_error = 0;            // UE
  std::vector<SourceError> source_errors;  // SE, vertical jobs only, parties in spec order
  size_t baseline_leaves = 0;              // leaves of the BE tree (0 for naive Bayes, CV)
  std::optional<double> removal_error;     // RE, when attributes to remove were given
};

struct AnonymizedUtility {
  double classification_error = 0;  // CE
  double discernibility_ratio = 0;  // DR
  uint64_t groups = 0;              // distinct QID combinations in the anonymized table
  size_t leaves = 0;                // leaves of the CE tree
};

class UtilityEvaluator {
 public:
  // Reads `raw_path` for `spec` (validated; taxonomy paths are not needed) and computes the raw
  // baselines. InvalidArgument for a spec without a class attribute, a column named in the spec
  // missing from the header, a row of the wrong width (file:line) or a non-number in a continuous
  // column (file:line:column); NotFound for a missing file.
  static absl::StatusOr<std::unique_ptr<UtilityEvaluator>> Create(
      const fedanon::v1::JobSpec& spec, const std::string& raw_path,
      const EvaluationOptions& options = {});

  const RawBaselines& baselines() const { return baselines_; }

  // CE and DR of an anonymized release of the raw table. InvalidArgument when a released column
  // is missing, the record count differs from the raw table's, or a class value differs from
  // the raw record's in the same position (file:line).
  absl::StatusOr<AnonymizedUtility> Evaluate(const std::string& anonymized_path) const;

  UtilityEvaluator(const UtilityEvaluator&) = delete;
  UtilityEvaluator& operator=(const UtilityEvaluator&) = delete;

 private:
  UtilityEvaluator() = default;

  fedanon::v1::JobSpec spec_;
  EvaluationOptions options_;
  std::string raw_path_;
  std::vector<std::string> raw_classes_;  // per kept raw record
  std::vector<std::string> class_names_;
  std::vector<int32_t> labels_;
  std::vector<uint32_t> train_rows_, test_rows_;  // the split (folds: the shuffled order)
  RawBaselines baselines_;
};

// DR of a table whose groups of identical QID values have the given sizes: sum s^2 / (sum s)^2.
double DiscernibilityRatio(const std::vector<uint64_t>& group_sizes);

// The test records of fold `fold` of `folds` over the records in `order`: the fold-th of `folds`
// contiguous parts whose sizes differ by at most one (the larger ones first).
std::vector<uint32_t> FoldTestRecords(const std::vector<uint32_t>& order, int folds, int fold);

// The error of `options.classifier` on `table`: trained on `train`, tested on `test` (folds = 0),
// or by cross-validation over `order` (folds >= 2). Second: the tree's leaves (split, tree only).
absl::StatusOr<std::pair<double, size_t>> ClassifierError(const ClassificationTable& table,
                                                          const std::vector<uint32_t>& train,
                                                          const std::vector<uint32_t>& test,
                                                          const EvaluationOptions& options);

// The records 0..n-1 in a seeded random order (Fisher-Yates over std::mt19937_64, so the same on
// every platform); the first round(2n/3) are the training records.
std::vector<uint32_t> ShuffledRecords(size_t n, uint64_t seed);

// The evaluation as a JSON object: records, train_records, test_records, seed, BE, UE, SE (a map
// party -> error, vertical jobs), when `anonymized` is given CE, DR and groups, and when `local`
// (a `recoding: local` release of the same table) is given an object "local" with its CE, DR and
// groups.
// With `options`, also "classifier" ("c45" or "naive-bayes") and "folds"; RE when measured; with
// `distortion`, an object "distortion" with "categorical" and "continuous" units per record.
std::string EvaluationToJson(const RawBaselines& baselines, const AnonymizedUtility* anonymized,
                             uint64_t seed, const AnonymizedUtility* local = nullptr,
                             const EvaluationOptions* options = nullptr,
                             const Distortion* distortion = nullptr);

}  // namespace fedanon::evaluation
