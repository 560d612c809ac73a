#include "common/table/unknown_values.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fedanon::table {

std::string FormatUnknownValues(const std::map<std::string, uint64_t>& unknown) {
  std::vector<std::pair<std::string, uint64_t>> sorted(unknown.begin(), unknown.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (size_t i = 0; i < sorted.size() && i < 20; ++i) {
    parts.push_back(absl::StrCat("'", sorted[i].first, "' (", sorted[i].second,
                                 sorted[i].second == 1 ? " record)" : " records)"));
  }
  if (sorted.size() > 20) parts.push_back(absl::StrCat("and ", sorted.size() - 20, " more"));
  return absl::StrJoin(parts, ", ");
}

}  // namespace fedanon::table
