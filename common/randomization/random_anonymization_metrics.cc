#include "common/randomization/random_anonymization_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::randomization {
namespace {

constexpr uint64_t kMaxIndexBuilds = 100000;

// The value combinations of a set of attributes in one table, numbered densely (0, 1, ...), and
// how often each occurs. Combinations are numbered one attribute at a time: the number after the
// j-th attribute is a dictionary entry for (number after attribute j-1, value of attribute j), so
// keys never overflow however many attributes and values there are. The empty attribute set has
// one combination, shared by every record.
class CombinationIndex {
 public:
  CombinationIndex(const std::vector<CategoricalColumn>& table, std::vector<size_t> attributes)
      : attributes_(std::move(attributes)), levels_(attributes_.size()) {
    const size_t n = table.empty() ? 0 : table[0].codes.size();
    group_.resize(n);
    for (size_t r = 0; r < n; ++r) {
      uint64_t id = 0;
      for (size_t j = 0; j < attributes_.size(); ++j) {
        const uint64_t key = (id << 32) | table[attributes_[j]].codes[r];
        id = levels_[j].try_emplace(key, static_cast<uint32_t>(levels_[j].size())).first->second;
      }
      group_[r] = static_cast<uint32_t>(id);
    }
    const size_t groups = attributes_.empty() ? 1 : levels_.back().size();
    counts_.assign(n == 0 ? 0 : groups, 0);
    for (uint32_t g : group_) ++counts_[g];
  }

  // The combination of `record` of `table` (same columns), or -1 if it does not occur here.
  int64_t Find(const std::vector<CategoricalColumn>& table, size_t record) const {
    uint64_t id = 0;
    for (size_t j = 0; j < attributes_.size(); ++j) {
      auto it = levels_[j].find((id << 32) | table[attributes_[j]].codes[record]);
      if (it == levels_[j].end()) return -1;
      id = it->second;
    }
    return static_cast<int64_t>(id);
  }

  uint32_t group(size_t record) const { return group_[record]; }
  size_t size() const { return counts_.size(); }
  uint64_t count(size_t group) const { return counts_[group]; }

 private:
  std::vector<size_t> attributes_;
  std::vector<absl::flat_hash_map<uint64_t, uint32_t>> levels_;
  std::vector<uint32_t> group_;  // per record
  std::vector<uint64_t> counts_;
};

absl::Status CheckTables(const std::vector<CategoricalColumn>& original,
                         const std::vector<CategoricalColumn>& released,
                         const RandomizationPlan& plan) {
  if (original.empty() || original.size() != released.size() ||
      plan.probabilities.size() != original.size()) {
    return absl::InvalidArgumentError("the released table does not match the original one");
  }
  for (size_t i = 0; i < original.size(); ++i) {
    if (original[i].codes.size() != original[0].codes.size() ||
        released[i].codes.size() != original[0].codes.size() ||
        released[i].values.size() != original[i].values.size()) {
      return absl::InvalidArgumentError("the released table does not match the original one");
    }
  }
  return absl::OkStatus();
}

// P(Q_i = v) in `table`, per attribute and code.
std::vector<std::vector<double>> Frequencies(const std::vector<CategoricalColumn>& table) {
  std::vector<std::vector<double>> freq;
  for (const CategoricalColumn& c : table) {
    std::vector<double> f;
    const double n = static_cast<double>(c.codes.size());
    for (uint64_t count : ValueCounts(c)) f.push_back(static_cast<double>(count) / n);
    freq.push_back(std::move(f));
  }
  return freq;
}

double Binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double b = 1;
  for (int j = 1; j <= k; ++j) b = b * (n - k + j) / j;
  return b;
}

// The probability that, of the attribute set `set`, exactly the attributes `part` (a non-empty
// subset) are randomized in a record.
double ProbabilityRandomizedPart(const RandomizationPlan& plan, size_t set_size,
                                 const std::vector<size_t>& part) {
  const int m = static_cast<int>(plan.probabilities.size());
  const int k = plan.attributes_per_record;
  if (k == 1) return part.size() == 1 ? plan.probabilities[part[0]] : 0.0;
  // k attributes chosen uniformly: the rest of the k among the m - |set| attributes outside.
  return Binomial(m - static_cast<int>(set_size), k - static_cast<int>(part.size())) /
         Binomial(m, k);
}

// Calls `visit` with every subset of `size` of {0, ..., n - 1}, as ascending indices, in
// lexicographic order.
template <typename Visit>
void ForEachSubset(size_t n, size_t size, Visit visit) {
  if (size > n) return;
  std::vector<size_t> subset(size);
  for (size_t i = 0; i < size; ++i) subset[i] = i;
  while (true) {
    visit(subset);
    size_t j = size;
    while (j > 0 && subset[j - 1] == n - size + j - 1) --j;
    if (j == 0) return;
    ++subset[j - 1];
    for (size_t l = j; l < size; ++l) subset[l] = subset[l - 1] + 1;
  }
}

// Measured: adds |count'(q) - count(q)| to *sum for every combination q of `index` (over D),
// count' being its support in D' (`released`).
void AddMeasuredDeviation(const CombinationIndex& index,
                          const std::vector<CategoricalColumn>& released, double* sum) {
  const size_t n = released[0].codes.size();
  std::vector<uint64_t> released_count(index.size(), 0);
  for (size_t r = 0; r < n; ++r) {
    if (const int64_t g = index.Find(released, r); g >= 0) ++released_count[g];
  }
  for (size_t g = 0; g < index.size(); ++g) {
    *sum += std::abs(static_cast<double>(released_count[g]) - static_cast<double>(index.count(g)));
  }
}

// Predicted: for every combination q of `index` (over D, attributes `set`), E count'(q) - count(q)
// = sum over non-empty parts T of P(T) (count(q - T) prod_{i in T} P(Q_i = q_i) - count(q)),
// since the parts' probabilities (with T empty) sum to 1 and an unrandomized part keeps the
// record's values. Parts have at most `max_part` (k) attributes. `freq` as Frequencies(original).
std::vector<double> ExpectedSupportChange(const std::vector<CategoricalColumn>& original,
                                          const RandomizationPlan& plan,
                                          const std::vector<std::vector<double>>& freq,
                                          const std::vector<size_t>& set,
                                          const CombinationIndex& index, int max_part) {
  const size_t n = original[0].codes.size();
  std::vector<size_t> representative(index.size(), n);
  for (size_t r = 0; r < n; ++r) {
    if (representative[index.group(r)] == n) representative[index.group(r)] = r;
  }
  std::vector<double> expected_change(index.size(), 0.0);
  for (int size = 1; size <= max_part; ++size) {
    ForEachSubset(set.size(), static_cast<size_t>(size), [&](const std::vector<size_t>& chosen) {
      std::vector<size_t> part, kept;
      for (size_t j = 0, c = 0; j < set.size(); ++j) {
        const bool in_part = c < chosen.size() && chosen[c] == j;
        (in_part ? part : kept).push_back(set[j]);
        c += in_part;
      }
      const double p = ProbabilityRandomizedPart(plan, set.size(), part);
      if (p == 0) return;
      const CombinationIndex rest(original, kept);
      for (size_t g = 0; g < index.size(); ++g) {
        const size_t r = representative[g];
        double matches = static_cast<double>(rest.count(rest.group(r)));
        for (size_t i : part) matches *= freq[i][original[i].codes[r]];
        expected_change[g] += p * (matches - static_cast<double>(index.count(g)));
      }
    });
  }
  return expected_change;
}

}  // namespace

absl::StatusOr<PriorKnowledgeBound> Proposition10Bound(
    const std::vector<CategoricalColumn>& original, const std::vector<CategoricalColumn>& released,
    const RandomizationPlan& plan) {
  if (absl::Status st = CheckTables(original, released, plan); !st.ok()) return st;
  if (plan.attributes_per_record != 1) {
    return absl::InvalidArgumentError(
        "Proposition 10 bounds Algorithm 1 (one attribute per record)");
  }
  const size_t m = original.size();
  const size_t n = original[0].codes.size();
  PriorKnowledgeBound bound;
  if (n == 0) return bound;
  std::vector<size_t> all(m);
  for (size_t i = 0; i < m; ++i) all[i] = i;
  const CombinationIndex full(original, all);
  std::vector<CombinationIndex> without;  // without[i]: every attribute but i
  for (size_t i = 0; i < m; ++i) {
    std::vector<size_t> rest = all;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    without.emplace_back(original, std::move(rest));
  }
  const std::vector<std::vector<double>> freq = Frequencies(original);
  double sum = 0;
  for (size_t r = 0; r < n; ++r) {
    double first = 0;
    if (const int64_t g = full.Find(released, r); g >= 0) {
      uint64_t smallest = std::numeric_limits<uint64_t>::max();
      for (size_t i = 0; i < m; ++i) {
        // q' occurs in D, so every q' - q'_i does (at least as often); m == 1 leaves nothing: n.
        smallest = std::min(smallest, m == 1 ? n : without[i].count(without[i].Find(released, r)));
      }
      first = static_cast<double>(full.count(g)) / static_cast<double>(smallest);
    }
    double largest = 0, total = 0;
    for (size_t i = 0; i < m; ++i) {
      const double weighted = plan.probabilities[i] * freq[i][released[i].codes[r]];
      largest = std::max(largest, weighted);
      total += weighted;
    }
    const double second = total > 0 ? largest / total : 0;
    const double b = std::max(first, second);
    bound.max = std::max(bound.max, b);
    sum += b;
  }
  bound.mean = sum / static_cast<double>(n);
  return bound;
}

absl::StatusOr<RelativeBias> MeasureRelativeBias(const std::vector<CategoricalColumn>& original,
                                                 const std::vector<CategoricalColumn>& released,
                                                 const RandomizationPlan& plan, int length) {
  if (absl::Status st = CheckTables(original, released, plan); !st.ok()) return st;
  const int m = static_cast<int>(original.size());
  if (length < 1 || length > m) {
    return absl::InvalidArgumentError(
        absl::StrCat("the length of a value combination must be "
                     "between 1 and the number of QID attributes (",
                     m, "), not ", length));
  }
  // Parts of a set that can be randomized together: at most k attributes.
  const int max_part = std::min(length, plan.attributes_per_record);
  double parts = 0;
  for (int t = 1; t <= max_part; ++t) parts += Binomial(length, t);
  const double sets = Binomial(m, length);
  if (sets * (1 + parts) > static_cast<double>(kMaxIndexBuilds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("relative bias for length ", length, " over ", m, " attributes needs ",
                     sets * (1 + parts), " passes over the table (at most ", kMaxIndexBuilds,
                     "); choose a shorter or longer length"));
  }
  const size_t n = original[0].codes.size();
  RelativeBias result;
  result.length = length;
  result.attribute_sets = static_cast<uint64_t>(sets);
  if (n == 0) return result;
  const std::vector<std::vector<double>> freq = Frequencies(original);

  double measured_sum = 0, predicted_sum = 0;
  ForEachSubset(
      static_cast<size_t>(m), static_cast<size_t>(length), [&](const std::vector<size_t>& set) {
        const CombinationIndex index(original, set);
        result.combinations += index.size();
        AddMeasuredDeviation(index, released, &measured_sum);
        for (double change : ExpectedSupportChange(original, plan, freq, set, index, max_part)) {
          predicted_sum += std::abs(change);
        }
      });
  const double norm = static_cast<double>(n) * sets;
  result.measured = measured_sum / norm;
  result.predicted = predicted_sum / norm;
  return result;
}

absl::StatusOr<Amplification> CAmplification(const std::vector<CategoricalColumn>& original,
                                             const std::vector<CategoricalColumn>& released,
                                             const RandomizationPlan& plan) {
  if (absl::Status st = CheckTables(original, released, plan); !st.ok()) return st;
  if (plan.attributes_per_record != 1) {
    return absl::InvalidArgumentError(
        "the c-amplification of Section 4.2.1 is derived for Algorithm 1 (one attribute per "
        "record)");
  }
  const size_t m = original.size();
  const size_t n = original[0].codes.size();
  Amplification a;
  if (n == 0) return a;
  const std::vector<std::vector<double>> freq = Frequencies(original);
  double sum = 0;
  for (size_t r = 0; r < n; ++r) {
    double largest = 0, smallest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < m; ++i) {
      const double w = plan.probabilities[i] * freq[i][released[i].codes[r]];
      largest = std::max(largest, w);
      smallest = std::min(smallest, w);
    }
    // A released value always occurs in D (it is drawn from D's column), so smallest > 0.
    const double c = smallest > 0 ? largest / smallest : std::numeric_limits<double>::infinity();
    a.max = std::max(a.max, c);
    sum += c;
  }
  a.mean = sum / static_cast<double>(n);
  return a;
}

absl::StatusOr<RelativeVariance> MeasureRelativeVariance(
    const std::vector<CategoricalColumn>& original, const RandomizationPlan& plan, int length,
    int runs, uint64_t seed) {
  if (absl::Status st = CheckTables(original, original, plan); !st.ok()) return st;
  if (plan.attributes_per_record != 1) {
    return absl::InvalidArgumentError(
        "Eq. (11) is derived for Algorithm 1 (one attribute per record)");
  }
  const int m = static_cast<int>(original.size());
  if (length < 1 || length > m) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the length of a value combination must be between 1 and the number of QID attributes (", m,
        "), not ", length));
  }
  if (runs < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sample variance needs at least 2 randomizations, not ", runs));
  }
  const double sets = Binomial(m, length);
  if (sets * (1 + length) > static_cast<double>(kMaxIndexBuilds)) {
    return absl::InvalidArgumentError(absl::StrCat("relative variance for length ", length,
                                                   " over ", m, " attributes needs ",
                                                   sets * (1 + length), " passes over the table"));
  }
  const size_t n = original[0].codes.size();
  RelativeVariance out;
  out.length = length;
  out.runs = runs;
  if (n == 0) return out;
  const std::vector<std::vector<double>> freq = Frequencies(original);
  std::vector<std::vector<CategoricalColumn>> released;
  for (int run = 0; run < runs; ++run) {
    std::unique_ptr<RandomSource> random = RandomSource::Seeded(seed + static_cast<uint64_t>(run));
    ASSIGN_OR_RETURN(std::vector<CategoricalColumn> d, Randomize(original, plan, *random));
    released.push_back(std::move(d));
  }
  double weight = 0, eq11 = 0, independent = 0, measured = 0;
  ForEachSubset(
      static_cast<size_t>(m), static_cast<size_t>(length), [&](const std::vector<size_t>& set) {
        const CombinationIndex index(original, set);
        out.combinations += index.size();
        std::vector<CombinationIndex> without;  // without[j]: q - q_set[j]
        for (size_t j = 0; j < set.size(); ++j) {
          std::vector<size_t> rest = set;
          rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(j));
          without.emplace_back(original, std::move(rest));
        }
        std::vector<size_t> representative(index.size(), n);
        for (size_t r = 0; r < n; ++r) {
          if (representative[index.group(r)] == n) representative[index.group(r)] = r;
        }
        // Independent: Var count'(q) = sum of pi (1 - pi) over the records that may hold q after
        // the randomization: those holding q (here) and those differing in one attribute (below).
        std::vector<double> var_count(index.size(), 0.0);
        for (size_t r = 0; r < n; ++r) {
          double stay = 1;
          for (size_t i : set) stay -= plan.probabilities[i] * (1 - freq[i][original[i].codes[r]]);
          var_count[index.group(r)] += stay * (1 - stay);
        }
        // Measured: count'(q) in every randomized table.
        std::vector<std::vector<double>> hits(released.size(),
                                              std::vector<double>(index.size(), 0));
        for (size_t run = 0; run < released.size(); ++run) {
          for (size_t x = 0; x < n; ++x) {
            if (const int64_t g = index.Find(released[run], x); g >= 0) hits[run][g] += 1;
          }
        }
        for (size_t g = 0; g < index.size(); ++g) {
          const size_t r = representative[g];
          const double count = static_cast<double>(index.count(g));
          double eq = 0;
          for (size_t j = 0; j < set.size(); ++j) {
            const size_t i = set[j];
            const double pi_value = freq[i][original[i].codes[r]];
            const double rest = set.size() == 1
                                    ? static_cast<double>(n)
                                    : static_cast<double>(without[j].count(without[j].group(r)));
            const double differing = rest - count;  // records holding q - q_j but not q_j
            const double move = plan.probabilities[i] * pi_value;
            var_count[g] += differing * move * (1 - move);
            const double ratio = rest / count;
            eq += plan.probabilities[i] * plan.probabilities[i] * ratio * ratio *
                  (pi_value - pi_value * pi_value);
          }
          double mean = 0;
          for (size_t run = 0; run < released.size(); ++run) mean += (hits[run][g] - count) / count;
          mean /= static_cast<double>(runs);
          double sample = 0;
          for (size_t run = 0; run < released.size(); ++run) {
            const double v = (hits[run][g] - count) / count;
            sample += (v - mean) * (v - mean);
          }
          sample /= static_cast<double>(runs - 1);
          weight += count;
          eq11 += count * eq;
          independent += count * var_count[g] / (count * count);
          measured += count * sample;
        }
      });
  if (weight > 0) {
    out.eq11 = eq11 / weight;
    out.independent = independent / weight;
    out.measured = measured / weight;
  }
  return out;
}

}  // namespace fedanon::randomization
