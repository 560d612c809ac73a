#include "common/evaluation/utility_evaluation.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::evaluation {
namespace {

using fedanon::v1::Attribute;
using fedanon::v1::JobSpec;

// The values of some columns of a CSV file, by column, with the line each record starts on.
struct ColumnValues {
  std::vector<std::vector<std::string>> columns;  // per requested name, per record
  std::vector<int> csv_columns;                   // per requested name: 0-based column
  std::vector<size_t> lines;                      // per record
};

// Reads the columns `names` of `path`. With `drop_token`, records holding that value in any of
// them are skipped (as the engine drops records with missing values).
absl::StatusOr<ColumnValues> ReadColumns(const std::string& path,
                                         const std::vector<std::string>& names,
                                         const std::string* drop_token) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(absl::StrCat(path, ": no header"));
  const size_t width = fields.size();
  ColumnValues out;
  out.columns.resize(names.size());
  for (const std::string& name : names) {
    int found = -1;
    for (size_t c = 0; c < fields.size(); ++c) {
      if (fields[c] == name) found = static_cast<int>(c);
    }
    if (found < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", reader->line(), ": no column '", name, "' in the header"));
    }
    out.csv_columns.push_back(found);
  }
  for (;;) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, width));
    if (drop_token != nullptr) {
      bool missing = false;
      for (int c : out.csv_columns) missing = missing || fields[c] == *drop_token;
      if (missing) continue;
    }
    for (size_t i = 0; i < names.size(); ++i) {
      out.columns[i].emplace_back(fields[out.csv_columns[i]]);
    }
    out.lines.push_back(reader->line());
  }
  return out;
}

// Encodes one column as a tree feature; a continuous column must hold numbers.
absl::StatusOr<FeatureColumn> MakeFeature(const std::string& name,
                                          const std::vector<std::string>& values, bool continuous,
                                          const std::string& path, const ColumnValues& source,
                                          size_t column_index) {
  FeatureColumn f;
  f.name = name;
  f.continuous = continuous;
  if (continuous) {
    f.numbers.reserve(values.size());
    for (size_t r = 0; r < values.size(); ++r) {
      double x = 0;
      if (!absl::SimpleAtod(values[r], &x) || !std::isfinite(x)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", source.lines[r], ":", source.csv_columns[column_index] + 1,
                         ": continuous attribute '", name, "': '", values[r], "' is not a number"));
      }
      f.numbers.push_back(x);
    }
    return f;
  }
  absl::flat_hash_map<std::string, int32_t> ids;
  f.codes.reserve(values.size());
  for (const std::string& v : values) {
    auto [it, inserted] = ids.emplace(v, static_cast<int32_t>(f.value_names.size()));
    if (inserted) f.value_names.push_back(v);
    f.codes.push_back(it->second);
  }
  return f;
}

bool IsFeature(const Attribute& a) {
  return a.role() == fedanon::v1::ROLE_QID || a.role() == fedanon::v1::ROLE_SENSITIVE ||
         a.role() == fedanon::v1::ROLE_OTHER;
}

bool IsContinuous(const Attribute& a) { return a.type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS; }

// The raw features by attribute index (empty for the class and ids).
absl::StatusOr<std::vector<std::optional<FeatureColumn>>> RawFeatures(const JobSpec& spec,
                                                                      const ColumnValues& raw,
                                                                      const std::string& raw_path) {
  std::vector<std::optional<FeatureColumn>> features(spec.attributes_size());
  for (int i = 0; i < spec.attributes_size(); ++i) {
    const Attribute& a = spec.attributes(i);
    if (!IsFeature(a)) continue;
    ASSIGN_OR_RETURN(features[i],
                     MakeFeature(a.name(), raw.columns[i], IsContinuous(a), raw_path, raw, i));
  }
  return features;
}

// The errors of trees trained on the raw features: all of them (BE), the non-QID ones (UE) and
// each party's (SE, vertical jobs).
absl::StatusOr<RawBaselines> RawTreeErrors(
    const JobSpec& spec, const std::vector<std::optional<FeatureColumn>>& features,
    const std::vector<int32_t>& labels, const std::vector<std::string>& class_names,
    const std::vector<uint32_t>& train, const std::vector<uint32_t>& test,
    const EvaluationOptions& options) {
  auto table_of = [&](auto keep) {
    ClassificationTable t;
    t.labels = labels;
    t.class_names = class_names;
    for (int i = 0; i < spec.attributes_size(); ++i) {
      if (features[i] && keep(spec.attributes(i))) t.features.push_back(*features[i]);
    }
    return t;
  };
  RawBaselines b;
  b.records = labels.size();
  b.train_records = train.size();
  b.test_records = test.size();
  ASSIGN_OR_RETURN(auto be, ClassifierError(table_of([](const Attribute&) { return true; }), train,
                                            test, options));
  b.baseline_error = be.first;
  b.baseline_leaves = be.second;
  ASSIGN_OR_RETURN(auto ue, ClassifierError(table_of([](const Attribute& a) {
                                              return a.role() != fedanon::v1::ROLE_QID;
                                            }),
                                            train, test, options));
  b.upper_bound_error = ue.first;

  std::vector<std::string> parties;
  for (const Attribute& a : spec.attributes()) {
    if (!a.party().empty() &&
        std::find(parties.begin(), parties.end(), a.party()) == parties.end()) {
      parties.push_back(a.party());
    }
  }
  for (const std::string& party : parties) {
    ASSIGN_OR_RETURN(
        auto se, ClassifierError(table_of([&](const Attribute& a) { return a.party() == party; }),
                                 train, test, options));
    b.source_errors.push_back({party, se.first});
  }
  if (!options.removed_attributes.empty()) {
    const std::vector<std::string>& removed = options.removed_attributes;
    ASSIGN_OR_RETURN(auto re, ClassifierError(table_of([&](const Attribute& a) {
                                                return std::find(removed.begin(), removed.end(),
                                                                 a.name()) == removed.end();
                                              }),
                                              train, test, options));
    b.removal_error = re.first;
  }
  return b;
}

}  // namespace

double DiscernibilityRatio(const std::vector<uint64_t>& group_sizes) {
  double total = 0, squares = 0;
  for (uint64_t s : group_sizes) {
    total += static_cast<double>(s);
    squares += static_cast<double>(s) * static_cast<double>(s);
  }
  return total == 0 ? 0 : squares / (total * total);
}

std::vector<uint32_t> FoldTestRecords(const std::vector<uint32_t>& order, int folds, int fold) {
  const size_t n = order.size(), k = static_cast<size_t>(folds), f = static_cast<size_t>(fold);
  const size_t base = n / k, extra = n % k;
  const size_t begin = f * base + std::min(f, extra);
  const size_t end = begin + base + (f < extra ? 1 : 0);
  return std::vector<uint32_t>(order.begin() + begin, order.begin() + end);
}

absl::StatusOr<std::pair<double, size_t>> ClassifierError(const ClassificationTable& table,
                                                          const std::vector<uint32_t>& train,
                                                          const std::vector<uint32_t>& test,
                                                          const EvaluationOptions& options) {
  auto one = [&](const std::vector<uint32_t>& tr,
                 const std::vector<uint32_t>& te) -> absl::StatusOr<std::pair<double, size_t>> {
    if (options.classifier == Classifier::kNaiveBayes) {
      ASSIGN_OR_RETURN(NaiveBayes nb, NaiveBayes::Train(table, tr, options.naive_bayes));
      return std::make_pair(nb.ErrorRate(table, te), size_t{0});
    }
    ASSIGN_OR_RETURN(DecisionTree tree, DecisionTree::Train(table, tr, options.tree));
    return std::make_pair(tree.ErrorRate(table, te), tree.num_leaves());
  };
  if (options.folds < 2) return one(train, test);
  // Cross-validation: `train` followed by `test` is the shuffled order.
  std::vector<uint32_t> order = train;
  order.insert(order.end(), test.begin(), test.end());
  if (order.size() < static_cast<size_t>(options.folds)) {
    return absl::InvalidArgumentError(
        absl::StrCat(order.size(), " records cannot make ", options.folds, " folds"));
  }
  double wrong = 0;
  for (int f = 0; f < options.folds; ++f) {
    const std::vector<uint32_t> fold_test = FoldTestRecords(order, options.folds, f);
    std::vector<uint32_t> fold_train;
    fold_train.reserve(order.size() - fold_test.size());
    absl::flat_hash_map<uint32_t, bool> in_test;
    for (uint32_t r : fold_test) in_test[r] = true;
    for (uint32_t r : order) {
      if (!in_test.contains(r)) fold_train.push_back(r);
    }
    ASSIGN_OR_RETURN(auto e, one(fold_train, fold_test));
    wrong += e.first * static_cast<double>(fold_test.size());
  }
  return std::make_pair(wrong / static_cast<double>(order.size()), size_t{0});
}

std::vector<uint32_t> ShuffledRecords(size_t n, uint64_t seed) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 rng(seed);
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

absl::StatusOr<std::unique_ptr<UtilityEvaluator>> UtilityEvaluator::Create(
    const JobSpec& spec, const std::string& raw_path, const EvaluationOptions& options) {
  int class_attribute = -1;
  for (int i = 0; i < spec.attributes_size(); ++i) {
    if (spec.attributes(i).role() == fedanon::v1::ROLE_CLASS) class_attribute = i;
  }
  if (class_attribute < 0) {
    return absl::InvalidArgumentError(
        "the job has no class attribute (role: class); classification errors need one");
  }
  std::unique_ptr<UtilityEvaluator> ev(new UtilityEvaluator());
  ev->spec_ = spec;
  ev->options_ = options;
  ev->raw_path_ = raw_path;

  std::vector<std::string> names;
  for (const Attribute& a : spec.attributes()) names.push_back(a.name());
  const bool drop = spec.missing() != fedanon::v1::MISSING_KEEP;
  ASSIGN_OR_RETURN(ColumnValues raw,
                   ReadColumns(raw_path, names, drop ? &spec.missing_token() : nullptr));
  const size_t n = raw.lines.size();
  if (n < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        raw_path, ": ", n, " records; at least 3 are needed for a training and a test set"));
  }

  // Class labels in order of first appearance.
  ev->raw_classes_ = std::move(raw.columns[class_attribute]);
  absl::flat_hash_map<std::string, int32_t> class_ids;
  for (const std::string& c : ev->raw_classes_) {
    auto [it, inserted] = class_ids.emplace(c, static_cast<int32_t>(ev->class_names_.size()));
    if (inserted) ev->class_names_.push_back(c);
    ev->labels_.push_back(it->second);
  }

  const std::vector<uint32_t> order = ShuffledRecords(n, options.seed);
  const size_t train = static_cast<size_t>(std::llround(2.0 * n / 3.0));
  ev->train_rows_.assign(order.begin(), order.begin() + train);
  ev->test_rows_.assign(order.begin() + train, order.end());

  ASSIGN_OR_RETURN(const auto features, RawFeatures(spec, raw, raw_path));
  for (const std::string& name : options.removed_attributes) {
    bool known = false;
    for (const Attribute& a : spec.attributes())
      known = known || (a.name() == name && IsFeature(a));
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute to remove '", name,
                       "' is not a QID, sensitive or other attribute of the spec"));
    }
  }
  if (options.folds == 1 || options.folds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("folds must be 0 (the 2/3-1/3 split) or at least 2, got ", options.folds));
  }
  ASSIGN_OR_RETURN(ev->baselines_, RawTreeErrors(spec, features, ev->labels_, ev->class_names_,
                                                 ev->train_rows_, ev->test_rows_, options));
  return ev;
}

absl::StatusOr<AnonymizedUtility> UtilityEvaluator::Evaluate(
    const std::string& anonymized_path) const {
  std::vector<std::string> names;
  std::vector<int> attribute_of;  // index into names -> spec attribute
  int class_index = -1;
  for (int i = 0; i < spec_.attributes_size(); ++i) {
    const Attribute& a = spec_.attributes(i);
    if (a.role() == fedanon::v1::ROLE_ID) continue;  // never released
    if (a.role() == fedanon::v1::ROLE_CLASS) class_index = static_cast<int>(names.size());
    names.push_back(a.name());
    attribute_of.push_back(i);
  }
  ASSIGN_OR_RETURN(ColumnValues anon, ReadColumns(anonymized_path, names, nullptr));
  const size_t n = anon.lines.size();
  if (n != raw_classes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        anonymized_path, ": ", n, " records, but the raw table '", raw_path_, "' has ",
        raw_classes_.size(),
        " (after dropping records with missing values); the anonymized table must hold the same "
        "records in the same order"));
  }
  const std::vector<std::string>& classes = anon.columns[class_index];
  for (size_t r = 0; r < n; ++r) {
    if (classes[r] != raw_classes_[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat(anonymized_path, ":", anon.lines[r], ": class '", classes[r],
                       "' but raw record ", r + 1, " has '", raw_classes_[r],
                       "'; the anonymized table must hold the raw records in the same order"));
    }
  }

  ClassificationTable table;
  table.labels = labels_;
  table.class_names = class_names_;
  absl::flat_hash_map<std::string, uint64_t> groups;
  std::vector<size_t> qid_columns;
  for (size_t i = 0; i < names.size(); ++i) {
    const Attribute& a = spec_.attributes(attribute_of[i]);
    if (!IsFeature(a)) continue;
    const bool qid = a.role() == fedanon::v1::ROLE_QID;
    if (qid) qid_columns.push_back(i);
    // Generalized QID values (taxonomy labels, intervals, suppression) are categorical.
    ASSIGN_OR_RETURN(
        FeatureColumn f,
        MakeFeature(a.name(), anon.columns[i], !qid && IsContinuous(a), anonymized_path, anon, i));
    table.features.push_back(std::move(f));
  }
  std::string key;
  for (size_t r = 0; r < n; ++r) {
    key.clear();
    for (size_t i : qid_columns) absl::StrAppend(&key, anon.columns[i][r], "\x1f");
    ++groups[key];
  }
  std::vector<uint64_t> sizes;
  sizes.reserve(groups.size());
  for (const auto& [unused, size] : groups) sizes.push_back(size);

  AnonymizedUtility out;
  ASSIGN_OR_RETURN(auto ce, ClassifierError(table, train_rows_, test_rows_, options_));
  out.classification_error = ce.first;
  out.leaves = ce.second;
  out.discernibility_ratio = DiscernibilityRatio(sizes);
  out.groups = groups.size();
  return out;
}

std::string EvaluationToJson(const RawBaselines& baselines, const AnonymizedUtility* anonymized,
                             uint64_t seed, const AnonymizedUtility* local,
                             const EvaluationOptions* options, const Distortion* distortion) {
  nlohmann::ordered_json j;
  j["records"] = baselines.records;
  j["train_records"] = baselines.train_records;
  j["test_records"] = baselines.test_records;
  j["seed"] = seed;
  j["BE"] = baselines.baseline_error;
  if (anonymized != nullptr) j["CE"] = anonymized->classification_error;
  j["UE"] = baselines.upper_bound_error;
  if (!baselines.source_errors.empty()) {
    nlohmann::ordered_json se = nlohmann::ordered_json::object();
    for (const SourceError& s : baselines.source_errors) se[s.party] = s.error;
    j["SE"] = se;
  }
  if (anonymized != nullptr) {
    j["DR"] = anonymized->discernibility_ratio;
    j["groups"] = anonymized->groups;
  }
  if (local != nullptr) {
    nlohmann::ordered_json l;
    l["CE"] = local->classification_error;
    l["DR"] = local->discernibility_ratio;
    l["groups"] = local->groups;
    j["local"] = l;
  }
  if (baselines.removal_error) j["RE"] = *baselines.removal_error;
  if (options != nullptr) {
    j["classifier"] = options->classifier == Classifier::kNaiveBayes ? "naive-bayes" : "c45";
    j["folds"] = options->folds;
  }
  if (distortion != nullptr) {
    j["distortion"] = {{"categorical", distortion->categorical},
                       {"continuous", distortion->continuous}};
  }
  return j.dump(2) + "\n";
}

}  // namespace fedanon::evaluation
