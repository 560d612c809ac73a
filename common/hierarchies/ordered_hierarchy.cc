// Categories in a meaningful order (ARX's order-based builder): level 1 groups fanout[0]
// consecutive values, level i + 1 groups fanout[i] consecutive groups of level i; a group is
// labelled "first..last" by the values it spans.
#include <set>

#include "absl/strings/str_cat.h"
#include "common/base/string_views.h"
#include "common/hierarchies/hierarchy_kinds.h"

namespace fedanon::hierarchies::hierarchy_internal {

using fedanon::v1::OrderedHierarchy;

absl::Status ValidateOrdered(const OrderedHierarchy& d, std::string_view attribute) {
  if (d.order().empty()) return DefinitionError(attribute, "ordered needs the values in order");
  if (static_cast<size_t>(d.order_size()) > kMaxHierarchyLeaves) {
    return DefinitionError(attribute, base::Cat("more than ", kMaxHierarchyLeaves, " values"));
  }
  std::set<std::string> seen;
  for (const std::string& v : d.order()) {
    if (v.empty() || v.find(';') != std::string::npos || v == "*") {
      return DefinitionError(attribute,
                             base::Cat("ordered value '", v, "' is empty, '*' or contains ';'"));
    }
    if (!seen.insert(v).second) {
      return DefinitionError(attribute, base::Cat("ordered value '", v, "' appears twice"));
    }
  }
  if (d.fanout().empty()) return DefinitionError(attribute, "ordered needs a fanout per level");
  for (uint32_t f : d.fanout()) {
    if (f < 2) return DefinitionError(attribute, "every fanout groups at least 2");
  }
  return absl::OkStatus();
}

absl::StatusOr<HierarchyRows> OrderedRows(const OrderedHierarchy& d, const ValueList* values,
                                          std::string_view attribute) {
  if (absl::Status st = ValidateOrdered(d, attribute); !st.ok()) return st;
  if (values != nullptr) {
    const std::set<std::string> known(d.order().begin(), d.order().end());
    for (const auto& [value, where] : values->values) {
      if (!known.contains(value)) {
        return ValueError(where, base::Cat("value '", value, "' is not in the ordered list of '",
                                           attribute, "'"));
      }
    }
  }
  const int64_t n = d.order_size();
  HierarchyRows rows;
  rows.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::string> row = {d.order(static_cast<int>(i))};
    int64_t span = 1;
    for (uint32_t f : d.fanout()) {
      span *= f;
      const int64_t first = i / span * span;
      const int64_t last = std::min(n, first + span) - 1;
      row.push_back(first == last ? d.order(static_cast<int>(first))
                                  : base::Cat(d.order(static_cast<int>(first)), "..",
                                              d.order(static_cast<int>(last))));
      if (span >= n) break;  // one group holds everything: the root comes next
    }
    row.push_back("*");
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fedanon::hierarchies::hierarchy_internal
