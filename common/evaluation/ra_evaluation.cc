#include "common/evaluation/ra_evaluation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::evaluation {
namespace {

using Item = std::pair<uint32_t, uint32_t>;  // (column, code)
using Itemset = std::vector<Item>;

// Uniform integer in [0, n), n > 0, by rejection (the same on every platform, unlike
// std::uniform_int_distribution).
uint64_t Below(std::mt19937_64& g, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x = 0;
  do {
    x = g();
  } while (x >= limit);
  return x % n;
}

template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& g) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(g, i)]);
}

// Per column, the codes occurring in the column.
std::vector<uint32_t> OccurringCodes(const CodedTable& t, size_t column) {
  std::vector<bool> seen(t.values[column].size(), false);
  for (uint32_t c : t.codes[column]) seen[c] = true;
  std::vector<uint32_t> out;
  for (uint32_t c = 0; c < seen.size(); ++c) {
    if (seen[c]) out.push_back(c);
  }
  return out;
}

using Bits = std::vector<uint64_t>;

uint64_t Count(const Bits& b) {
  uint64_t n = 0;
  for (uint64_t w : b) n += static_cast<uint64_t>(std::popcount(w));
  return n;
}

bool IsFrequent(uint64_t count, uint64_t n, double min_support) {
  return static_cast<double>(count) >= min_support * static_cast<double>(n);
}

}  // namespace

absl::StatusOr<std::vector<CountQuery>> RandomCountQueries(const CodedTable& d,
                                                           size_t qid_attributes, size_t count,
                                                           uint64_t seed) {
  if (qid_attributes == 0 || qid_attributes > d.qids()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a query over ", qid_attributes, " QID attributes, but the table has ", d.qids()));
  }
  std::vector<std::vector<uint32_t>> domains(d.codes.size());
  for (size_t c = 0; c < d.codes.size(); ++c) domains[c] = OccurringCodes(d, c);
  std::mt19937_64 g(seed);
  std::vector<CountQuery> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::vector<size_t> qids(d.qids());
    for (size_t c = 0; c < qids.size(); ++c) qids[c] = c;
    // Partial Fisher-Yates: the first qid_attributes entries are a uniform subset.
    for (size_t k = 0; k < qid_attributes; ++k) {
      std::swap(qids[k], qids[k + Below(g, qids.size() - k)]);
    }
    qids.resize(qid_attributes);
    std::sort(qids.begin(), qids.end());
    qids.push_back(d.sensitive());
    CountQuery q;
    q.columns = qids;
    for (size_t c : qids) {
      std::vector<uint32_t> domain = domains[c];
      std::vector<bool> accepted(d.values[c].size(), false);
      if (!domain.empty()) {
        const size_t size = 1 + Below(g, domain.size());
        for (size_t k = 0; k < size; ++k) {
          std::swap(domain[k], domain[k + Below(g, domain.size() - k)]);
          accepted[domain[k]] = true;
        }
      }
      q.accepted.push_back(std::move(accepted));
    }
    out.push_back(std::move(q));
  }
  return out;
}

namespace {
// mask[r] = 1 iff record r satisfies the query's conditions (only those on QIDs with
// `qids_only`); column at a time, so that the inner loop is a plain table lookup.
void MatchMask(const CodedTable& t, const CountQuery& q, bool qids_only,
               std::vector<uint8_t>& mask) {
  const size_t n = t.records();
  mask.assign(n, 1);
  std::vector<uint8_t> accept;
  for (size_t i = 0; i < q.columns.size(); ++i) {
    const size_t c = q.columns[i];
    if (qids_only && c == t.sensitive()) continue;
    accept.assign(t.values[c].size(), 0);
    for (size_t code = 0; code < accept.size() && code < q.accepted[i].size(); ++code) {
      accept[code] = q.accepted[i][code] ? 1 : 0;
    }
    const uint32_t* codes = t.codes[c].data();
    uint8_t* m = mask.data();
    for (size_t r = 0; r < n; ++r) m[r] &= accept[codes[r]];
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}
}  // namespace

uint64_t AnswerCount(const CodedTable& t, const CountQuery& q) {
  std::vector<uint8_t> mask;
  MatchMask(t, q, /*qids_only=*/false, mask);
  uint64_t n = 0;
  for (uint8_t m : mask) n += m;
  return n;
}

int LargestAnatomyL(const CodedTable& t) {
  std::vector<uint64_t> counts(t.values[t.sensitive()].size(), 0);
  for (uint32_t c : t.codes[t.sensitive()]) ++counts[c];
  const uint64_t max = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  return max == 0 ? 0 : static_cast<int>(t.records() / max);
}

absl::StatusOr<AnatomyGroups> AnatomyGrouping(const CodedTable& t, int l, uint64_t seed) {
  if (l < 2) return absl::InvalidArgumentError(absl::StrCat("Anatomy needs l >= 2, not ", l));
  const size_t s = t.sensitive();
  const size_t n = t.records();
  std::vector<std::vector<uint32_t>> buckets(t.values[s].size());
  for (uint32_t r = 0; r < n; ++r) buckets[t.codes[s][r]].push_back(r);
  size_t v = 0;  // the most frequent sensitive value (first seen among equals)
  for (size_t w = 1; w < buckets.size(); ++w) {
    if (buckets[w].size() > buckets[v].size()) v = w;
  }
  if (!buckets.empty() && buckets[v].size() * static_cast<uint64_t>(l) > n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Anatomy with l = %d is impossible: sensitive value '%s' of '%s' is in %d of %d records "
        "(%.1f%% > 1/l); the largest eligible l here is %d",
        l, t.values[s][v], t.names[s], buckets[v].size(), n,
        100.0 * static_cast<double>(buckets[v].size()) / static_cast<double>(n),
        LargestAnatomyL(t)));
  }
  std::mt19937_64 g(seed);
  for (auto& b : buckets) Shuffle(b, g);
  AnatomyGroups out;
  out.l = l;
  out.group_of.assign(n, 0);
  std::vector<std::vector<uint32_t>> group_values;  // per group: its sensitive codes
  std::vector<uint32_t> order(buckets.size());
  for (;;) {
    size_t non_empty = 0;
    for (const auto& b : buckets) non_empty += b.empty() ? 0 : 1;
    if (non_empty < static_cast<size_t>(l)) break;
    for (uint32_t v = 0; v < order.size(); ++v) order[v] = v;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return buckets[a].size() > buckets[b].size(); });
    std::vector<uint32_t> values;
    for (int i = 0; i < l; ++i) {
      const uint32_t v = order[i];
      out.group_of[buckets[v].back()] = out.groups;
      buckets[v].pop_back();
      values.push_back(v);
    }
    group_values.push_back(std::move(values));
    ++out.groups;
  }
  // Residue: each remaining record joins a random group without its sensitive value.
  for (uint32_t v = 0; v < buckets.size(); ++v) {
    for (uint32_t r : buckets[v]) {
      std::vector<uint32_t> candidates;
      for (uint32_t p = 0; p < out.groups; ++p) {
        if (std::find(group_values[p].begin(), group_values[p].end(), v) == group_values[p].end()) {
          candidates.push_back(p);
        }
      }
      if (candidates.empty()) {
        return absl::InternalError(absl::StrCat("Anatomy: no group without sensitive value '",
                                                t.values[s][v], "' for a residual record"));
      }
      const uint32_t p = candidates[Below(g, candidates.size())];
      out.group_of[r] = p;
      group_values[p].push_back(v);
    }
  }
  return out;
}

CodedTable PermuteWithinGroups(const CodedTable& t, const AnatomyGroups& groups, uint64_t seed) {
  CodedTable out = t;
  std::vector<std::vector<uint32_t>> members(groups.groups);
  for (uint32_t r = 0; r < t.records(); ++r) members[groups.group_of[r]].push_back(r);
  std::mt19937_64 g(seed);
  const size_t s = t.sensitive();
  for (const auto& m : members) {
    std::vector<uint32_t> values;
    values.reserve(m.size());
    for (uint32_t r : m) values.push_back(t.codes[s][r]);
    Shuffle(values, g);
    for (size_t i = 0; i < m.size(); ++i) out.codes[s][m[i]] = values[i];
  }
  return out;
}

double AnatomyEstimate(const CodedTable& t, const AnatomyGroups& groups, const CountQuery& q) {
  size_t sensitive_index = q.columns.size();
  for (size_t i = 0; i < q.columns.size(); ++i) {
    if (q.columns[i] == t.sensitive()) sensitive_index = i;
  }
  std::vector<double> in_rs(groups.groups, 0), size(groups.groups, 0);
  for (size_t r = 0; r < t.records(); ++r) {
    const uint32_t p = groups.group_of[r];
    size[p] += 1;
    const uint32_t code = t.codes[t.sensitive()][r];
    if (sensitive_index == q.columns.size() ||
        (code < q.accepted[sensitive_index].size() && q.accepted[sensitive_index][code])) {
      in_rs[p] += 1;
    }
  }
  std::vector<uint8_t> mask;
  MatchMask(t, q, /*qids_only=*/true, mask);
  double estimate = 0;
  for (size_t r = 0; r < t.records(); ++r) {
    if (mask[r] == 0) continue;
    const uint32_t p = groups.group_of[r];
    estimate += in_rs[p] / size[p];
  }
  return estimate;
}

namespace {

double SensitiveEntropy(const std::vector<uint64_t>& counts, uint64_t total) {
  double h = 0;
  for (uint64_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(total);
    h -= p * std::log(p);
  }
  return h;
}

// Whether the records `rows` of `t` are entropy l-diverse (with a small tolerance, so that a
// table exactly l-diverse in exact arithmetic passes).
bool EntropyDiverse(const CodedTable& t, const std::vector<uint32_t>& rows, double log_l) {
  if (rows.empty()) return false;
  std::vector<uint64_t> counts(t.values[t.sensitive()].size(), 0);
  for (uint32_t r : rows) ++counts[t.codes[t.sensitive()][r]];
  return SensitiveEntropy(counts, rows.size()) >= log_l - 1e-12;
}

}  // namespace

int LargestEntropyL(const CodedTable& t) {
  std::vector<uint64_t> counts(t.values[t.sensitive()].size(), 0);
  for (uint32_t code : t.codes[t.sensitive()]) ++counts[code];
  return static_cast<int>(std::floor(std::exp(SensitiveEntropy(counts, t.records())) + 1e-9));
}

absl::StatusOr<LDiverseGroups> EntropyLDiverseGrouping(const CodedTable& t, int l) {
  if (l < 2) return absl::InvalidArgumentError(absl::StrCat("l must be at least 2, not ", l));
  const double log_l = std::log(static_cast<double>(l));
  std::vector<uint32_t> all(t.records());
  for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<uint32_t>(r);
  if (!EntropyDiverse(t, all, log_l)) {
    return absl::InvalidArgumentError(absl::StrCat("the table is not entropy ", l,
                                                   "-diverse as a whole; the largest l is ",
                                                   LargestEntropyL(t)));
  }
  LDiverseGroups out;
  out.l = l;
  out.group_of.assign(t.records(), 0);
  std::vector<std::vector<uint32_t>> pending = {std::move(all)};
  while (!pending.empty()) {
    std::vector<uint32_t> rows = std::move(pending.back());
    pending.pop_back();
    // Attributes by the number of distinct values in the partition, most first (lower index on
    // ties), as Mondrian picks the widest dimension.
    std::vector<std::pair<size_t, size_t>> order;  // (distinct values, attribute)
    for (size_t a = 0; a < t.qids(); ++a) {
      std::vector<bool> seen(t.values[a].size(), false);
      size_t distinct = 0;
      for (uint32_t r : rows) {
        if (!seen[t.codes[a][r]]) {
          seen[t.codes[a][r]] = true;
          ++distinct;
        }
      }
      if (distinct > 1) order.emplace_back(distinct, a);
    }
    std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    bool split = false;
    for (const auto& entry : order) {
      const size_t a = entry.second;  // captured below (clang 14 cannot capture a binding)
      std::vector<uint32_t> sorted = rows;
      std::stable_sort(sorted.begin(), sorted.end(),
                       [&](uint32_t x, uint32_t y) { return t.codes[a][x] < t.codes[a][y]; });
      // Median cut that keeps equal values together: the first value boundary at or after the
      // middle, else the last one before it.
      const size_t mid = sorted.size() / 2;
      size_t cut = mid;
      while (cut < sorted.size() && cut > 0 &&
             t.codes[a][sorted[cut]] == t.codes[a][sorted[cut - 1]])
        ++cut;
      if (cut == sorted.size()) {
        cut = mid;
        while (cut > 0 && t.codes[a][sorted[cut]] == t.codes[a][sorted[cut - 1]]) --cut;
      }
      if (cut == 0 || cut == sorted.size()) continue;
      std::vector<uint32_t> left(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(cut));
      std::vector<uint32_t> right(sorted.begin() + static_cast<std::ptrdiff_t>(cut), sorted.end());
      if (!EntropyDiverse(t, left, log_l) || !EntropyDiverse(t, right, log_l)) continue;
      pending.push_back(std::move(right));
      pending.push_back(std::move(left));
      split = true;
      break;
    }
    if (split) continue;
    for (uint32_t r : rows) out.group_of[r] = out.groups;
    ++out.groups;
  }
  return out;
}

double LDiversityEstimate(const CodedTable& t, const LDiverseGroups& groups, const CountQuery& q) {
  const size_t g = groups.groups;
  std::vector<double> in_rs(g, 0);
  // Per group and queried QID column: the distinct values held, and those accepted.
  std::vector<std::vector<double>> held(q.columns.size(), std::vector<double>(g, 0));
  std::vector<std::vector<double>> accepted(q.columns.size(), std::vector<double>(g, 0));
  std::vector<std::vector<std::vector<bool>>> seen(q.columns.size());
  for (size_t i = 0; i < q.columns.size(); ++i) {
    if (q.columns[i] == t.sensitive()) continue;
    seen[i].assign(g, std::vector<bool>(t.values[q.columns[i]].size(), false));
  }
  for (size_t r = 0; r < t.records(); ++r) {
    const uint32_t p = groups.group_of[r];
    for (size_t i = 0; i < q.columns.size(); ++i) {
      const size_t c = q.columns[i];
      const uint32_t code = t.codes[c][r];
      const bool ok = code < q.accepted[i].size() && q.accepted[i][code];
      if (c == t.sensitive()) {
        if (ok) in_rs[p] += 1;
        continue;
      }
      if (seen[i][p][code]) continue;
      seen[i][p][code] = true;
      held[i][p] += 1;
      if (ok) accepted[i][p] += 1;
    }
  }
  bool has_sensitive = false;
  for (size_t c : q.columns) has_sensitive = has_sensitive || c == t.sensitive();
  std::vector<double> size(g, 0);
  if (!has_sensitive) {
    for (uint32_t p : groups.group_of) size[p] += 1;
  }
  double estimate = 0;
  for (size_t p = 0; p < g; ++p) {
    double e = has_sensitive ? in_rs[p] : size[p];
    for (size_t i = 0; i < q.columns.size(); ++i) {
      if (q.columns[i] == t.sensitive()) continue;
      e *= held[i][p] > 0 ? accepted[i][p] / held[i][p] : 0;
    }
    estimate += e;
  }
  return estimate;
}

std::vector<QuasiSensitiveRule> QuasiSensitiveRules(const CodedTable& t,
                                                    const AprioriOptions& options) {
  const size_t n = t.records();
  const size_t words = (n + 63) / 64;
  struct Frequent {
    Itemset items;
    Bits bits;
    uint64_t count = 0;
  };
  std::map<Itemset, uint64_t> support;  // every frequent itemset
  std::map<Item, Bits> item_bits;
  std::vector<Frequent> level;
  for (uint32_t c = 0; c < t.codes.size(); ++c) {
    std::vector<Bits> bits(t.values[c].size(), Bits(words, 0));
    for (size_t r = 0; r < n; ++r) bits[t.codes[c][r]][r / 64] |= uint64_t{1} << (r % 64);
    for (uint32_t v = 0; v < bits.size(); ++v) {
      const uint64_t count = Count(bits[v]);
      if (count == 0 || !IsFrequent(count, n, options.min_support)) continue;
      item_bits[{c, v}] = bits[v];
      level.push_back({{{c, v}}, bits[v], count});
    }
  }
  while (!level.empty()) {
    for (const Frequent& f : level) support[f.items] = f.count;
    std::vector<Frequent> next;
    // Join itemsets that share all but their last item (level is sorted: items in column order).
    for (size_t i = 0; i < level.size(); ++i) {
      for (size_t j = i + 1; j < level.size(); ++j) {
        const Itemset& a = level[i].items;
        const Itemset& b = level[j].items;
        if (!std::equal(a.begin(), a.end() - 1, b.begin())) break;
        if (a.back().first == b.back().first) continue;  // one value per column
        Frequent f;
        f.items = a;
        f.items.push_back(b.back());
        const Bits& add = item_bits.at(b.back());
        f.bits.resize(words);
        for (size_t w = 0; w < words; ++w) f.bits[w] = level[i].bits[w] & add[w];
        f.count = Count(f.bits);
        if (IsFrequent(f.count, n, options.min_support)) next.push_back(std::move(f));
      }
    }
    std::sort(next.begin(), next.end(),
              [](const Frequent& x, const Frequent& y) { return x.items < y.items; });
    level = std::move(next);
  }
  std::vector<QuasiSensitiveRule> rules;
  const uint32_t s = static_cast<uint32_t>(t.sensitive());
  for (const auto& [items, count] : support) {
    // The sensitive column is the last one, so its item is the itemset's last.
    if (items.size() < 2 || items.back().first != s) continue;
    Itemset x(items.begin(), items.end() - 1);
    const uint64_t x_count = support.at(x);
    const double confidence = static_cast<double>(count) / static_cast<double>(x_count);
    if (confidence < options.min_confidence) continue;
    rules.push_back({std::move(x), items.back().second, count, confidence});
  }
  std::sort(rules.begin(), rules.end());
  return rules;
}

AssociationRecovery CompareAssociations(const std::vector<QuasiSensitiveRule>& original,
                                        const std::vector<QuasiSensitiveRule>& released,
                                        size_t max_length) {
  AssociationRecovery out;
  out.original.assign(max_length + 1, 0);
  out.recovered.assign(max_length + 1, 0);
  out.released = released.size();
  for (const QuasiSensitiveRule& rule : original) {
    const size_t length = std::min(rule.antecedent.size(), max_length);
    ++out.original[0];
    ++out.original[length];
    if (std::binary_search(released.begin(), released.end(), rule)) {
      ++out.recovered[0];
      ++out.recovered[length];
    }
  }
  return out;
}

absl::StatusOr<RaEvaluation> EvaluateRandomization(const CodedTable& original,
                                                   const CodedTable& randomized,
                                                   const RaEvaluationOptions& options) {
  if (original.codes.size() < 2) {
    return absl::InvalidArgumentError(
        "the evaluation needs at least one QID and the sensitive "
        "attribute");
  }
  if (original.names != randomized.names || original.values != randomized.values ||
      original.records() != randomized.records()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the randomized table (", randomized.records(), " records) does not match the original (",
        original.records(), " records): same columns, dictionaries and record count needed"));
  }
  if (original.records() == 0) return absl::InvalidArgumentError("no records");
  if (options.queries == 0 || options.max_query_attributes == 0) {
    return absl::InvalidArgumentError("--queries and --max-query-attributes must be at least 1");
  }
  if (options.apriori.min_support <= 0 || options.apriori.min_support > 1 ||
      options.apriori.min_confidence < 0 || options.apriori.min_confidence > 1) {
    return absl::InvalidArgumentError("Apriori support must be in (0, 1] and confidence in [0, 1]");
  }
  RaEvaluation e;
  e.records = original.records();
  e.qid_names.assign(original.names.begin(), original.names.end() - 1);
  e.sensitive_name = original.names.back();
  std::optional<AnatomyGroups> groups;
  CodedTable permuted;
  const int l = options.anatomy_l == kAutoAnatomyL ? std::min(10, LargestAnatomyL(original))
                                                   : options.anatomy_l;
  if (l != 0 && (options.anatomy_l != kAutoAnatomyL || l >= 2)) {
    ASSIGN_OR_RETURN(groups, AnatomyGrouping(original, l, options.anatomy_seed));
    e.anatomy_l = l;
    e.anatomy_groups = groups->groups;
    permuted = PermuteWithinGroups(original, *groups, options.anatomy_seed + 1);
  }
  std::optional<LDiverseGroups> diverse;
  const int ll = options.ldiversity_l == kAutoAnatomyL ? std::min(10, LargestEntropyL(original))
                                                       : options.ldiversity_l;
  if (ll != 0 && (options.ldiversity_l != kAutoAnatomyL || ll >= 2)) {
    ASSIGN_OR_RETURN(diverse, EntropyLDiverseGrouping(original, ll));
    e.ldiversity_l = ll;
    e.ldiverse_groups = diverse->groups;
  }
  const size_t max_j = std::min(options.max_query_attributes, original.qids());
  for (size_t j = 1; j <= max_j; ++j) {
    ASSIGN_OR_RETURN(std::vector<CountQuery> queries,
                     RandomCountQueries(original, j, options.queries, options.query_seed + j));
    QueryErrorRow row;
    row.qid_attributes = j;
    row.queries = queries.size();
    std::vector<double> ra, an, ld;
    for (const CountQuery& q : queries) {
      const uint64_t truth = AnswerCount(original, q);
      if (truth == 0) {
        ++row.zero_answers;
        continue;
      }
      const double a = static_cast<double>(truth);
      ra.push_back(std::abs(a - static_cast<double>(AnswerCount(randomized, q))) / a);
      if (groups) an.push_back(std::abs(a - AnatomyEstimate(original, *groups, q)) / a);
      if (diverse) ld.push_back(std::abs(a - LDiversityEstimate(original, *diverse, q)) / a);
    }
    auto mean = [](const std::vector<double>& v) {
      double sum = 0;
      for (double x : v) sum += x;
      return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
    };
    row.randomized_error = mean(ra);
    row.randomized_median = Median(ra);
    row.anatomy_error = mean(an);
    row.anatomy_median = Median(an);
    row.ldiverse_error = mean(ld);
    row.ldiverse_median = Median(ld);
    e.query_errors.push_back(row);
  }
  const std::vector<QuasiSensitiveRule> asso_d = QuasiSensitiveRules(original, options.apriori);
  e.randomized_associations = CompareAssociations(
      asso_d, QuasiSensitiveRules(randomized, options.apriori), original.qids());
  if (groups) {
    e.anatomy_associations = CompareAssociations(
        asso_d, QuasiSensitiveRules(permuted, options.apriori), original.qids());
  }
  return e;
}

absl::StatusOr<RaTables> ReadRaTables(const fedanon::v1::JobSpec& spec, const std::string& raw_path,
                                      const std::string& randomized_path) {
  std::vector<std::string> qids;
  std::vector<std::string> sensitive;
  std::vector<std::string> all;
  for (const auto& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID) qids.push_back(a.name());
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) sensitive.push_back(a.name());
    all.push_back(a.name());
  }
  if (qids.empty() || sensitive.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the RA evaluation needs QID attributes and exactly one sensitive attribute (role: "
        "sensitive); the spec has ",
        qids.size(), " QID and ", sensitive.size(), " sensitive"));
  }
  std::vector<std::string> names = qids;
  names.push_back(sensitive[0]);
  RaTables out;
  for (CodedTable* t : {&out.original, &out.randomized}) {
    t->names = names;
    t->values.resize(names.size());
    t->codes.resize(names.size());
  }
  std::vector<absl::flat_hash_map<std::string, uint32_t>> dictionaries(names.size());
  const bool drop = spec.missing() != fedanon::v1::MISSING_KEEP;
  for (int which = 0; which < 2; ++which) {
    const std::string& path = which == 0 ? raw_path : randomized_path;
    CodedTable& t = which == 0 ? out.original : out.randomized;
    // The raw table is checked for missing values over every spec attribute (as the data is
    // loaded for randomization); the release holds only kept records.
    const std::vector<std::string>& wanted = which == 0 ? all : names;
    ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(path));
    std::vector<std::string_view> fields;
    ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
    if (!has_header) return absl::InvalidArgumentError(absl::StrCat(path, ": no header"));
    const size_t width = fields.size();
    absl::flat_hash_map<std::string, int> column_of;
    for (size_t c = 0; c < fields.size(); ++c)
      column_of[std::string(fields[c])] = static_cast<int>(c);
    std::vector<int> wanted_columns, name_columns;
    for (const std::string& name : wanted) {
      auto it = column_of.find(name);
      if (it == column_of.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", reader->line(), ": no column '", name, "' in the header"));
      }
      wanted_columns.push_back(it->second);
    }
    for (const std::string& name : names) name_columns.push_back(column_of.at(name));
    for (;;) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
      if (!more) break;
      RETURN_IF_ERROR(reader->CheckFieldCount(fields, width));
      if (which == 0 && drop) {
        bool missing = false;
        for (int c : wanted_columns) missing = missing || fields[c] == spec.missing_token();
        if (missing) continue;
      }
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string_view v = fields[name_columns[i]];
        auto [it, inserted] =
            dictionaries[i].emplace(std::string(v), static_cast<uint32_t>(t.values[i].size()));
        if (inserted) t.values[i].emplace_back(v);
        t.codes[i].push_back(it->second);
      }
    }
    if (which == 0) out.randomized.values = out.original.values;
  }
  out.original.values = out.randomized.values;  // values only in the release extend the dictionary
  if (out.original.records() != out.randomized.records()) {
    return absl::InvalidArgumentError(absl::StrCat(
        randomized_path, ": ", out.randomized.records(), " records, but the raw table '", raw_path,
        "' has ", out.original.records(),
        " (after dropping records with missing values); the release must hold the same records "
        "in the same order"));
  }
  return out;
}

std::string RaEvaluationToJson(const RaEvaluation& e, const RaEvaluationOptions& options) {
  nlohmann::ordered_json j;
  j["records"] = e.records;
  j["qid_attributes"] = e.qid_names;
  j["sensitive_attribute"] = e.sensitive_name;
  j["queries_per_row"] = options.queries;
  j["query_seed"] = options.query_seed;
  if (e.anatomy_l != 0) {
    j["anatomy"] = {
        {"l", e.anatomy_l}, {"groups", e.anatomy_groups}, {"seed", options.anatomy_seed}};
  }
  if (e.ldiversity_l != 0) {
    j["ldiversity"] = {{"l", e.ldiversity_l}, {"groups", e.ldiverse_groups}};
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const QueryErrorRow& r : e.query_errors) {
    nlohmann::ordered_json row;
    row["qid_attributes"] = r.qid_attributes;
    row["queries"] = r.queries;
    row["zero_answers"] = r.zero_answers;
    row["randomized_relative_error"] = r.randomized_error;
    row["randomized_median_relative_error"] = r.randomized_median;
    if (e.anatomy_l != 0) {
      row["anatomy_relative_error"] = r.anatomy_error;
      row["anatomy_median_relative_error"] = r.anatomy_median;
    }
    if (e.ldiversity_l != 0) {
      row["ldiversity_relative_error"] = r.ldiverse_error;
      row["ldiversity_median_relative_error"] = r.ldiverse_median;
    }
    rows.push_back(row);
  }
  j["query_relative_error"] = rows;
  auto recovery = [](const AssociationRecovery& a) {
    nlohmann::ordered_json o;
    o["released_rules"] = a.released;
    nlohmann::ordered_json by = nlohmann::ordered_json::array();
    for (size_t len = 0; len < a.original.size(); ++len) {
      if (len > 0 && a.original[len] == 0) continue;
      by.push_back(
          {{"length", len == 0 ? nlohmann::ordered_json("all") : nlohmann::ordered_json(len)},
           {"original", a.original[len]},
           {"recovered", a.recovered[len]},
           {"ratio", a.original[len] == 0 ? 0.0
                                          : static_cast<double>(a.recovered[len]) /
                                                static_cast<double>(a.original[len])}});
    }
    o["by_length"] = by;
    return o;
  };
  j["apriori"] = {{"min_support", options.apriori.min_support},
                  {"min_confidence", options.apriori.min_confidence}};
  j["randomized_associations"] = recovery(e.randomized_associations);
  if (e.anatomy_l != 0) j["anatomy_associations"] = recovery(e.anatomy_associations);
  return j.dump(2) + "\n";
}

std::string RaEvaluationToText(const RaEvaluation& e, const RaEvaluationOptions& options) {
  std::string out = absl::StrCat(e.records, " records, ", e.qid_names.size(),
                                 " QID attributes, sensitive attribute '", e.sensitive_name, "'\n");
  if (e.anatomy_l != 0) {
    absl::StrAppend(&out, "Anatomy baseline: l = ", e.anatomy_l, ", ", e.anatomy_groups,
                    " QI groups (seed ", options.anatomy_seed, ")\n");
  }
  if (e.ldiversity_l != 0) {
    absl::StrAppend(&out, "entropy l-diverse generalization baseline: l = ", e.ldiversity_l, ", ",
                    e.ldiverse_groups, " QI groups\n");
  }
  absl::StrAppend(&out, "COUNT queries: ", options.queries, " per row (seed ", options.query_seed,
                  "); mean |Ans(D) - Ans(D')| / Ans(D) over the queries with Ans(D) > 0\n");
  absl::StrAppend(&out, "                  randomized       ",
                  e.anatomy_l != 0 ? "  Anatomy (Eq. 13)" : "",
                  e.ldiversity_l != 0 ? "  l-diverse (Eq. 12)" : "", "\n");
  absl::StrAppend(&out, "  QIDs  Ans(D)=0  mean     median  ",
                  e.anatomy_l != 0 ? "  mean     median" : "",
                  e.ldiversity_l != 0 ? "  mean     median" : "", "\n");
  for (const QueryErrorRow& r : e.query_errors) {
    absl::StrAppend(&out, absl::StrFormat("  %4d  %8d  %7.4f  %7.4f", r.qid_attributes,
                                          r.zero_answers, r.randomized_error, r.randomized_median));
    if (e.anatomy_l != 0) {
      absl::StrAppend(&out, absl::StrFormat("  %7.4f  %7.4f", r.anatomy_error, r.anatomy_median));
    }
    if (e.ldiversity_l != 0) {
      absl::StrAppend(&out, absl::StrFormat("  %7.4f  %7.4f", r.ldiverse_error, r.ldiverse_median));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("quasi-sensitive associations (Apriori, support %g%%, confidence "
                      "%g%%): |Asso_D ∩ Asso_D'| / |Asso_D| by antecedent length\n",
                      100 * options.apriori.min_support, 100 * options.apriori.min_confidence));
  absl::StrAppend(&out, "  length  |Asso_D|  randomized", e.anatomy_l != 0 ? "        Anatomy" : "",
                  "\n");
  const AssociationRecovery& ra = e.randomized_associations;
  for (size_t len = 1; len <= ra.original.size(); ++len) {
    const size_t i = len == ra.original.size() ? 0 : len;  // "all" last
    if (i != 0 && ra.original[i] == 0) continue;
    auto cell = [&](const AssociationRecovery& a) {
      return absl::StrFormat("%4d (%5.1f%%)", a.recovered[i],
                             a.original[i] == 0 ? 0.0
                                                : 100.0 * static_cast<double>(a.recovered[i]) /
                                                      static_cast<double>(a.original[i]));
    };
    absl::StrAppend(&out, absl::StrFormat("  %6s  %8d  %s", i == 0 ? "all" : absl::StrCat(i),
                                          ra.original[i], cell(ra)));
    if (e.anatomy_l != 0) absl::StrAppend(&out, "  ", cell(e.anatomy_associations));
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  rules found in the release: randomized ", ra.released);
  if (e.anatomy_l != 0) absl::StrAppend(&out, ", Anatomy ", e.anatomy_associations.released);
  absl::StrAppend(&out, "\n");
  return out;
}

}  // namespace fedanon::evaluation
