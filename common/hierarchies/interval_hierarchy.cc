// Intervals (ARX's interval-based builder): level 1 cuts [min, max) into intervals of `width`
// (the last one ends at max), level i + 1 joins fanout[i] consecutive intervals of level i.
#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/string_views.h"
#include "common/hierarchies/hierarchy_kinds.h"

namespace fedanon::hierarchies::hierarchy_internal {
namespace {

using fedanon::v1::IntervalHierarchy;

// Number of level-1 intervals.
int64_t IntervalCount(const IntervalHierarchy& d) {
  return static_cast<int64_t>(std::ceil((d.max() - d.min()) / d.width() - 1e-9));
}

// The k-th boundary min + k * width as labels write it (15 significant digits), so that a value
// is placed by the boundaries the labels show: 0.3 lies in [0.3-0.4) although 3 * 0.1 is a
// little more than 0.3 in binary.
double Boundary(const IntervalHierarchy& d, int64_t k) {
  const double exact = std::min(d.max(), d.min() + static_cast<double>(k) * d.width());
  double shown = exact;
  return absl::SimpleAtod(FormatHierarchyNumber(exact), &shown) ? shown : exact;
}

std::string Label(const IntervalHierarchy& d, int64_t first, int64_t span) {
  return base::Cat("[", FormatHierarchyNumber(Boundary(d, first)), "-",
                   FormatHierarchyNumber(Boundary(d, first + span)), ")");
}

// The level-1 interval holding x (min <= x < max).
int64_t IntervalOf(const IntervalHierarchy& d, double x, int64_t count) {
  int64_t k = static_cast<int64_t>(std::floor((x - d.min()) / d.width()));
  k = std::clamp<int64_t>(k, 0, count - 1);
  while (k > 0 && x < Boundary(d, k)) --k;
  while (k + 1 < count && x >= Boundary(d, k + 1)) ++k;
  return k;
}

}  // namespace

absl::Status ValidateInterval(const IntervalHierarchy& d, std::string_view attribute) {
  if (!std::isfinite(d.min()) || !std::isfinite(d.max()) || !(d.min() < d.max())) {
    return DefinitionError(attribute, "interval needs min < max");
  }
  if (!(d.width() > 0)) return DefinitionError(attribute, "interval needs a width > 0");
  if ((d.max() - d.min()) / d.width() > static_cast<double>(kMaxHierarchyLeaves)) {
    return DefinitionError(
        attribute, base::Cat("more than ", kMaxHierarchyLeaves, " intervals of width ", d.width()));
  }
  for (uint32_t f : d.fanout()) {
    if (f < 2) return DefinitionError(attribute, "every fanout joins at least 2 intervals");
  }
  if (d.step() < 0 || !std::isfinite(d.step())) {
    return DefinitionError(attribute, "interval step must be > 0 (or left out)");
  }
  if (d.step() > 0 && (d.max() - d.min()) / d.step() > static_cast<double>(kMaxHierarchyLeaves)) {
    return DefinitionError(
        attribute, base::Cat("more than ", kMaxHierarchyLeaves, " leaves of step ", d.step()));
  }
  return absl::OkStatus();
}

absl::StatusOr<HierarchyRows> IntervalRows(const IntervalHierarchy& d, const ValueList* values,
                                           std::string_view attribute) {
  if (absl::Status st = ValidateInterval(d, attribute); !st.ok()) return st;
  // The leaves as numbers with their labels, ascending.
  std::vector<std::pair<double, std::string>> leaves;
  std::vector<std::string> grid;
  if (d.step() > 0) {
    for (int64_t i = 0;; ++i) {
      const double x = d.min() + static_cast<double>(i) * d.step();
      if (x >= d.max()) break;
      grid.push_back(FormatHierarchyNumber(x));
      leaves.emplace_back(x, grid.back());
    }
  }
  if (values != nullptr) {
    std::vector<std::pair<double, std::string>> listed;
    for (const auto& [value, where] : values->values) {
      double x = 0;
      if (!absl::SimpleAtod(value, &x) || !std::isfinite(x)) {
        return ValueError(where, base::Cat("'", value, "' is not a number"));
      }
      if (x < d.min() || x >= d.max()) {
        return ValueError(where, base::Cat("value '", value, "' lies outside every interval [",
                                           FormatHierarchyNumber(d.min()), ", ",
                                           FormatHierarchyNumber(d.max()), ")"));
      }
      if (d.step() > 0) {
        const double i = std::round((x - d.min()) / d.step());
        const std::string expected = FormatHierarchyNumber(d.min() + i * d.step());
        if (std::abs(d.min() + i * d.step() - x) > 1e-9 * std::max(1.0, std::abs(x)) ||
            expected != value) {
          return ValueError(where, base::Cat("value '", value, "' is not one of the leaves ",
                                             FormatHierarchyNumber(d.min()), " + i * ",
                                             FormatHierarchyNumber(d.step()),
                                             " as they are written (nearest: '", expected, "')"));
        }
      }
      listed.emplace_back(x, value);
    }
    if (d.step() <= 0) {
      std::stable_sort(listed.begin(), listed.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      leaves = std::move(listed);
    }
  }
  if (leaves.empty()) {
    return DefinitionError(attribute,
                           "interval has no leaves: give a step, a values file or a table");
  }
  const int64_t count = IntervalCount(d);
  HierarchyRows rows;
  rows.reserve(leaves.size());
  for (const auto& [x, label] : leaves) {
    std::vector<std::string> row = {label};
    const int64_t k = IntervalOf(d, x, count);
    int64_t span = 1;
    row.push_back(Label(d, k, span));
    for (uint32_t f : d.fanout()) {
      span *= f;
      row.push_back(Label(d, (k / span) * span, span));
    }
    row.push_back("*");
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fedanon::hierarchies::hierarchy_internal
