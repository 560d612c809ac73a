#include "common/randomization/random_anonymization.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fedanon::randomization {
namespace {

double LogBinomial(int n, int k) {
  double log = 0;
  for (int j = 1; j <= k; ++j) log += std::log(static_cast<double>(n - k + j) / j);
  return log;
}

absl::Status CheckColumns(const std::vector<CategoricalColumn>& qids) {
  if (qids.empty()) return absl::InvalidArgumentError("random anonymization needs a QID attribute");
  for (const CategoricalColumn& c : qids) {
    if (c.codes.size() != qids[0].codes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("QID column '", c.name, "' has ",
                                                     c.codes.size(), " records, '", qids[0].name,
                                                     "' has ", qids[0].codes.size()));
    }
    for (uint32_t code : c.codes) {
      if (code >= c.values.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("QID column '", c.name, "' has code ", code, " outside its dictionary"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<uint64_t> ValueCounts(const CategoricalColumn& column) {
  std::vector<uint64_t> counts(column.values.size(), 0);
  for (uint32_t code : column.codes) ++counts[code];
  return counts;
}

double Entropy(const CategoricalColumn& column) {
  const double n = static_cast<double>(column.codes.size());
  double entropy = 0;
  for (uint64_t count : ValueCounts(column)) {
    if (count == 0) continue;
    const double freq = static_cast<double>(count) / n;
    entropy -= freq * std::log(freq);
  }
  return entropy;
}

absl::StatusOr<RandomizationPlan> PlanRandomization(const std::vector<CategoricalColumn>& qids,
                                                    int attributes_per_record,
                                                    AttributeSelection selection) {
  if (absl::Status st = CheckColumns(qids); !st.ok()) return st;
  const int m = static_cast<int>(qids.size());
  if (attributes_per_record < 1 || attributes_per_record > m) {
    return absl::InvalidArgumentError(absl::StrCat("attributes per record must be between 1 and ",
                                                   "the number of QID attributes (", m, "), not ",
                                                   attributes_per_record));
  }
  if (attributes_per_record > 1 && selection == AttributeSelection::kEntropyWeighted) {
    return absl::InvalidArgumentError(
        "entropy-weighted selection (Proposition 7) picks one attribute per record; with more "
        "than one, attributes are selected uniformly (Algorithm 2)");
  }
  RandomizationPlan plan;
  plan.attributes_per_record = attributes_per_record;
  plan.selection = selection;
  for (const CategoricalColumn& c : qids) plan.entropies.push_back(Entropy(c));
  if (selection == AttributeSelection::kUniform) {
    plan.probabilities.assign(m, static_cast<double>(attributes_per_record) / m);
  } else {
    // p_i = e^H_i / sum_j e^H_j, computed as e^(H_i - max H) for range safety.
    const double top = *std::max_element(plan.entropies.begin(), plan.entropies.end());
    double total = 0;
    for (double h : plan.entropies) total += std::exp(h - top);
    for (double h : plan.entropies) plan.probabilities.push_back(std::exp(h - top) / total);
  }
  return plan;
}

double ProbabilisticAnonymity(const RandomizationPlan& plan) {
  const int m = static_cast<int>(plan.entropies.size());
  if (plan.attributes_per_record > 1) {
    const double sum = std::accumulate(plan.entropies.begin(), plan.entropies.end(), 0.0);
    return std::exp(LogBinomial(m, plan.attributes_per_record) +
                    static_cast<double>(plan.attributes_per_record) / m * sum);
  }
  double log_pa = 0;
  for (int i = 0; i < m; ++i) {
    const double p = plan.probabilities[i];
    if (p > 0) log_pa += p * (plan.entropies[i] - std::log(p));
  }
  return std::exp(log_pa);
}

absl::StatusOr<std::vector<CategoricalColumn>> Randomize(const std::vector<CategoricalColumn>& qids,
                                                         const RandomizationPlan& plan,
                                                         RandomSource& random) {
  if (absl::Status st = CheckColumns(qids); !st.ok()) return st;
  const size_t m = qids.size();
  if (plan.probabilities.size() != m || plan.entropies.size() != m ||
      plan.attributes_per_record < 1 || static_cast<size_t>(plan.attributes_per_record) > m) {
    return absl::InvalidArgumentError("the randomization plan was made for other columns");
  }
  std::vector<CategoricalColumn> out = qids;
  const size_t n = qids[0].codes.size();
  // Replaces attribute a of record r by the value of a uniformly drawn record of the original
  // column: a draw from Dist_a (Algorithm 1 line 13, Algorithm 2 line 17).
  auto replace = [&](size_t a, size_t r) { out[a].codes[r] = qids[a].codes[random.Below(n)]; };
  if (plan.attributes_per_record == 1) {
    std::vector<double> cumulative(m);
    std::partial_sum(plan.probabilities.begin(), plan.probabilities.end(), cumulative.begin());
    for (size_t r = 0; r < n; ++r) {
      size_t a = 0;
      if (plan.selection == AttributeSelection::kUniform) {
        a = random.Below(m);
      } else {
        const double u = random.Unit() * cumulative.back();
        while (a + 1 < m && u >= cumulative[a]) ++a;
      }
      replace(a, r);
    }
  } else {
    // k distinct attributes, every set equally likely: the first k of a partial Fisher-Yates
    // shuffle (uniform whatever order `order` was left in by the previous record).
    std::vector<size_t> order(m);
    std::iota(order.begin(), order.end(), 0);
    const size_t k = static_cast<size_t>(plan.attributes_per_record);
    for (size_t r = 0; r < n; ++r) {
      for (size_t j = 0; j < k; ++j) {
        std::swap(order[j], order[j + random.Below(m - j)]);
        replace(order[j], r);
      }
    }
  }
  if (!random.status().ok()) return random.status();
  return out;
}

}  // namespace fedanon::randomization
