#include "tests/checker/brute_force_checker.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::JobSpec;
using Table = std::vector<std::vector<std::string>>;

constexpr double kConfidenceTolerance = 1e-12;
constexpr double kGainTieTolerance = 1e-9;
constexpr size_t kCrossCheckMaxQid = 8;

// ---------------------------------------------------------------------------------------------
// Numbers and intervals.

// A plain decimal number: [+-]digits[.digits][(e|E)[+-]digits], at least one mantissa digit.
std::optional<double> ParseNumber(absl::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && (s[i] == '-' || s[i] == '+')) ++i;
  size_t mantissa_digits = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++mantissa_digits;
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++mantissa_digits;
  }
  if (mantissa_digits == 0) return std::nullopt;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exponent_digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++exponent_digits;
    if (exponent_digits == 0) return std::nullopt;
  }
  if (i != n) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(s, &value) || std::isnan(value)) return std::nullopt;
  return value;
}

// ---------------------------------------------------------------------------------------------
// Validated view of the input.

enum class Kind { kNonQid, kTaxonomy, kContinuous, kSuppression };

struct Taxonomy {
  std::map<std::string, std::vector<std::string>> paths;  // leaf -> normalized path to the root
  std::set<std::string> inner;                            // labels that have children
};

struct Prepared {
  const CheckerInput* in = nullptr;
  std::map<std::string, size_t> column;  // name -> column index
  std::vector<Kind> kind;                // per column
  std::vector<Taxonomy> taxonomy;        // per column (kTaxonomy only)
  std::vector<size_t> qid;               // QID columns in spec order
  std::string token;                     // suppression token
  std::optional<size_t> class_column;
};

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

absl::Status CheckShape(const std::string& name, const Table& table, size_t width) {
  for (size_t r = 0; r < table.size(); ++r) {
    if (table[r].size() != width) {
      return absl::InvalidArgumentError(absl::StrCat(name, " row ", r + 1, " has ", table[r].size(),
                                                     " field(s) but the header has ", width));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Taxonomy> BuildTaxonomy(const std::string& attribute,
                                       const std::map<std::string, std::vector<std::string>>& in) {
  Taxonomy tax;
  std::map<std::string, std::string> parent;
  std::optional<std::string> root;
  const std::string where = absl::StrCat("taxonomy_paths[", Quote(attribute), "]");
  for (const auto& [leaf, given] : in) {
    std::vector<std::string> path;
    for (const std::string& label : given) {
      if (path.empty() || path.back() != label) path.push_back(label);
    }
    if (path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": empty path for leaf ", Quote(leaf)));
    }
    if (path.front() != leaf) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the path of leaf ", Quote(leaf),
                                                     " starts with ", Quote(path.front()),
                                                     " instead of the leaf itself"));
    }
    if (root.has_value() && *root != path.back()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the path of leaf ", Quote(leaf),
                                                     " ends in root ", Quote(path.back()),
                                                     " but others end in ", Quote(*root)));
    }
    root = path.back();
    std::set<std::string> seen;
    for (size_t i = 0; i < path.size(); ++i) {
      if (!seen.insert(path[i]).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": label ", Quote(path[i]), " occurs twice on the path of leaf ", Quote(leaf)));
      }
      if (i + 1 < path.size()) {
        tax.inner.insert(path[i + 1]);
        auto [it, inserted] = parent.emplace(path[i], path[i + 1]);
        if (!inserted && it->second != path[i + 1]) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": label ", Quote(path[i]),
                                                         " has two parents ", Quote(it->second),
                                                         " and ", Quote(path[i + 1])));
        }
      } else if (parent.count(path[i]) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": root ", Quote(path[i]), " also has a parent"));
      }
    }
    tax.paths.emplace(leaf, std::move(path));
  }
  for (const auto& [leaf, path] : tax.paths) {
    if (tax.inner.count(leaf) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": label ", Quote(leaf), " is both a leaf and an inner node"));
    }
  }
  return tax;
}

absl::StatusOr<Prepared> Prepare(const CheckerInput& in) {
  Prepared p;
  p.in = &in;
  const JobSpec& spec = in.spec;
  for (size_t c = 0; c < in.header.size(); ++c) {
    if (!p.column.emplace(in.header[c], c).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("header names column ", Quote(in.header[c]), " twice"));
    }
  }
  if (in.raw.size() != in.anonymized.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the raw table has ", in.raw.size(),
                                                   " row(s) but the anonymized table has ",
                                                   in.anonymized.size()));
  }
  if (absl::Status s = CheckShape("raw", in.raw, in.header.size()); !s.ok()) return s;
  if (absl::Status s = CheckShape("anonymized", in.anonymized, in.header.size()); !s.ok()) {
    return s;
  }

  p.kind.assign(in.header.size(), Kind::kNonQid);
  p.taxonomy.resize(in.header.size());
  std::set<std::string> spec_names;
  std::vector<size_t> class_columns;
  for (const auto& attr : spec.attributes()) {
    if (!spec_names.insert(attr.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the spec lists attribute ", Quote(attr.name()), " twice"));
    }
    auto it = p.column.find(attr.name());
    if (it == p.column.end()) {
      if (attr.role() == fedanon::v1::ROLE_ID) continue;  // never released
      return absl::InvalidArgumentError(
          absl::StrCat("spec attribute ", Quote(attr.name()), " is not in the header"));
    }
    const size_t c = it->second;
    if (attr.role() == fedanon::v1::ROLE_CLASS) class_columns.push_back(c);
    if (attr.role() != fedanon::v1::ROLE_QID) continue;
    p.qid.push_back(c);
    if (in.taxonomy_paths.count(attr.name()) != 0) {
      p.kind[c] = Kind::kTaxonomy;
      auto tax = BuildTaxonomy(attr.name(), in.taxonomy_paths.at(attr.name()));
      if (!tax.ok()) return tax.status();
      p.taxonomy[c] = *std::move(tax);
    } else if (attr.type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS) {
      p.kind[c] = Kind::kContinuous;
    } else {
      p.kind[c] = Kind::kSuppression;
    }
  }
  for (const auto& [name, unused] : in.taxonomy_paths) {
    auto it = p.column.find(name);
    if (it == p.column.end() || p.kind[it->second] != Kind::kTaxonomy) {
      return absl::InvalidArgumentError(absl::StrCat("taxonomy_paths names ", Quote(name),
                                                     ", which is not a QID attribute of the spec"));
    }
  }
  if (class_columns.size() > 1) {
    return absl::InvalidArgumentError("the spec has more than one attribute with role class");
  }
  if (!class_columns.empty()) p.class_column = class_columns.front();
  p.token = spec.suppression_token().empty() ? "*" : spec.suppression_token();
  return p;
}

// ---------------------------------------------------------------------------------------------
// Privacy constraints.

// ldiversity / tcloseness: the requirement on a group's sensitive distribution.
struct DistributionRule {
  fedanon::v1::PrivacyModel model = fedanon::v1::PRIVACY_MODEL_LDIVERSITY;
  fedanon::v1::DiversityVariant variant = fedanon::v1::DIVERSITY_VARIANT_DISTINCT;
  double l = 0, c = 0, t = 0;
  size_t column = 0;                        // the sensitive column
  std::vector<std::string> values;          // the spec's declared values, in order
  std::vector<std::vector<double>> ground;  // ground distance between values i and j
  std::vector<uint64_t> overall;            // the whole raw table's counts per value
};

struct Constraint {
  std::string description;      // e.g. "LKC subset {Job, Sex}" or "anonymity template #1"
  std::vector<size_t> columns;  // grouping columns
  uint64_t k = 0;               // minimum group size (0: none)
  bool has_confidence = false;  // bound P(s|qid) for s in sensitive_values on sensitive_column
  size_t sensitive_column = 0;
  std::vector<std::string> sensitive_values;
  double max_confidence = 1;
  std::optional<DistributionRule> distribution;
};

absl::StatusOr<size_t> ResolveColumn(const Prepared& p, const std::string& name,
                                     absl::string_view what) {
  auto it = p.column.find(name);
  if (it == p.column.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " names attribute ", Quote(name), ", which is not in the header"));
  }
  return it->second;
}

// `name` if set, else the single attribute with role sensitive.
absl::StatusOr<size_t> ResolveSensitive(const Prepared& p, const std::string& name,
                                        absl::string_view what) {
  if (!name.empty()) return ResolveColumn(p, name, what);
  std::vector<std::string> sensitive;
  for (const auto& attr : p.in->spec.attributes()) {
    if (attr.role() == fedanon::v1::ROLE_SENSITIVE) sensitive.push_back(attr.name());
  }
  if (sensitive.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " names no sensitive attribute and the spec has ", sensitive.size(),
                     " attribute(s) with role sensitive (need exactly one)"));
  }
  return ResolveColumn(p, sensitive.front(), what);
}

std::string Names(const Prepared& p, const std::vector<size_t>& columns) {
  std::vector<std::string> names;
  for (size_t c : columns) names.push_back(p.in->header[c]);
  return absl::StrCat("{", absl::StrJoin(names, ", "), "}");
}

// All subsets of `items` of size `size`, in lexicographic order of positions.
void Combinations(const std::vector<size_t>& items, size_t size, size_t start,
                  std::vector<size_t>* current, std::vector<std::vector<size_t>>* out) {
  if (current->size() == size) {
    out->push_back(*current);
    return;
  }
  for (size_t i = start; i < items.size(); ++i) {
    current->push_back(items[i]);
    Combinations(items, size, i + 1, current, out);
    current->pop_back();
  }
}

// The ground distances of a tcloseness model (Li et al. 2007, section 4.2).
absl::StatusOr<std::vector<std::vector<double>>> GroundDistances(
    const Prepared& p, const std::vector<std::string>& values) {
  const size_t m = values.size();
  std::vector<std::vector<double>> d(m, std::vector<double>(m, 0));
  const auto distance = p.in->spec.privacy().distance();
  if (distance == fedanon::v1::GROUND_DISTANCE_ORDERED) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < m; ++j) {
        d[i][j] = m < 2 ? 0
                        : std::fabs(static_cast<double>(i) - static_cast<double>(j)) /
                              static_cast<double>(m - 1);
      }
    }
    return d;
  }
  if (distance != fedanon::v1::GROUND_DISTANCE_HIERARCHICAL) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < m; ++j) d[i][j] = i == j ? 0 : 1;
    }
    return d;
  }
  // Hierarchical: height(lowest common ancestor) / height of the tree, where a node's height is
  // the longest way down from it to a leaf.
  auto tax = BuildTaxonomy("(sensitive)", p.in->sensitive_taxonomy);
  if (!tax.ok()) return tax.status();
  std::map<std::string, size_t> height;
  for (const auto& [leaf, path] : tax->paths) {
    for (size_t i = 0; i < path.size(); ++i) height[path[i]] = std::max(height[path[i]], i);
  }
  const size_t tree = tax->paths.empty() ? 0 : height[tax->paths.begin()->second.back()];
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < m; ++j) {
      auto a = tax->paths.find(values[i]);
      auto b = tax->paths.find(values[j]);
      if (a == tax->paths.end() || b == tax->paths.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("sensitive_taxonomy lacks value ",
                         Quote(a == tax->paths.end() ? values[i] : values[j])));
      }
      const std::set<std::string> above_a(a->second.begin(), a->second.end());
      std::string lca;
      for (const std::string& label : b->second) {
        if (above_a.count(label) != 0) {
          lca = label;
          break;
        }
      }
      d[i][j] = tree == 0 ? 0 : static_cast<double>(height[lca]) / static_cast<double>(tree);
    }
  }
  return d;
}

absl::StatusOr<Constraint> DistributionConstraint(const Prepared& p) {
  const auto& privacy = p.in->spec.privacy();
  auto sensitive = ResolveSensitive(
      p, privacy.sensitive_attribute(),
      privacy.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ? "ldiversity" : "tcloseness");
  if (!sensitive.ok()) return sensitive.status();
  DistributionRule rule;
  rule.model = privacy.model();
  rule.variant = privacy.variant() == fedanon::v1::DIVERSITY_VARIANT_UNSPECIFIED
                     ? fedanon::v1::DIVERSITY_VARIANT_DISTINCT
                     : privacy.variant();
  rule.l = privacy.diversity();
  rule.c = privacy.recursive_c();
  rule.t = privacy.t();
  rule.column = *sensitive;
  for (const auto& a : p.in->spec.attributes()) {
    if (a.name() == p.in->header[*sensitive])
      rule.values.assign(a.values().begin(), a.values().end());
  }
  if (rule.values.empty()) {
    return absl::InvalidArgumentError("the sensitive attribute declares no values");
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < rule.values.size(); ++i) index[rule.values[i]] = i;
  rule.overall.assign(rule.values.size(), 0);
  for (size_t r = 0; r < p.in->raw.size(); ++r) {
    auto it = index.find(p.in->raw[r][*sensitive]);
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat("raw row ", r + 1, ": sensitive value ",
                                                     Quote(p.in->raw[r][*sensitive]),
                                                     " is not declared"));
    }
    ++rule.overall[it->second];
  }
  if (rule.model == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    auto ground = GroundDistances(p, rule.values);
    if (!ground.ok()) return ground.status();
    rule.ground = *std::move(ground);
  }
  Constraint c;
  c.columns = p.qid;
  c.k = privacy.k();
  if (rule.model == fedanon::v1::PRIVACY_MODEL_LDIVERSITY) {
    c.k = std::max<uint64_t>(c.k, static_cast<uint64_t>(std::ceil(rule.l)));
  }
  c.description = absl::StrCat(
      rule.model == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ? "l-diversity" : "t-closeness", " over ",
      Names(p, c.columns), " k=", c.k);
  c.distribution = std::move(rule);
  return c;
}

// Whether one group's counts (per declared value) meet the rule; `why` says how it fails. Also
// folds the group's measures into `check`.
bool DistributionHolds(const DistributionRule& rule, const std::vector<uint64_t>& counts,
                       PrivacyCheck* check, bool first, std::string* why) {
  uint64_t n = 0, distinct = 0;
  for (uint64_t x : counts) {
    n += x;
    distinct += x > 0 ? 1 : 0;
  }
  if (rule.model == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    const double emd = TransportationEmd(counts, rule.overall, rule.ground);
    check->largest_closeness = std::max(check->largest_closeness, emd);
    *why = absl::StrCat("its distance to the table's distribution is ", emd, " > t=", rule.t);
    return emd <= rule.t + 1e-9;
  }
  double diversity = static_cast<double>(distinct);
  bool holds = false;
  switch (rule.variant) {
    case fedanon::v1::DIVERSITY_VARIANT_ENTROPY: {
      double h = 0;
      for (uint64_t x : counts) {
        if (x == 0) continue;
        const double q = static_cast<double>(x) / static_cast<double>(n);
        h -= q * std::log(q);
      }
      diversity = std::exp(h);
      holds = h >= std::log(rule.l) - 1e-9;
      *why = absl::StrCat("its entropy ", h, " is below log(", rule.l, ")");
      break;
    }
    case fedanon::v1::DIVERSITY_VARIANT_RECURSIVE: {
      std::vector<uint64_t> sorted = counts;
      std::sort(sorted.rbegin(), sorted.rend());
      uint64_t tail = 0;
      for (size_t i = static_cast<size_t>(rule.l) - 1; i < sorted.size(); ++i) tail += sorted[i];
      const double ratio = tail == 0 ? std::numeric_limits<double>::infinity()
                                     : static_cast<double>(sorted[0]) / static_cast<double>(tail);
      check->largest_recursive_ratio = std::max(check->largest_recursive_ratio, ratio);
      holds = static_cast<double>(sorted[0]) < rule.c * static_cast<double>(tail);
      *why = absl::StrCat("r_1 = ", sorted[0], " is not below c=", rule.c, " times ", tail);
      break;
    }
    default:
      holds = static_cast<double>(distinct) >= rule.l;
      *why = absl::StrCat("it has ", distinct, " distinct value(s) < l=", rule.l);
  }
  check->smallest_diversity = first ? diversity : std::min(check->smallest_diversity, diversity);
  return holds;
}

absl::StatusOr<std::vector<Constraint>> BuildConstraints(const Prepared& p) {
  const auto& privacy = p.in->spec.privacy();
  std::vector<Constraint> out;
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
      privacy.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    auto c = DistributionConstraint(p);
    if (!c.ok()) return c.status();
    out.push_back(*std::move(c));
    return out;
  }
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LKC) {
    if (privacy.l() == 0) return absl::InvalidArgumentError("LKC: L must be at least 1");
    std::optional<size_t> sensitive;
    if (privacy.sensitive_values_size() > 0) {
      auto s = ResolveSensitive(p, privacy.sensitive_attribute(), "LKC");
      if (!s.ok()) return s.status();
      sensitive = *s;
    }
    const size_t m = std::min<size_t>(privacy.l(), p.qid.size());
    std::vector<size_t> sizes = {m};  // the defining size first, then the cross-check sizes
    if (p.qid.size() <= kCrossCheckMaxQid) {
      for (size_t size = 1; size < m; ++size) sizes.push_back(size);
    }
    for (size_t size : sizes) {
      std::vector<std::vector<size_t>> subsets;
      std::vector<size_t> current;
      Combinations(p.qid, size, 0, &current, &subsets);
      for (auto& subset : subsets) {
        Constraint c;
        c.description = absl::StrCat("LKC (L=", privacy.l(), ") subset ", Names(p, subset));
        c.columns = std::move(subset);
        c.k = privacy.k();
        if (sensitive.has_value()) {
          c.has_confidence = true;
          c.sensitive_column = *sensitive;
          c.sensitive_values.assign(privacy.sensitive_values().begin(),
                                    privacy.sensitive_values().end());
          c.max_confidence = privacy.c();
        }
        out.push_back(std::move(c));
      }
    }
    return out;
  }
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    auto columns_of = [&](const auto& names,
                          const std::string& what) -> absl::StatusOr<std::vector<size_t>> {
      std::vector<size_t> columns;
      if (names.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " has no qid"));
      for (const std::string& name : names) {
        auto c = ResolveColumn(p, name, what);
        if (!c.ok()) return c.status();
        if (std::find(columns.begin(), columns.end(), *c) != columns.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, " lists attribute ", Quote(name), " twice"));
        }
        columns.push_back(*c);
      }
      return columns;
    };
    for (int i = 0; i < privacy.templates_size(); ++i) {
      const auto& t = privacy.templates(i);
      Constraint c;
      const std::string what = absl::StrCat("anonymity template #", i + 1);
      auto columns = columns_of(t.qid(), what);
      if (!columns.ok()) return columns.status();
      c.columns = *std::move(columns);
      c.description = absl::StrCat(what, " ", Names(p, c.columns), " k=", t.k());
      c.k = t.k();
      out.push_back(std::move(c));
    }
    for (int i = 0; i < privacy.confidence_size(); ++i) {
      const auto& t = privacy.confidence(i);
      Constraint c;
      const std::string what = absl::StrCat("confidence template #", i + 1);
      auto columns = columns_of(t.qid(), what);
      if (!columns.ok()) return columns.status();
      c.columns = *std::move(columns);
      auto sensitive = ResolveSensitive(p, t.attribute(), what);
      if (!sensitive.ok()) return sensitive.status();
      c.description = absl::StrCat(what, " ", Names(p, c.columns), " -> ", p.in->header[*sensitive],
                                   " max=", t.max());
      c.has_confidence = true;
      c.sensitive_column = *sensitive;
      c.sensitive_values.assign(t.sensitive_values().begin(), t.sensitive_values().end());
      c.max_confidence = t.max();
      out.push_back(std::move(c));
    }
    if (out.empty()) return absl::InvalidArgumentError("templates model without any template");
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported privacy model ", static_cast<int>(privacy.model())));
}

struct GroupStats {
  uint64_t size = 0;
  std::vector<uint64_t> sensitive;         // per constraint sensitive value
  std::map<std::string, uint64_t> values;  // ldiversity / tcloseness: raw sensitive value counts
};

// Groups the rows of `table` on each constraint's columns and checks the bounds. With
// `stop_at_first_violation` the statistics are incomplete when a violation is found.
PrivacyCheck Evaluate(const Prepared& p, const std::vector<Constraint>& constraints,
                      const Table& table, bool stop_at_first_violation) {
  const Table& raw = p.in->raw;
  PrivacyCheck check;
  check.satisfied = true;
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (const Constraint& c : constraints) {
    ++check.subsets_checked;
    std::map<std::vector<absl::string_view>, GroupStats> groups;
    std::vector<absl::string_view> key;
    for (size_t r = 0; r < table.size(); ++r) {
      key.clear();
      for (size_t col : c.columns) key.push_back(table[r][col]);
      GroupStats& g = groups[key];
      if (g.sensitive.empty()) g.sensitive.assign(c.sensitive_values.size(), 0);
      ++g.size;
      if (c.has_confidence) {
        for (size_t s = 0; s < c.sensitive_values.size(); ++s) {
          if (raw[r][c.sensitive_column] == c.sensitive_values[s]) ++g.sensitive[s];
        }
      }
      if (c.distribution.has_value()) ++g.values[raw[r][c.distribution->column]];
    }
    bool first_group = true;
    for (const auto& [key, g] : groups) {
      smallest = std::min(smallest, g.size);
      auto describe = [&] { return absl::StrCat("<", absl::StrJoin(key, ", "), ">"); };
      if (g.size < c.k && check.satisfied) {
        check.satisfied = false;
        check.violation = absl::StrCat(c.description, ": group ", describe(), " has ", g.size,
                                       " record(s) < K=", c.k);
      }
      if (c.distribution.has_value()) {
        std::vector<uint64_t> counts;
        for (const std::string& v : c.distribution->values) {
          auto it = g.values.find(v);
          counts.push_back(it == g.values.end() ? 0 : it->second);
        }
        std::string why;
        const bool holds = DistributionHolds(*c.distribution, counts, &check, first_group, &why);
        first_group = false;
        if (!holds && check.satisfied) {
          check.satisfied = false;
          check.violation = absl::StrCat(c.description, ": group ", describe(), " of ", g.size,
                                         " record(s) fails: ", why);
        }
      }
      for (size_t s = 0; s < g.sensitive.size(); ++s) {
        const double confidence = static_cast<double>(g.sensitive[s]) / g.size;
        check.largest_confidence = std::max(check.largest_confidence, confidence);
        if (confidence > c.max_confidence + kConfidenceTolerance && check.satisfied) {
          check.satisfied = false;
          check.violation =
              absl::StrCat(c.description, ": P(", p.in->header[c.sensitive_column], "=",
                           c.sensitive_values[s], " | ", describe(), ") = ", g.sensitive[s], "/",
                           g.size, " = ", confidence, " > C=", c.max_confidence);
        }
      }
      if (!check.satisfied && stop_at_first_violation) break;
    }
    if (!check.satisfied && stop_at_first_violation) break;
  }
  check.smallest_group = smallest == std::numeric_limits<uint64_t>::max() ? 0 : smallest;
  return check;
}

PrivacyCheck Invalid(const absl::Status& status) {
  PrivacyCheck check;
  check.satisfied = false;
  check.violation = absl::StrCat("invalid input: ", status.message());
  return check;
}

// ---------------------------------------------------------------------------------------------
// Truthfulness.

absl::Status CheckTruthfulPrepared(const Prepared& p) {
  const CheckerInput& in = *p.in;
  for (size_t r = 0; r < in.raw.size(); ++r) {
    for (size_t c = 0; c < in.header.size(); ++c) {
      const std::string& raw = in.raw[r][c];
      const std::string& out = in.anonymized[r][c];
      const std::string where = absl::StrCat("row ", r + 1, ", attribute ", Quote(in.header[c]));
      switch (p.kind[c]) {
        case Kind::kNonQid:
          if (raw != out) {
            return absl::FailedPreconditionError(
                absl::StrCat(where, " is not a QID attribute but its value changed from ",
                             Quote(raw), " to ", Quote(out)));
          }
          break;
        case Kind::kTaxonomy: {
          const auto& paths = p.taxonomy[c].paths;
          auto it = paths.find(raw);
          if (it == paths.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": raw value ", Quote(raw), " is missing from taxonomy_paths"));
          }
          if (std::find(it->second.begin(), it->second.end(), out) == it->second.end()) {
            return absl::FailedPreconditionError(
                absl::StrCat(where, ": output ", Quote(out), " does not generalize raw value ",
                             Quote(raw), " (path ", absl::StrJoin(it->second, " -> "), ")"));
          }
          break;
        }
        case Kind::kSuppression:
          if (out != raw && out != p.token) {
            return absl::FailedPreconditionError(
                absl::StrCat(where, ": output ", Quote(out), " is neither the raw value ",
                             Quote(raw), " nor the suppression token ", Quote(p.token)));
          }
          break;
        case Kind::kContinuous: {
          if (out == raw) break;
          auto interval = ParseInterval(out);
          if (!interval.ok()) {
            return absl::FailedPreconditionError(
                absl::StrCat(where, ": output ", Quote(out), " is neither the raw value ",
                             Quote(raw), " nor an interval (", interval.status().message(), ")"));
          }
          std::optional<double> value = ParseNumber(raw);
          if (!value.has_value()) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": raw value ", Quote(raw), " is not a number"));
          }
          if (!(interval->lo <= *value && *value < interval->hi)) {
            return absl::FailedPreconditionError(absl::StrCat(
                where, ": interval ", Quote(out), " does not contain raw value ", Quote(raw)));
          }
          break;
        }
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Maximality.

struct Refinement {
  std::string description;
  std::vector<size_t> rows;  // the records of the refined value (for `beneficial`)
  Table table;               // the anonymized table after the refinement
};

double Entropy(const std::map<std::string, uint64_t>& counts) {
  uint64_t total = 0;
  for (const auto& [cls, n] : counts) total += n;
  double h = 0;
  for (const auto& [cls, n] : counts) {
    if (n == 0) continue;
    const double q = static_cast<double>(n) / total;
    h -= q * std::log2(q);
  }
  return h;
}

// The threshold the engine would split an interval at (see the header): `values[i]` is the raw
// number of `rows[i]`.
double SplitThreshold(const Prepared& p, const std::vector<size_t>& rows,
                      const std::vector<double>& values) {
  const Table& raw = p.in->raw;
  const std::set<double> distinct(values.begin(), values.end());
  std::vector<double> candidates(std::next(distinct.begin()), distinct.end());
  std::vector<double> scores;  // higher is better
  for (double t : candidates) {
    std::map<std::string, uint64_t> all, left, right;
    uint64_t n_left = 0, n_right = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const bool is_left = values[i] < t;
      const std::string cls = p.class_column.has_value() ? raw[rows[i]][*p.class_column] : "";
      ++all[cls];
      ++(is_left ? left : right)[cls];
      ++(is_left ? n_left : n_right);
    }
    if (p.class_column.has_value()) {
      const double n = static_cast<double>(rows.size());
      scores.push_back(Entropy(all) - n_left / n * Entropy(left) - n_right / n * Entropy(right));
    } else {
      scores.push_back(-std::fabs(static_cast<double>(n_left) - static_cast<double>(n_right)));
    }
  }
  const double best = *std::max_element(scores.begin(), scores.end());
  const double tolerance = p.class_column.has_value() ? kGainTieTolerance : 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (scores[i] >= best - tolerance) return candidates[i];  // the smallest tied threshold
  }
  return candidates.back();  // unreachable
}

// Binned numeric split search (the spec's numeric_split, binned unless `exact`): the bins of one
// continuous column over the whole raw table, rebuilt here from the rule as documented in
// docs/engine.md — public equal-width cells of the range, merged left to right into bins of at
// least K records, thresholds only at bin starts.
struct Bins {
  std::vector<int> bin_of_row;          // per raw row; -1 for a non-numeric value
  std::vector<std::string> start_text;  // per bin: its threshold (the interval label's bound)
};

bool BinnedSearch(const JobSpec& spec) {
  return spec.numeric_split() == fedanon::v1::NUMERIC_SPLIT_BINNED ||
         (spec.numeric_split() == fedanon::v1::NUMERIC_SPLIT_UNSPECIFIED && !spec.has_sequential());
}

// The least bin size: the model's smallest anonymity threshold above 1 (LKC's K, templates' k),
// raised by min_split_bin; min_split_bin (default 20) for a model without one.
uint64_t LeastBinSize(const JobSpec& spec) {
  uint64_t k = 0;
  const auto& privacy = spec.privacy();
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    for (const auto& t : privacy.templates()) {
      if (t.k() > 1 && (k == 0 || t.k() < k)) k = t.k();
    }
  } else if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY) {
    // Its constraint's k: K raised to ceil(l) (every l-diverse group holds that many records).
    k = std::max<uint64_t>(privacy.k(), static_cast<uint64_t>(std::ceil(privacy.diversity())));
    if (k < 2) k = 0;
  } else if (privacy.k() > 1) {
    k = privacy.k();
  }
  if (k == 0) return spec.min_split_bin() > 0 ? spec.min_split_bin() : 20;
  return std::max<uint64_t>(k, spec.min_split_bin());
}

std::optional<Bins> BuildBins(const Prepared& p, size_t c) {
  const CheckerInput& in = *p.in;
  const fedanon::v1::Attribute* attr = nullptr;
  for (const auto& a : in.spec.attributes()) {
    if (a.name() == in.header[c]) attr = &a;
  }
  if (attr == nullptr) return std::nullopt;
  std::vector<std::optional<double>> x;
  for (const auto& row : in.raw) x.push_back(ParseNumber(row[c]));
  std::vector<double> numbers;
  for (const auto& v : x) {
    if (v.has_value()) numbers.push_back(*v);
  }
  if (numbers.empty()) return std::nullopt;
  const double min = *std::min_element(numbers.begin(), numbers.end());
  const double max = *std::max_element(numbers.begin(), numbers.end());
  const bool integral =
      std::all_of(numbers.begin(), numbers.end(), [](double v) { return v == std::floor(v); });
  const double lo = attr->range_size() == 2 ? attr->range(0) : min;
  const double hi = attr->range_size() == 2 ? attr->range(1)
                    : integral              ? max + 1
                                            : std::nextafter(max, HUGE_VAL);
  const int64_t cells = in.spec.numeric_cells() > 0 ? in.spec.numeric_cells() : 32;
  const double precision = attr->precision();
  // The public cell of every value, and the threshold a cell boundary stands for.
  std::vector<int64_t> cell_of_row(x.size(), -1);
  std::map<int64_t, double> smallest_in_cell;
  int64_t width = 1;
  if (precision > 0) {
    const auto grid = static_cast<int64_t>(std::ceil((hi - lo) / precision));
    width = (grid + cells - 1) / cells;
  }
  for (size_t r = 0; r < x.size(); ++r) {
    if (!x[r].has_value()) continue;
    int64_t cell = 0;
    if (precision > 0) {
      cell = static_cast<int64_t>(std::round((*x[r] - lo) / precision)) / width;
    } else {
      for (int64_t i = 1; i < cells; ++i) {
        if (*x[r] >= lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(cells)) {
          cell = i;
        } else {
          break;
        }
      }
    }
    cell_of_row[r] = cell;
    auto [it, added] = smallest_in_cell.emplace(cell, *x[r]);
    if (!added) it->second = std::min(it->second, *x[r]);
  }
  // Cells left to right into bins of at least K records; a short tail joins the last bin.
  const uint64_t least = LeastBinSize(in.spec);
  std::map<int64_t, uint64_t> per_cell;
  for (int64_t cell : cell_of_row) {
    if (cell >= 0) ++per_cell[cell];
  }
  std::vector<int64_t> bin_start;  // first cell of each bin
  std::map<int64_t, int> bin_of_cell;
  uint64_t open = 0;
  int64_t open_start = -1;
  std::vector<int64_t> open_cells;
  for (const auto& [cell, n] : per_cell) {  // empty cells change nothing
    if (open_start < 0) open_start = cell;
    open_cells.push_back(cell);
    open += n;
    if (open >= least) {
      for (int64_t oc : open_cells) bin_of_cell[oc] = static_cast<int>(bin_start.size());
      bin_start.push_back(open_start);
      open = 0;
      open_start = -1;
      open_cells.clear();
    }
  }
  if (bin_start.empty()) return Bins{std::vector<int>(x.size(), 0), {""}};  // one part, no split
  for (int64_t oc : open_cells) bin_of_cell[oc] = static_cast<int>(bin_start.size()) - 1;
  Bins bins;
  for (int64_t cell : cell_of_row) bins.bin_of_row.push_back(cell < 0 ? -1 : bin_of_cell[cell]);
  for (int64_t start : bin_start) {
    // On a grid the threshold is the cell boundary; otherwise the smallest value at or above it.
    bins.start_text.push_back(
        precision > 0 ? absl::StrCat(lo + static_cast<double>(start * width) * precision)
                      : absl::StrCat(smallest_in_cell.at(start)));
  }
  return bins;
}

// The bin boundary the engine would split an interval at: the records' bins are `bin[i]`; -1 when
// they lie in a single bin.
int BinnedSplitThreshold(const Prepared& p, const std::vector<size_t>& rows,
                         const std::vector<int>& bin) {
  const int first = *std::min_element(bin.begin(), bin.end());
  const int last = *std::max_element(bin.begin(), bin.end());
  const Table& raw = p.in->raw;
  int best = -1;
  double best_score = 0;
  for (int t = first + 1; t <= last; ++t) {
    std::map<std::string, uint64_t> all, left, right;
    uint64_t n_left = 0, n_right = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const bool is_left = bin[i] < t;
      const std::string cls = p.class_column.has_value() ? raw[rows[i]][*p.class_column] : "";
      ++all[cls];
      ++(is_left ? left : right)[cls];
      ++(is_left ? n_left : n_right);
    }
    double score;
    if (p.class_column.has_value()) {
      const double n = static_cast<double>(rows.size());
      score = Entropy(all) - n_left / n * Entropy(left) - n_right / n * Entropy(right);
    } else {
      score = -std::fabs(static_cast<double>(n_left) - static_cast<double>(n_right));
    }
    const double tolerance = p.class_column.has_value() ? kGainTieTolerance : 0.0;
    if (best < 0 || score > best_score + tolerance) {  // ties: the smaller threshold stays
      best = t;
      best_score = score;
    }
  }
  return best;
}

std::vector<Refinement> EnumerateRefinements(const Prepared& p) {
  const CheckerInput& in = *p.in;
  std::vector<Refinement> out;
  for (size_t c : p.qid) {
    const std::string& name = in.header[c];
    std::set<std::string> values;  // distinct output values, sorted
    for (const auto& row : in.anonymized) values.insert(row[c]);
    switch (p.kind[c]) {
      case Kind::kNonQid:
        break;
      case Kind::kTaxonomy: {
        const Taxonomy& tax = p.taxonomy[c];
        for (const std::string& v : values) {
          if (tax.inner.count(v) == 0) continue;  // a leaf
          Refinement ref;
          ref.table = in.anonymized;
          std::set<std::string> children;
          for (size_t r = 0; r < in.raw.size(); ++r) {
            if (in.anonymized[r][c] != v) continue;
            const std::vector<std::string>& path = tax.paths.at(in.raw[r][c]);
            const size_t at = std::find(path.begin(), path.end(), v) - path.begin();
            ref.table[r][c] = path[at - 1];  // at >= 1: v is an inner node on the raw path
            children.insert(path[at - 1]);
            ref.rows.push_back(r);
          }
          ref.description =
              absl::StrCat("specialize ", name, ": ", Quote(v), " -> {",
                           absl::StrJoin(children, ", "), "} on ", ref.rows.size(), " row(s)");
          out.push_back(std::move(ref));
        }
        break;
      }
      case Kind::kSuppression: {
        std::vector<size_t> suppressed;
        std::set<std::string> hidden;
        for (size_t r = 0; r < in.raw.size(); ++r) {
          if (in.anonymized[r][c] != p.token) continue;
          suppressed.push_back(r);
          if (in.raw[r][c] != p.token) hidden.insert(in.raw[r][c]);
        }
        for (const std::string& v : hidden) {
          Refinement ref;
          ref.table = in.anonymized;
          ref.rows = suppressed;
          uint64_t disclosed = 0;
          for (size_t r : suppressed) {
            if (in.raw[r][c] == v) ref.table[r][c] = v, ++disclosed;
          }
          ref.description =
              absl::StrCat("disclose ", name, ": ", Quote(v), " from ", Quote(p.token), " on ",
                           disclosed, " of ", suppressed.size(), " suppressed row(s)");
          out.push_back(std::move(ref));
        }
        break;
      }
      case Kind::kContinuous: {
        const std::optional<Bins> bins =
            BinnedSearch(in.spec) ? BuildBins(p, c) : std::optional<Bins>();
        for (const std::string& v : values) {
          if (bins.has_value()) {
            auto interval = ParseInterval(v);
            if (!interval.ok()) continue;
            std::vector<size_t> rows;
            std::vector<int> bin;
            for (size_t r = 0; r < in.raw.size(); ++r) {
              if (in.anonymized[r][c] != v || bins->bin_of_row[r] < 0) continue;
              rows.push_back(r);
              bin.push_back(bins->bin_of_row[r]);
            }
            if (rows.empty()) continue;
            const int t = BinnedSplitThreshold(p, rows, bin);
            if (t < 0) continue;
            const std::string& t_text = bins->start_text[t];
            const std::string left = absl::StrCat("[", interval->lo_text, "-", t_text, ")");
            const std::string right = absl::StrCat("[", t_text, "-", interval->hi_text, ")");
            Refinement ref;
            ref.table = in.anonymized;
            ref.rows = rows;
            uint64_t n_left = 0;
            for (size_t i = 0; i < rows.size(); ++i) {
              ref.table[rows[i]][c] = bin[i] < t ? left : right;
              n_left += bin[i] < t ? 1 : 0;
            }
            ref.description = absl::StrCat("split ", name, ": ", Quote(v), " at bin boundary ",
                                           t_text, " -> ", Quote(left), " (", n_left, " row(s)), ",
                                           Quote(right), " (", rows.size() - n_left, " row(s))");
            out.push_back(std::move(ref));
            continue;
          }
          auto interval = ParseInterval(v);
          if (!interval.ok()) continue;  // a disclosed raw value (truthfulness checked before)
          std::vector<size_t> rows;
          std::vector<double> numbers;
          std::vector<std::string> texts;
          bool numeric = true;
          for (size_t r = 0; r < in.raw.size(); ++r) {
            if (in.anonymized[r][c] != v) continue;
            std::optional<double> number = ParseNumber(in.raw[r][c]);
            if (!number.has_value()) numeric = false;
            rows.push_back(r);
            numbers.push_back(number.value_or(0));
            texts.push_back(in.raw[r][c]);
          }
          if (!numeric || std::set<double>(numbers.begin(), numbers.end()).size() < 2) continue;
          const double t = SplitThreshold(p, rows, numbers);
          const std::string& t_text =
              texts[std::find(numbers.begin(), numbers.end(), t) - numbers.begin()];
          const std::string left = absl::StrCat("[", interval->lo_text, "-", t_text, ")");
          const std::string right = absl::StrCat("[", t_text, "-", interval->hi_text, ")");
          Refinement ref;
          ref.table = in.anonymized;
          ref.rows = rows;
          uint64_t n_left = 0;
          for (size_t i = 0; i < rows.size(); ++i) {
            const bool is_left = numbers[i] < t;
            ref.table[rows[i]][c] = is_left ? left : right;
            n_left += is_left ? 1 : 0;
          }
          ref.description = absl::StrCat("split ", name, ": ", Quote(v), " at ", t_text, " -> ",
                                         Quote(left), " (", n_left, " row(s)), ", Quote(right),
                                         " (", rows.size() - n_left, " row(s))");
          out.push_back(std::move(ref));
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Interval> ParseInterval(std::string_view std_text) {
  // This Abseil build's absl::string_view is not std::string_view.
  const absl::string_view text(std_text.data(), std_text.size());
  auto error = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an interval [lo-hi): ", Quote(text), " (", why, ")"));
  };
  if (text.size() < 2 || text.front() != '[' || text.back() != ')') {
    return error("must start with '[' and end with ')'");
  }
  const absl::string_view inner = text.substr(1, text.size() - 2);
  // The separator is the first '-' (not at the start: that is the sign of lo) that splits the
  // text into two numbers; a '-' inside lo's exponent (1e-05) does not leave a number before it.
  for (size_t i = 1; i < inner.size(); ++i) {
    if (inner[i] != '-') continue;
    const absl::string_view lo = inner.substr(0, i);
    const absl::string_view hi = inner.substr(i + 1);
    std::optional<double> lo_value = ParseNumber(lo);
    std::optional<double> hi_value = ParseNumber(hi);
    if (lo_value.has_value() && hi_value.has_value()) {
      return Interval{*lo_value, *hi_value, std::string(lo), std::string(hi)};
    }
  }
  return error("expected two numbers separated by '-'");
}

double TransportationEmd(const std::vector<uint64_t>& counts, const std::vector<uint64_t>& overall,
                         const std::vector<std::vector<double>>& distance) {
  // Masses scaled to integers: value i supplies counts[i] * N, value j takes overall[j] * n (both
  // sum to n * N). Successive shortest paths (Bellman-Ford over the residual graph: source, the m
  // supplies, the m demands, sink) move flow until every supply is shipped; the cost over n * N
  // is the EMD.
  const size_t m = counts.size();
  uint64_t n = 0, big_n = 0;
  for (uint64_t x : counts) n += x;
  for (uint64_t x : overall) big_n += x;
  if (n == 0 || big_n == 0) return 0;
  const size_t nodes = 2 * m + 2, source = 2 * m, sink = 2 * m + 1;
  struct Edge {
    size_t to;
    int64_t cap;
    double cost;
    size_t rev;
  };
  std::vector<std::vector<Edge>> graph(nodes);
  auto add = [&](size_t a, size_t b, int64_t cap, double cost) {
    graph[a].push_back({b, cap, cost, graph[b].size()});
    graph[b].push_back({a, 0, -cost, graph[a].size() - 1});
  };
  for (size_t i = 0; i < m; ++i) {
    add(source, i, static_cast<int64_t>(counts[i] * big_n), 0);
    add(m + i, sink, static_cast<int64_t>(overall[i] * n), 0);
    for (size_t j = 0; j < m; ++j)
      add(i, m + j, std::numeric_limits<int64_t>::max() / 4, distance[i][j]);
  }
  long double cost = 0;
  int64_t left = static_cast<int64_t>(n * big_n);
  while (left > 0) {
    std::vector<double> dist(nodes, std::numeric_limits<double>::infinity());
    std::vector<std::pair<size_t, size_t>> via(nodes, {nodes, 0});  // (node, edge index)
    dist[source] = 0;
    for (size_t round = 0; round < nodes; ++round) {
      bool changed = false;
      for (size_t a = 0; a < nodes; ++a) {
        if (dist[a] == std::numeric_limits<double>::infinity()) continue;
        for (size_t e = 0; e < graph[a].size(); ++e) {
          const Edge& edge = graph[a][e];
          if (edge.cap > 0 && dist[a] + edge.cost < dist[edge.to] - 1e-15) {
            dist[edge.to] = dist[a] + edge.cost;
            via[edge.to] = {a, e};
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
    if (dist[sink] == std::numeric_limits<double>::infinity()) break;
    int64_t push = left;
    for (size_t v = sink; v != source; v = via[v].first) {
      push = std::min(push, graph[via[v].first][via[v].second].cap);
    }
    for (size_t v = sink; v != source; v = via[v].first) {
      Edge& edge = graph[via[v].first][via[v].second];
      edge.cap -= push;
      graph[v][edge.rev].cap += push;
    }
    cost += static_cast<long double>(push) * dist[sink];
    left -= push;
  }
  return static_cast<double>(cost /
                             (static_cast<long double>(n) * static_cast<long double>(big_n)));
}

PrivacyCheck CheckPrivacy(const CheckerInput& in) {
  auto prepared = Prepare(in);
  if (!prepared.ok()) return Invalid(prepared.status());
  auto constraints = BuildConstraints(*prepared);
  if (!constraints.ok()) return Invalid(constraints.status());
  return Evaluate(*prepared, *constraints, in.anonymized, /*stop_at_first_violation=*/false);
}

absl::Status CheckTruthful(const CheckerInput& in) {
  auto prepared = Prepare(in);
  if (!prepared.ok()) return prepared.status();
  return CheckTruthfulPrepared(*prepared);
}

absl::Status CheckMaximal(const CheckerInput& in) {
  auto prepared = Prepare(in);
  if (!prepared.ok()) return prepared.status();
  const Prepared& p = *prepared;
  auto constraints = BuildConstraints(p);
  if (!constraints.ok()) return constraints.status();
  if (in.spec.beneficial() && !p.class_column.has_value()) {
    return absl::InvalidArgumentError("beneficial is set but the spec has no class attribute");
  }
  if (absl::Status s = CheckTruthfulPrepared(p); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("maximality needs a truthful table: ", s.message()));
  }
  const PrivacyCheck current = Evaluate(p, *constraints, in.anonymized, false);
  if (!current.satisfied) {
    return absl::FailedPreconditionError(
        absl::StrCat("the anonymized table itself violates privacy: ", current.violation));
  }
  for (const Refinement& ref : EnumerateRefinements(p)) {
    if (in.spec.beneficial()) {
      std::set<std::string> classes;
      for (size_t r : ref.rows) classes.insert(in.raw[r][*p.class_column]);
      if (classes.size() <= 1) continue;
    }
    const PrivacyCheck after = Evaluate(p, *constraints, ref.table, true);
    if (after.satisfied) {
      return absl::FailedPreconditionError(
          absl::StrCat("not maximal: the refinement ", ref.description,
                       " keeps the privacy model satisfied (smallest group ", after.smallest_group,
                       ", largest confidence ", after.largest_confidence, ")"));
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Local recoding: covering semantics.

namespace {

// Whether released value `released` of column `col` may stand for raw value `raw`.
bool Covers(const Prepared& p, size_t col, const std::string& released, const std::string& raw) {
  if (released == raw) return true;
  switch (p.kind[col]) {
    case Kind::kTaxonomy: {
      const auto& paths = p.taxonomy[col].paths;
      auto it = paths.find(raw);
      return it != paths.end() &&
             std::find(it->second.begin(), it->second.end(), released) != it->second.end();
    }
    case Kind::kSuppression:
      return released == p.token;
    case Kind::kContinuous: {
      auto interval = ParseInterval(released);
      std::optional<double> value = ParseNumber(raw);
      return interval.ok() && value.has_value() && interval->lo <= *value && *value < interval->hi;
    }
    case Kind::kNonQid:
      return false;
  }
  return false;
}

// For each constraint and each combination of raw values on its columns occurring in the raw
// table: the released records covering it (all of them, by brute force over the distinct released
// combinations, with a bit set per raw value and column).
PrivacyCheck CoveringCheck(const Prepared& p, const std::vector<Constraint>& constraints) {
  const Table& raw = p.in->raw;
  const Table& out = p.in->anonymized;
  PrivacyCheck check;
  check.satisfied = true;
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  // Per column: (released, raw) -> covers, computed once.
  std::map<size_t, std::map<std::pair<std::string, std::string>, bool>> cache;
  auto covers = [&](size_t col, const std::string& released, const std::string& value) {
    auto& per_column = cache[col];
    auto [it, inserted] = per_column.emplace(std::make_pair(released, value), false);
    if (inserted) it->second = Covers(p, col, released, value);
    return it->second;
  };
  for (const Constraint& c : constraints) {
    ++check.subsets_checked;
    const size_t width = c.columns.size();
    // The distinct released combinations on the columns, with sizes and sensitive counts.
    std::map<std::vector<std::string>, size_t> index;
    std::vector<std::vector<std::string>> released;
    std::vector<uint64_t> size;
    std::vector<std::vector<uint64_t>> sensitive;
    std::set<std::vector<std::string>> known;  // raw combinations that occur
    for (size_t r = 0; r < out.size(); ++r) {
      std::vector<std::string> key, raw_key;
      for (size_t col : c.columns) {
        key.push_back(out[r][col]);
        raw_key.push_back(raw[r][col]);
      }
      known.insert(raw_key);
      auto [it, inserted] = index.emplace(key, released.size());
      if (inserted) {
        released.push_back(key);
        size.push_back(0);
        sensitive.emplace_back(c.sensitive_values.size(), 0);
      }
      ++size[it->second];
      if (c.has_confidence) {
        for (size_t s = 0; s < c.sensitive_values.size(); ++s) {
          if (raw[r][c.sensitive_column] == c.sensitive_values[s]) ++sensitive[it->second][s];
        }
      }
    }
    const size_t words = (released.size() + 63) / 64;
    std::vector<std::map<std::string, std::vector<uint64_t>>> bits(width);
    for (const auto& x : known) {
      for (size_t i = 0; i < width; ++i) {
        auto [it, inserted] = bits[i].emplace(x[i], std::vector<uint64_t>(words, 0));
        if (!inserted) continue;
        for (size_t j = 0; j < released.size(); ++j) {
          if (covers(c.columns[i], released[j][i], x[i]))
            it->second[j / 64] |= uint64_t{1} << j % 64;
        }
      }
    }
    std::vector<uint64_t> acc(words);
    for (const auto& x : known) {
      std::fill(acc.begin(), acc.end(), ~uint64_t{0});
      for (size_t i = 0; i < width; ++i) {
        const std::vector<uint64_t>& b = bits[i].at(x[i]);
        for (size_t w = 0; w < words; ++w) acc[w] &= b[w];
      }
      uint64_t n = 0;
      std::vector<uint64_t> s(c.sensitive_values.size(), 0);
      for (size_t j = 0; j < released.size(); ++j) {
        if (!(acc[j / 64] >> j % 64 & 1)) continue;
        n += size[j];
        for (size_t v = 0; v < s.size(); ++v) s[v] += sensitive[j][v];
      }
      smallest = std::min(smallest, n);
      auto describe = [&] { return absl::StrCat("raw <", absl::StrJoin(x, ", "), ">"); };
      if (n < c.k && check.satisfied) {
        check.satisfied = false;
        check.violation =
            absl::StrCat(c.description, " (covering): ", describe(), " is consistent with only ", n,
                         " released record(s) < K=", c.k);
      }
      for (size_t v = 0; v < s.size() && n > 0; ++v) {
        const double confidence = static_cast<double>(s[v]) / static_cast<double>(n);
        check.largest_confidence = std::max(check.largest_confidence, confidence);
        if (confidence > c.max_confidence + kConfidenceTolerance && check.satisfied) {
          check.satisfied = false;
          check.violation =
              absl::StrCat(c.description, " (covering): P(", p.in->header[c.sensitive_column], "=",
                           c.sensitive_values[v], " | ", describe(), ") = ", s[v], "/", n, " = ",
                           confidence, " > C=", c.max_confidence);
        }
      }
    }
  }
  check.smallest_group = smallest == std::numeric_limits<uint64_t>::max() ? 0 : smallest;
  return check;
}

}  // namespace

PrivacyCheck CheckLocalPrivacy(const CheckerInput& in) {
  if (in.spec.privacy().model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
      in.spec.privacy().model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    return Invalid(absl::InvalidArgumentError(
        "ldiversity and tcloseness run with global recoding only (no covering check)"));
  }
  auto prepared = Prepare(in);
  if (!prepared.ok()) return Invalid(prepared.status());
  auto constraints = BuildConstraints(*prepared);
  if (!constraints.ok()) return Invalid(constraints.status());
  const PrivacyCheck literal = Evaluate(*prepared, *constraints, in.anonymized, false);
  std::vector<Constraint> covering;
  const auto& privacy = in.spec.privacy();
  if (privacy.model() == fedanon::v1::PRIVACY_MODEL_LKC) {
    // Every size 1..m, whatever |QID| (BuildConstraints skips the smaller sizes above 8 QIDs).
    const Constraint& any = constraints->front();
    const size_t m = std::min<size_t>(privacy.l(), prepared->qid.size());
    for (size_t size = 1; size <= m; ++size) {
      std::vector<std::vector<size_t>> subsets;
      std::vector<size_t> current;
      Combinations(prepared->qid, size, 0, &current, &subsets);
      for (auto& subset : subsets) {
        Constraint c = any;
        c.description = absl::StrCat("LKC (L=", privacy.l(), ") subset ", Names(*prepared, subset));
        c.columns = std::move(subset);
        covering.push_back(std::move(c));
      }
    }
  } else {
    covering = *constraints;
  }
  const PrivacyCheck cover = CoveringCheck(*prepared, covering);
  PrivacyCheck check;
  check.satisfied = literal.satisfied && cover.satisfied;
  check.violation = !literal.satisfied ? literal.violation : cover.violation;
  check.smallest_group = std::min(literal.smallest_group, cover.smallest_group);
  check.largest_confidence = std::max(literal.largest_confidence, cover.largest_confidence);
  check.subsets_checked = literal.subsets_checked + cover.subsets_checked;
  return check;
}

}  // namespace fedanon::testing
