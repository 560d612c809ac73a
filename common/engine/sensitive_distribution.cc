#include "common/engine/sensitive_distribution.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"

namespace fedanon::engine {
namespace {

using Wide = __int128;

uint64_t Total(absl::Span<const uint64_t> counts) {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

// r_i = p_i - q_i scaled by n * N: c_i * N - Q_i * n, exact.
std::vector<Wide> ScaledDifferences(absl::Span<const uint64_t> counts,
                                    absl::Span<const uint64_t> overall, uint64_t n,
                                    uint64_t big_n) {
  std::vector<Wide> r(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint64_t q = i < overall.size() ? overall[i] : 0;
    r[i] = static_cast<Wide>(counts[i]) * big_n - static_cast<Wide>(q) * n;
  }
  return r;
}

Wide Abs(Wide x) { return x < 0 ? -x : x; }

double Ratio(Wide numerator, long double denominator) {
  return static_cast<double>(static_cast<long double>(numerator) / denominator);
}

std::string VariantName(SensitiveDistribution::Kind kind) {
  switch (kind) {
    case SensitiveDistribution::Kind::kDistinct:
      return "distinct";
    case SensitiveDistribution::Kind::kEntropy:
      return "entropy";
    case SensitiveDistribution::Kind::kRecursive:
      return "recursive";
    case SensitiveDistribution::Kind::kCloseness:
      return "closeness";
  }
  return "";
}

std::string DistanceName(fedanon::v1::GroundDistance d) {
  switch (d) {
    case fedanon::v1::GROUND_DISTANCE_ORDERED:
      return "ordered";
    case fedanon::v1::GROUND_DISTANCE_HIERARCHICAL:
      return "hierarchical";
    default:
      return "equal";
  }
}

}  // namespace

uint64_t DistinctValues(absl::Span<const uint64_t> counts) {
  return static_cast<uint64_t>(
      std::count_if(counts.begin(), counts.end(), [](uint64_t c) { return c > 0; }));
}

double NaturalEntropy(absl::Span<const uint64_t> counts) {
  // H = ln n - (1/n) sum c_i ln c_i.
  const uint64_t n = Total(counts);
  if (n == 0) return 0;
  long double sum = 0;
  for (uint64_t c : counts) {
    if (c > 0) sum += static_cast<long double>(c) * std::log(static_cast<long double>(c));
  }
  const long double nn = static_cast<long double>(n);
  return static_cast<double>(std::log(nn) - sum / nn);
}

double RecursiveRatio(absl::Span<const uint64_t> counts, double l) {
  std::vector<uint64_t> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  if (sorted.empty() || sorted[0] == 0) return 0;
  // r_l + ... + r_m: the counts from the l-th largest on (l is a whole number >= 2).
  const auto first = static_cast<size_t>(std::max(1.0, std::ceil(l))) - 1;
  uint64_t tail = 0;
  for (size_t i = first; i < sorted.size(); ++i) tail += sorted[i];
  if (tail == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(static_cast<long double>(sorted[0]) / static_cast<long double>(tail));
}

double EqualDistanceEmd(absl::Span<const uint64_t> counts, absl::Span<const uint64_t> overall) {
  const uint64_t n = Total(counts), big_n = Total(overall);
  if (n == 0 || big_n == 0) return 0;
  Wide sum = 0;
  for (Wide r : ScaledDifferences(counts, overall, n, big_n)) sum += Abs(r);
  return Ratio(sum, 2.0L * static_cast<long double>(n) * static_cast<long double>(big_n));
}

double OrderedDistanceEmd(absl::Span<const uint64_t> counts, absl::Span<const uint64_t> overall) {
  const uint64_t n = Total(counts), big_n = Total(overall);
  const size_t m = counts.size();
  if (n == 0 || big_n == 0 || m < 2) return 0;
  Wide prefix = 0, sum = 0;
  for (Wide r : ScaledDifferences(counts, overall, n, big_n)) {
    prefix += r;
    sum += Abs(prefix);
  }
  return Ratio(sum, static_cast<long double>(m - 1) * static_cast<long double>(n) *
                        static_cast<long double>(big_n));
}

double HierarchicalDistanceEmd(const SensitiveDistribution& model,
                               absl::Span<const uint64_t> counts,
                               absl::Span<const uint64_t> overall) {
  const uint64_t n = Total(counts), big_n = Total(overall);
  if (n == 0 || big_n == 0 || model.tree_height == 0) return 0;
  const size_t nodes = model.parent.size();
  // extra(N): the surplus (scaled by n * N) of the leaves under N; cost(N) = height(N) *
  // min(positive, negative extra of N's children). Nodes are numbered so that a parent comes
  // before its children (the taxonomy's creation order), so a reverse pass sees every child first.
  std::vector<Wide> extra(nodes, 0), positive(nodes, 0), negative(nodes, 0);
  const std::vector<Wide> r = ScaledDifferences(counts, overall, n, big_n);
  for (size_t v = 0; v < r.size(); ++v) extra[model.leaf_of_value[v]] += r[v];
  Wide cost = 0;
  for (size_t i = nodes; i-- > 0;) {
    if (positive[i] != 0 || negative[i] != 0) {
      cost += static_cast<Wide>(model.height[i]) * std::min(positive[i], negative[i]);
    }
    const int32_t p = model.parent[i];
    if (p < 0) continue;
    extra[p] += extra[i];
    (extra[i] > 0 ? positive[p] : negative[p]) += Abs(extra[i]);
  }
  return Ratio(cost, static_cast<long double>(model.tree_height) * static_cast<long double>(n) *
                         static_cast<long double>(big_n));
}

double Closeness(const SensitiveDistribution& model, absl::Span<const uint64_t> counts,
                 absl::Span<const uint64_t> overall) {
  switch (model.distance) {
    case fedanon::v1::GROUND_DISTANCE_ORDERED:
      return OrderedDistanceEmd(counts, overall);
    case fedanon::v1::GROUND_DISTANCE_HIERARCHICAL:
      return HierarchicalDistanceEmd(model, counts, overall);
    default:
      return EqualDistanceEmd(counts, overall);
  }
}

bool SensitiveDistribution::Holds(absl::Span<const uint64_t> counts,
                                  absl::Span<const uint64_t> overall) const {
  if (Total(counts) == 0) return true;
  switch (kind) {
    case Kind::kDistinct:
      return static_cast<double>(DistinctValues(counts)) >= l;
    case Kind::kEntropy:
      return NaturalEntropy(counts) >= std::log(l) - kDistributionEpsilon;
    case Kind::kRecursive: {
      std::vector<uint64_t> sorted(counts.begin(), counts.end());
      std::sort(sorted.begin(), sorted.end(), std::greater<>());
      const auto first = static_cast<size_t>(std::ceil(l)) - 1;
      uint64_t tail = 0;
      for (size_t i = first; i < sorted.size(); ++i) tail += sorted[i];
      return static_cast<long double>(sorted[0]) <
             static_cast<long double>(c) * static_cast<long double>(tail);
    }
    case Kind::kCloseness:
      return Closeness(*this, counts, overall) <= t + kDistributionEpsilon;
  }
  return false;
}

uint64_t SensitiveDistribution::ImpliedGroupSize() const {
  if (kind == Kind::kCloseness) return 1;
  return static_cast<uint64_t>(std::max(1.0, std::ceil(l - kDistributionEpsilon)));
}

std::string SensitiveDistribution::Describe() const {
  if (kind == Kind::kCloseness) {
    return absl::StrCat(t, "-closeness (", DistanceName(distance), " distance) of '", attribute,
                        "'");
  }
  if (kind == Kind::kRecursive) {
    return absl::StrCat("recursive (", c, ", ", l, ")-diversity of '", attribute, "'");
  }
  return absl::StrCat(VariantName(kind), " ", l, "-diversity of '", attribute, "'");
}

absl::StatusOr<SensitiveDistribution> BuildSensitiveDistribution(const fedanon::v1::JobSpec& spec,
                                                                 const table::Dataset& data) {
  const auto& p = spec.privacy();
  SensitiveDistribution d;
  std::string attribute = p.sensitive_attribute();
  if (attribute.empty()) {
    for (const auto& a : spec.attributes()) {
      if (a.role() == fedanon::v1::ROLE_SENSITIVE) attribute = a.name();
    }
  }
  d.attribute = attribute;
  for (size_t i = 0; i < data.value_columns.size(); ++i) {
    if (data.value_columns[i].name == attribute) d.column = static_cast<int>(i);
  }
  if (d.column < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the privacy model needs the declared values of sensitive attribute '",
                     attribute, "' (values: [...])"));
  }
  const table::Dataset::ValueColumn& column = data.value_columns[static_cast<size_t>(d.column)];
  d.domain = column.values.size();
  if (p.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    d.kind = SensitiveDistribution::Kind::kCloseness;
    d.t = p.t();
    d.distance = p.distance() == fedanon::v1::GROUND_DISTANCE_UNSPECIFIED
                     ? fedanon::v1::GROUND_DISTANCE_EQUAL
                     : p.distance();
  } else {
    switch (p.variant()) {
      case fedanon::v1::DIVERSITY_VARIANT_ENTROPY:
        d.kind = SensitiveDistribution::Kind::kEntropy;
        break;
      case fedanon::v1::DIVERSITY_VARIANT_RECURSIVE:
        d.kind = SensitiveDistribution::Kind::kRecursive;
        break;
      default:
        d.kind = SensitiveDistribution::Kind::kDistinct;
    }
    d.l = p.diversity();
    d.c = p.recursive_c();
  }
  if (d.kind == SensitiveDistribution::Kind::kCloseness &&
      d.distance == fedanon::v1::GROUND_DISTANCE_HIERARCHICAL) {
    if (column.taxonomy == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "distance: hierarchical needs a taxonomy of sensitive attribute '", attribute, "'"));
    }
    const table::Taxonomy& tax = *column.taxonomy;
    d.parent.resize(tax.size());
    d.height.assign(tax.size(), 0);
    for (size_t n = 0; n < tax.size(); ++n) {
      d.parent[n] = tax.parent(static_cast<table::Taxonomy::NodeId>(n));
      if (d.parent[n] >= static_cast<int32_t>(n)) {
        return absl::InternalError("taxonomy nodes are not numbered parents first");
      }
    }
    for (size_t n = tax.size(); n-- > 0;) {
      if (d.parent[n] >= 0)
        d.height[d.parent[n]] = std::max(d.height[d.parent[n]], d.height[n] + 1);
    }
    d.tree_height = d.height.empty() ? 0 : d.height[0];
    for (const std::string& value : column.values) {
      const auto leaf = tax.FindLeaf(value);
      if (!leaf.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("value '", value,
                                                       "' of sensitive attribute '", attribute,
                                                       "' is not a leaf of its taxonomy"));
      }
      d.leaf_of_value.push_back(*leaf);
    }
  }
  return d;
}

DistributionSummary SummarizeGroups(const SensitiveDistribution& model,
                                    absl::Span<const uint64_t> groups,
                                    absl::Span<const uint64_t> overall) {
  DistributionSummary s;
  const size_t d = model.domain;
  bool first = true;
  for (size_t pos = 0; d > 0 && pos + d <= groups.size(); pos += d) {
    const absl::Span<const uint64_t> g = groups.subspan(pos, d);
    if (Total(g) == 0) continue;
    switch (model.kind) {
      case SensitiveDistribution::Kind::kEntropy: {
        const double l = std::exp(NaturalEntropy(g));
        s.smallest_diversity = first ? l : std::min(s.smallest_diversity, l);
        break;
      }
      case SensitiveDistribution::Kind::kRecursive:
        s.largest_recursive_ratio = std::max(s.largest_recursive_ratio, RecursiveRatio(g, model.l));
        [[fallthrough]];
      case SensitiveDistribution::Kind::kDistinct: {
        const auto l = static_cast<double>(DistinctValues(g));
        s.smallest_diversity = first ? l : std::min(s.smallest_diversity, l);
        break;
      }
      case SensitiveDistribution::Kind::kCloseness:
        s.largest_closeness = std::max(s.largest_closeness, Closeness(model, g, overall));
        break;
    }
    first = false;
  }
  return s;
}

void FillDistributionReport(const SensitiveDistribution& model, const DistributionSummary& summary,
                            fedanon::v1::Report* report) {
  if (model.kind == SensitiveDistribution::Kind::kCloseness) {
    report->set_largest_closeness(summary.largest_closeness);
    return;
  }
  report->set_smallest_diversity(summary.smallest_diversity);
  if (model.kind == SensitiveDistribution::Kind::kRecursive) {
    report->set_largest_recursive_ratio(summary.largest_recursive_ratio);
  }
}

}  // namespace fedanon::engine
